"""TokenClassifier: a packed token-classification (NER) model in, entity spans out.

Each entity carries its label, a score (the mean of its tokens' top softmax probability, as
Hugging Face's ``aggregation_strategy="simple"``), and ``start``/``end`` character offsets into
the ORIGINAL string, so ``text[start:end] == entity.text`` whatever the tokenizer normalised
(case, accents, full-width forms stay as typed). Decoding (BIO, BIOES/BILOU, IO) is
``albert_edge.tasks.entities``, the same code the quantize drift metric judges.

Long texts run in overlapping windows of ``max_seq_len - 2`` tokens that advance by
``window - stride`` tokens; each token takes its logits from the window in which it sits
farthest from an edge (most context on both sides), then the whole text is decoded once, so
an entity crossing a window boundary comes out whole.

Both tokenizers give offsets (``tokenize_with_offsets``): WordPiece (BERT, albert_zh) and
SentencePiece (Google ALBERT), each tested against Hugging Face's offset mapping.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from albert_edge.errors import BackendError, ModelFileError, TokenizerError
from albert_edge.runtime.classifier import open_checked, softmax
from albert_edge.runtime.pack import ModelPack, map_model_file, read_pack_bytes
from albert_edge.tasks import TokenClassification
from albert_edge.tasks.entities import decode_tags
from albert_edge.tasks.qa_spans import window_starts  # one window cutter for NER and QA


@dataclass(frozen=True)
class Entity:
    """One entity: ``text == original[start:end]``; ``tokens`` is [first, last + 1) in token order."""

    label: str
    score: float
    start: int
    end: int
    text: str
    tokens: tuple[int, int]


@dataclass(frozen=True)
class TokenTag:
    """One token's prediction: the WordPiece token, its span in the original text, tag and probability."""

    token: str
    start: int
    end: int
    tag: str
    score: float


def merge_windows(n: int, starts: Sequence[int], window_logits: Sequence[np.ndarray]) -> np.ndarray:
    """[n, C] logits: each token from the window where it is farthest from either edge."""
    width = window_logits[0].shape[-1]
    out = np.zeros((n, width), np.float32)
    best = np.full(n, -1)
    for start, logits in zip(starts, window_logits):
        length = logits.shape[0]
        local = np.arange(length)
        margin = np.minimum(local, length - 1 - local)
        idx = start + local
        take = margin > best[idx]
        out[idx[take]] = logits[take]
        best[idx[take]] = margin[take]
    return out


class TokenClassifier:
    """Named-entity recognition with a packed .tflite or .onnx token-classification model."""

    def __init__(self, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                 pool_size: int = 1, xnnpack: bool = True, stride: int | None = None) -> None:
        self.source = source
        self.pack: ModelPack = read_pack_bytes(data, source)
        if not isinstance(self.pack.task_object(source), TokenClassification) or not self.pack.labels:
            raise ModelFileError(f"{source}: pack task is {self.pack.task!r}; TokenClassifier needs a "
                                 f"{TokenClassification.name} model with labels")
        self.labels: tuple[str, ...] = self.pack.labels
        self.max_seq_len = self.pack.max_seq_len
        if self.max_seq_len < 3:
            raise ModelFileError(f"{source}: max_seq_len {self.max_seq_len} leaves no room for tokens")
        self.window = self.max_seq_len - 2  # [CLS] window [SEP]
        self.stride = min(self.window // 4, 32) if stride is None else stride
        if not isinstance(self.stride, int) or not 0 <= self.stride < self.window:
            raise BackendError(f"stride {stride!r}: expected an int in [0, {self.window}) for windows of "
                               f"{self.window} tokens (max_seq_len {self.max_seq_len} minus [CLS] and [SEP]); "
                               f"without stride the default is {min(self.window // 4, 32)}")
        self.tokenizer, self._pool = open_checked(data, source, self.pack, backend, num_threads, xnnpack, pool_size)
        first = self._pool.first
        self.backend_name = first.name
        if "logits" not in first.output_names:
            raise ModelFileError(f"{source}: the graph has no output 'logits' (it has {list(first.output_names)})")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], num_threads: int | None = None, backend: str = "auto",
                  pool_size: int = 1, xnnpack: bool = True, stride: int | None = None) -> TokenClassifier:
        """Load a packed ``.tflite`` or ``.onnx`` (kind detected from the bytes, not the suffix)."""
        return cls(map_model_file(path), str(path), num_threads, backend, pool_size, xnnpack, stride)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                   pool_size: int = 1, xnnpack: bool = True, stride: int | None = None) -> TokenClassifier:
        """Load a packed model already in memory (e.g. read from an app bundle)."""
        return cls(bytes(data), source, num_threads, backend, pool_size, xnnpack, stride)

    def _run_window(self, ids: Sequence[int]) -> np.ndarray:
        """[len(ids), C] logits of one window (its [CLS]/[SEP] rows dropped)."""
        row = np.asarray([self.tokenizer.cls_id, *ids, self.tokenizer.sep_id], np.int32)[None]
        inputs = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
        logits = np.asarray(self._pool.run(inputs)["logits"], np.float32)
        if logits.shape != (1, row.shape[1], len(self.labels)):
            raise ModelFileError(f"{self.source}: output 'logits' has shape {list(logits.shape)}, expected "
                                 f"[1, {row.shape[1]}, {len(self.labels)}]")
        return logits[0, 1:-1]

    def token_logits(self, text: str) -> tuple[list[tuple[str, int, int]], np.ndarray]:
        """(token, start, end) per token of ``text`` and their merged logits [tokens, labels]."""
        if not isinstance(text, str):
            raise TokenizerError(f"text: expected a string, got {type(text).__name__}")
        tokens = self.tokenizer.tokenize_with_offsets(text)
        if not tokens:
            return [], np.zeros((0, len(self.labels)), np.float32)
        ids = self.tokenizer.convert_tokens_to_ids([t for t, _, _ in tokens])
        starts = window_starts(len(ids), self.window, self.stride)
        logits = [self._run_window(ids[s:s + self.window]) for s in starts]
        return tokens, merge_windows(len(ids), starts, logits)

    def tag(self, text: str) -> list[TokenTag]:
        """Each token with its span in ``text``, its tag and that tag's probability."""
        return self.tags_from_logits(*self.token_logits(text))

    def tags_from_logits(self, tokens: Sequence[tuple[str, int, int]], logits: np.ndarray) -> list[TokenTag]:
        """``tag``'s answer from ``token_logits``' output (for callers that also use the logits)."""
        probs = softmax(logits) if len(tokens) else logits
        top = probs.argmax(-1) if len(tokens) else []
        return [TokenTag(tok, a, b, self.labels[k], float(probs[i, k])) for i, ((tok, a, b), k) in enumerate(zip(tokens, top))]

    def predict(self, text: str) -> list[Entity]:
        """Entities of ``text`` in order, with character offsets into ``text`` itself."""
        return self.entities(text, self.tag(text))

    @staticmethod
    def entities(text: str, tags: Sequence[TokenTag]) -> list[Entity]:
        """Decode ``tag(text)``'s output into entities (for callers that want both without a second run)."""
        out = []
        for first, last, label in decode_tags([t.tag for t in tags]):
            start, end = tags[first].start, tags[last - 1].end
            score = float(np.mean([t.score for t in tags[first:last]]))
            out.append(Entity(label, score, start, end, text[start:end], (first, last)))
        return out

    def __repr__(self) -> str:
        return (f"TokenClassifier({self.source!r}, backend={self.backend_name!r}, labels={list(self.labels)}, "
                f"max_seq_len={self.max_seq_len}, stride={self.stride}, variant={self.pack.variant!r})")


__all__ = ["Entity", "TokenClassifier", "TokenTag", "merge_windows", "window_starts"]
