"""Golden file for the Android core's question-answering decoding (``QaSpans.java``).

The phone runs the same windows, max-context rule and best-span search as ``tasks.qa_spans``;
this module writes ``golden_qa_spans.jsonl`` so a JVM test proves the Java code picks the same
windows, builds the same inputs, finds the same span and cuts the same answer (character offsets
are code points, as Python's; Java converts them with ``offsetByCodePoints``). Inputs are real
review texts tokenized with the test vocab, alone and run together into long contexts, one with
astral characters, and an empty one; the logits are seeded float32 noise with a planted answer.

Regenerate with ``python -m albert_edge.android.qa`` (tests/test_android_qa_golden.py checks the
committed file equals a fresh regeneration).

``golden_qa.jsonl`` goes end to end from strings on a real QA model file (``qa_model.tflite``,
written by ``tests/support/android_fixtures.py --qa``): question and context as typed, the tokens with
offsets, the windows, LiteRT's start/end logits per window, and the answer, checked against
``QuestionAnswerer`` before it is written. ``QuestionAnswerer.java`` must tokenize, cut windows and
answer identically from those logits; ``albert-edge android-assets`` writes the same file for the
app when given a QA model.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.outputs.atomic import write_bytes_atomic
from albert_edge.tasks.qa_spans import (
    MAX_ANSWER_TOKENS,
    best_span,
    encode_windows,
    span_text,
)
from albert_edge.tokenizer import WordPieceTokenizer

GOLDEN_QA = "golden_qa_spans.jsonl"
RESOURCES = Path(__file__).resolve().parents[3] / "android_demo" / "albert-core" / "src" / "test" / "resources"
_SEED = 20261203


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _contexts(sentences: Sequence[str]) -> list[str]:
    """Single reviews, runs of 2-3 reviews (several windows), astral characters, and an empty text."""
    out = [s for s in sentences if len(s) < 120][:16]
    for k in range(6):
        out.append("".join([s for s in sentences if len(s) < 100][5 * k:][: 2 + k % 2]))
    out.append("房间很大😀，早餐🍜也不错，𠀋字和𝐀𝐁也在，服务员很热情。" * 3)
    out.append("")
    return out


def qa_span_records(vocab_text: str, sentences: Sequence[str]) -> list[dict[str, Any]]:
    """One record per case: inputs (context, its tokens, the question ids, settings, window logits)
    and what the decoding must give (windows with their inputs, span, answer, offsets, score)."""
    tokenizer = WordPieceTokenizer.from_vocab_text(vocab_text, do_lower_case=True, source="vocab.txt")
    rng = random.Random(_SEED)
    settings = [(32, None, MAX_ANSWER_TOKENS), (40, 4, MAX_ANSWER_TOKENS), (64, None, 5), (48, 8, 3), (128, None, 30)]
    records = []
    for i, context in enumerate(_contexts(sentences)):
        max_seq_len, stride, max_answer = settings[i % len(settings)]
        question = [rng.randrange(5, tokenizer.vocab_size) for _ in range(rng.randint(2, 9))]
        tokens = tokenizer.tokenize_with_offsets(context)
        windows = encode_windows(tokenizer, question, tokens, max_seq_len, stride)
        logits = []
        plant = rng.randrange(len(tokens)) if tokens else -1
        for w in windows:
            start = [_float32(rng.gauss(0.0, 2.0)) for _ in w.input_ids]
            end = [_float32(rng.gauss(0.0, 2.0)) for _ in w.input_ids]
            if w.first <= plant < w.first + w.length:  # a clear answer, so spans are not all noise
                start[w.offset + plant - w.first] = _float32(start[w.offset + plant - w.first] + 6.0)
                last = min(plant + 2, w.first + w.length - 1)
                end[w.offset + last - w.first] = _float32(end[w.offset + last - w.first] + 6.0)
            logits.append([start, end])
        span = best_span([(s, e) for s, e in logits], windows, max_answer)
        text, begin, finish = span_text(context, tokens, span)
        records.append({
            "context": context, "question_ids": question, "max_seq_len": max_seq_len, "stride": stride,
            "max_answer_tokens": max_answer, "cls_id": tokenizer.cls_id, "sep_id": tokenizer.sep_id,
            "context_ids": tokenizer.convert_tokens_to_ids([t for t, _, _ in tokens]),
            "token_offsets": [[a, b] for _, a, b in tokens],
            "windows": [{"first": w.first, "length": w.length, "offset": w.offset, "input_ids": list(w.input_ids),
                         "token_type_ids": list(w.token_type_ids),
                         "max_context": [bool(v) for v in w.max_context]} for w in windows],
            "logits": logits,
            "span": None if span is None else [span.start, span.end, span.window],
            "answer": text, "start": begin, "end": finish, "score": 0.0 if span is None else span.score,
        })
    return records


def render_qa_goldens(vocab_text: str, sentences: Sequence[str]) -> bytes:
    from albert_edge.android.golden_inputs import render_jsonl

    return render_jsonl(qa_span_records(vocab_text, sentences)).encode("utf-8")


def write_qa_goldens(resources_dir: str | Path = RESOURCES) -> Path:
    """Regenerate ``golden_qa_spans.jsonl`` from the committed vocab.txt and golden_sentences.txt."""
    from albert_edge.android.golden_inputs import SENTENCES_FILE, VOCAB_FILE, read_sentences

    out = Path(resources_dir)
    vocab_text = (out / VOCAB_FILE).read_text(encoding="utf-8")
    return write_bytes_atomic(out / GOLDEN_QA, render_qa_goldens(vocab_text, read_sentences(out / SENTENCES_FILE)))


if __name__ == "__main__":
    print(write_qa_goldens())


# --------------------------------------------------------------------------- a real QA model

GOLDEN_QA_MODEL = "golden_qa.jsonl"
QA_MODEL = "qa_model.tflite"
#: The same for a SentencePiece ALBERT (the Java SentencePiece offsets path, end to end).
GOLDEN_QA_MODEL_SP = "golden_qa_sp.jsonl"
QA_MODEL_SP = "qa_model_sp.tflite"

# Asset golden cases when none are given: the questions the test QA model was trained on, short and
# long contexts, text typed in capitals and with emoji (offsets), Chinese, and an empty context.
DEFAULT_QA_CASES: tuple[tuple[str, str], ...] = (
    ("Which city is Grace Lee linked to?", "Grace Lee moved to Berlin last year."),
    ("Which company is Henry Adams linked to?", "Henry Adams left Initech and joined Hooli."),
    ("which CITY is grace lee linked to?", "  GRACE   LEE moved to   BERLIN last year. 😀"),
    ("李娜和哪个城市有关？", "李娜在成都的华为工作。"),
    ("张伟和哪家公司有关？", "昨天王芳从上海飞往深圳。张伟在北京的腾讯工作。"),
    ("Which city is Irene Walker linked to?",
     ("We visited Rome with Irene Walker in the spring. Bob Jones works for Acme Corp in Berlin. "
      "Grace Lee met the chief of Globex in London. Henry Adams left Initech and joined Hooli in Oslo.")),
    ("Which city is Grace Lee linked to?", ""),
)
# Questions cycled over the contexts of a sentences file given to android-assets.
_ASSET_QUESTIONS = ("What is this about?", "这是关于什么的？")


class _SpanModel:
    """The interpreter of record (LiteRT) on one QA file: raw start/end logits of one window."""

    def __init__(self, data: bytes, pack: Any, source: str) -> None:
        from albert_edge.errors import ModelFileError
        from albert_edge.runtime.backends import available_backends, open_backend

        if "litert" not in available_backends():
            raise ModelFileError(f"{source}: ai-edge-litert is not installed; install albert-edge[runtime] for QA goldens")
        self.pack, self.source = pack, source
        self.backend = open_backend(bytes(data), source, "litert")

    def run(self, window: Any) -> tuple[list[float], list[float]]:
        """Start and end logits [len] of one ``QAWindow`` (fed unpadded, by input name)."""
        from albert_edge.tasks.qa_spans import window_inputs

        feeds = window_inputs(window)
        out = self.backend.run({n: feeds[n] for n in self.pack.inputs})
        return tuple([float(v) for v in np.asarray(out[name], np.float32)[0]]  # type: ignore[return-value]
                     for name in ("start_logits", "end_logits"))


def qa_model_record(runtime: Any, model: _SpanModel, question: str, context: str) -> dict[str, Any]:
    """One line of golden_qa.jsonl: the question's and context's tokens, the windows and their inputs,
    LiteRT's logits per window, and the answer ``tasks.qa_spans`` decodes from exactly those logits."""
    from albert_edge.tasks.qa_spans import question_ids

    tokenizer = runtime.tokenizer
    tokens, windows = runtime.windows(question, context)
    if not tokens:
        windows = []  # the runtime answers an empty context without running the model
    logits = [model.run(w) for w in windows]
    span = best_span([(np.asarray(s, np.float32), np.asarray(e, np.float32)) for s, e in logits], windows,
                     runtime.max_answer_tokens)
    text, start, end = span_text(context, tokens, span)
    return {
        "question": question, "context": context, "max_seq_len": runtime.max_seq_len, "stride": runtime.stride,
        "max_answer_tokens": runtime.max_answer_tokens, "max_question_tokens": runtime.max_question_tokens,
        "question_ids": question_ids(tokenizer, question, runtime.max_question_tokens),
        "tokens": [[t, a, b] for t, a, b in tokens],
        "ids": tokenizer.convert_tokens_to_ids([t for t, _, _ in tokens]),
        "windows": [{"first": w.first, "length": w.length, "offset": w.offset, "input_ids": list(w.input_ids),
                     "token_type_ids": list(w.token_type_ids), "max_context": [bool(v) for v in w.max_context]}
                    for w in windows],
        "start_logits": [s for s, _ in logits], "end_logits": [e for _, e in logits],
        "span": None if span is None else [span.start, span.end, span.window],
        "answer": text, "start": start, "end": end, "score": 0.0 if span is None else span.score,
    }


def qa_model_records(data: bytes, source: str, cases: Sequence[tuple[str, str]],
                     settings: Sequence[tuple[int | None, int]] = ((None, MAX_ANSWER_TOKENS),)) -> list[dict[str, Any]]:
    """QA goldens for a packed question-answering ``.tflite``: every (question, context) at each
    (stride, max_answer_tokens).

    Checked before anything is written: ``QuestionAnswerer.answer`` on the same file with the same
    settings must return exactly the recorded answer, offsets and token span (the goldens are the
    runtime's answers).
    """
    from albert_edge.errors import ModelFileError
    from albert_edge.runtime import QuestionAnswerer
    from albert_edge.runtime.consistency import checked_pack
    from albert_edge.runtime.pack import read_pack_bytes
    from albert_edge.tasks import QuestionAnswering

    pack = read_pack_bytes(data, source)
    if not isinstance(pack.task_object(source), QuestionAnswering):
        raise ModelFileError(f"{source}: pack task is {pack.task}; QA goldens need a {QuestionAnswering.name} model")
    pack = checked_pack(data, source, pack)
    model = _SpanModel(data, pack, source)
    out = []
    for stride, max_answer in settings:
        runtime = QuestionAnswerer.from_bytes(data, source, backend="litert", stride=stride,
                                              max_answer_tokens=max_answer)
        for question, context in cases:
            record = qa_model_record(runtime, model, question, context)
            got = runtime.answer(question, context)
            want = (record["answer"], record["start"], record["end"],
                    tuple(record["span"][:2]) if record["span"] else (-1, -1))
            if (got.text, got.start, got.end, got.tokens) != want or abs(got.score - record["score"]) > 1e-12:
                raise ModelFileError(f"{source}: golden answer {want} differs from QuestionAnswerer's "
                                     f"{(got.text, got.start, got.end, got.tokens)} for {question!r} / {context!r}")
            out.append(record)
    return out


def render_qa_model_golden(data: bytes, source: str, cases: Sequence[tuple[str, str]],
                           settings: Sequence[tuple[int | None, int]] = ((None, MAX_ANSWER_TOKENS),)) -> str:
    from albert_edge.android.golden_inputs import render_jsonl

    return render_jsonl(qa_model_records(data, source, cases, settings))


def asset_qa_cases(sentences: Sequence[str] | None) -> list[tuple[str, str]]:
    """The app's QA golden cases: the defaults, or each given sentence as a context with a stock question."""
    if not sentences:
        return list(DEFAULT_QA_CASES)
    return [(_ASSET_QUESTIONS[i % len(_ASSET_QUESTIONS)], s) for i, s in enumerate(sentences)]
