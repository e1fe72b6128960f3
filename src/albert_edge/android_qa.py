"""Golden file for the Android core's question-answering decoding (``QaSpans.java``).

The phone runs the same windows, max-context rule and best-span search as ``tasks.qa_spans``;
this module writes ``golden_qa_spans.jsonl`` so a JVM test proves the Java code picks the same
windows, builds the same inputs, finds the same span and cuts the same answer (character offsets
are code points, as Python's; Java converts them with ``offsetByCodePoints``). Inputs are real
review texts tokenized with the test vocab, alone and run together into long contexts, one with
astral characters, and an empty one; the logits are seeded float32 noise with a planted answer.

Regenerate with ``python -m albert_edge.android_qa`` (tests/test_android_qa_golden.py checks the
committed file equals a fresh regeneration).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from albert_edge.atomic import write_bytes_atomic
from albert_edge.tasks.qa_spans import (
    MAX_ANSWER_TOKENS,
    best_span,
    encode_windows,
    span_text,
)
from albert_edge.tokenizer import WordPieceTokenizer

GOLDEN_QA = "golden_qa_spans.jsonl"
RESOURCES = Path(__file__).resolve().parents[2] / "android_demo" / "albert-core" / "src" / "test" / "resources"
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
    from albert_edge.android import render_jsonl

    return render_jsonl(qa_span_records(vocab_text, sentences)).encode("utf-8")


def write_qa_goldens(resources_dir: str | Path = RESOURCES) -> Path:
    """Regenerate ``golden_qa_spans.jsonl`` from the committed vocab.txt and golden_sentences.txt."""
    from albert_edge.android import SENTENCES_FILE, VOCAB_FILE, read_sentences

    out = Path(resources_dir)
    vocab_text = (out / VOCAB_FILE).read_text(encoding="utf-8")
    return write_bytes_atomic(out / GOLDEN_QA, render_qa_goldens(vocab_text, read_sentences(out / SENTENCES_FILE)))


if __name__ == "__main__":
    print(write_qa_goldens())
