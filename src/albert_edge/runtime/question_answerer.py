"""QuestionAnswerer: a packed extractive-QA model in, the answer span of a context out.

The question and the context are encoded as ``[CLS] question [SEP] context [SEP]``; a context
longer than the model's ``max_seq_len`` runs in overlapping windows (``stride`` tokens shared,
default half a window, at most 128). The answer is the span with the largest start + end logit
over all windows, starting in a window where its first token is most central, ending at or after
its start, inside the context, at most ``max_answer_tokens`` long (``tasks.qa_spans``: the same
code the quantize drift metric judges). ``start``/``end`` are character offsets into the
ORIGINAL context, so ``context[start:end] == answer.text`` whatever the tokenizer normalised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from albert_edge.errors import BackendError, ModelFileError, TokenizerError
from albert_edge.runtime.classifier import open_checked
from albert_edge.runtime.pack import ModelPack, map_model_file, read_pack_bytes
from albert_edge.tasks import QuestionAnswering
from albert_edge.tasks.qa_spans import (
    MAX_ANSWER_TOKENS,
    MAX_QUESTION_TOKENS,
    QAWindow,
    best_span,
    encode_windows,
    question_ids,
    span_margin,
    span_text,
    window_inputs,
)


@dataclass(frozen=True)
class Answer:
    """The answer: ``text == context[start:end]``; ``tokens`` is [first, last] context token (inclusive).

    ``score`` is p(start) * p(end) within the answer's window; ``windows`` how many were run.
    An empty ``text`` (start == end == 0) means the context had no tokens to answer from.
    """

    text: str
    start: int
    end: int
    score: float
    tokens: tuple[int, int]
    windows: int


class QuestionAnswerer:
    """Extractive question answering with a packed .tflite or .onnx model."""

    def __init__(self, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                 pool_size: int = 1, xnnpack: bool = True, stride: int | None = None,
                 max_answer_tokens: int = MAX_ANSWER_TOKENS, max_question_tokens: int | None = None) -> None:
        self.source = source
        self.pack: ModelPack = read_pack_bytes(data, source)
        if not isinstance(self.pack.task_object(source), QuestionAnswering):
            raise ModelFileError(f"{source}: pack task is {self.pack.task!r}; QuestionAnswerer needs a "
                                 f"{QuestionAnswering.name} model")
        self.max_seq_len = self.pack.max_seq_len
        if self.max_seq_len < 5:
            raise ModelFileError(f"{source}: max_seq_len {self.max_seq_len} leaves no room for a question and context")
        # Half the sequence at most, so a long question never leaves less context than question.
        self.max_question_tokens = (min(MAX_QUESTION_TOKENS, (self.max_seq_len - 3) // 2)
                                    if max_question_tokens is None else max_question_tokens)
        for name, value, low in (("max_answer_tokens", max_answer_tokens, 1),
                                 ("max_question_tokens", self.max_question_tokens, 1), ("stride", stride, 0)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < low):
                raise BackendError(f"{name} {value!r}: expected an int >= {low}")
        self.stride = stride
        self.max_answer_tokens = max_answer_tokens
        self.tokenizer, self._pool = open_checked(data, source, self.pack, backend, num_threads, xnnpack, pool_size)
        self._check_context_room(stride)
        first = self._pool.first
        self.backend_name = first.name
        missing = [name for name in ("start_logits", "end_logits") if name not in first.output_names]
        if missing:
            raise ModelFileError(f"{source}: the graph has no output {missing[0]!r} (it has {list(first.output_names)})")

    def _check_context_room(self, stride: int | None) -> None:
        """The longest question must leave context, and ``stride`` must be shorter than that context window.

        The window is ``max_seq_len`` minus [CLS], the question, its separators (RoBERTa's and XLM-R's
        ``</s></s>`` are two: the tokenizer's ``pair_separators``) and the last separator, as
        ``encode_windows`` cuts it; albert-core's ``QuestionAnswerer`` makes the same two checks.
        """
        separators = getattr(self.tokenizer, "pair_separators", 1)
        shortest_window = self.max_seq_len - 2 - separators - self.max_question_tokens
        if shortest_window < 1:
            raise BackendError(f"max_question_tokens {self.max_question_tokens}: leaves no context in "
                               f"max_seq_len {self.max_seq_len}")
        if stride is not None and stride >= shortest_window:
            # Refused as the token classifier refuses it, not clamped per question without a word.
            raise BackendError(f"stride {stride}: expected an int in [0, {shortest_window}): the context window is "
                               f"{shortest_window} tokens after a {self.max_question_tokens}-token question "
                               f"(max_seq_len {self.max_seq_len})")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], num_threads: int | None = None, backend: str = "auto",
                  pool_size: int = 1, xnnpack: bool = True, stride: int | None = None,
                  max_answer_tokens: int = MAX_ANSWER_TOKENS) -> QuestionAnswerer:
        """Load a packed ``.tflite`` or ``.onnx`` (kind detected from the bytes, not the suffix)."""
        return cls(map_model_file(path), str(path), num_threads, backend, pool_size, xnnpack, stride,
                   max_answer_tokens)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                   pool_size: int = 1, xnnpack: bool = True, stride: int | None = None,
                   max_answer_tokens: int = MAX_ANSWER_TOKENS) -> QuestionAnswerer:
        """Load a packed model already in memory (e.g. read from an app bundle)."""
        return cls(bytes(data), source, num_threads, backend, pool_size, xnnpack, stride, max_answer_tokens)

    def windows(self, question: str, context: str) -> tuple[list[tuple[str, int, int]], list[QAWindow]]:
        """The context's (token, start, end) list and the model inputs covering it."""
        for value, name in ((question, "question"), (context, "context")):
            if not isinstance(value, str):
                raise TokenizerError(f"{name}: expected a string, got {type(value).__name__}")
        q = question_ids(self.tokenizer, question, self.max_question_tokens)
        if not q:
            raise TokenizerError("question: has no tokens")
        tokens = self.tokenizer.tokenize_with_offsets(context)
        return tokens, encode_windows(self.tokenizer, q, tokens, self.max_seq_len, self.stride)

    def _run(self, w: QAWindow) -> tuple[np.ndarray, np.ndarray]:
        out = self._pool.run(window_inputs(w))
        start, end = (np.asarray(out[name], np.float32) for name in ("start_logits", "end_logits"))
        want = (1, len(w.input_ids))
        if start.shape != want or end.shape != want:
            raise ModelFileError(f"{self.source}: outputs start_logits/end_logits have shapes {list(start.shape)}/"
                                 f"{list(end.shape)}, expected {list(want)}")
        if not (np.isfinite(start).all() and np.isfinite(end).all()):
            raise ModelFileError(f"{self.source}: the model produced non-finite logits; its weights are corrupt")
        return start[0], end[0]

    def answer(self, question: str, context: str) -> Answer:
        """The best answer to ``question`` in ``context``, with offsets into ``context`` as given."""
        return self._decode(context, *self._run_windows(question, context))

    def answer_with_margin(self, question: str, context: str) -> tuple[Answer, float]:
        """``answer`` and how sure the model is of it, from the same run: the best minus the second-best
        start + end logit over every allowed span of every window (inf with a single candidate, 0.0
        without context tokens).

        An app can gate answers on the margin; the bench counts how many answers a quantized variant
        changed where the baseline's margin was a near tie (rounding noise rather than damage).
        """
        tokens, windows, logits = self._run_windows(question, context)
        margin = span_margin(logits, windows, self.max_answer_tokens) if tokens else 0.0
        return self._decode(context, tokens, windows, logits), margin

    def _run_windows(self, question: str, context: str) -> tuple[list[tuple[str, int, int]], list[QAWindow],
                                                                 list[tuple[np.ndarray, np.ndarray]]]:
        """The context's tokens, its windows and each window's (start, end) logits (none without tokens)."""
        tokens, windows = self.windows(question, context)
        return tokens, windows, ([self._run(w) for w in windows] if tokens else [])

    def _decode(self, context: str, tokens: list[tuple[str, int, int]], windows: list[QAWindow],
                logits: list[tuple[np.ndarray, np.ndarray]]) -> Answer:
        if not tokens:
            return Answer("", 0, 0, 0.0, (-1, -1), 0)
        span = best_span(logits, windows, self.max_answer_tokens)
        text, start, end = span_text(context, tokens, span)
        if span is None:
            return Answer("", 0, 0, 0.0, (-1, -1), len(windows))
        return Answer(text, start, end, span.score, (span.start, span.end), len(windows))

    def __repr__(self) -> str:
        return (f"QuestionAnswerer({self.source!r}, backend={self.backend_name!r}, max_seq_len={self.max_seq_len}, "
                f"stride={self.stride}, max_answer_tokens={self.max_answer_tokens}, variant={self.pack.variant!r})")


__all__ = ["Answer", "QuestionAnswerer"]
