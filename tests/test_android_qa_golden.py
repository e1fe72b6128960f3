"""The committed QA golden (golden_qa_spans.jsonl) equals a fresh regeneration from the committed vocab
and sentences, and its answers are what Python's runtime decoding gives (QaSpans.java is tested on it)."""

from __future__ import annotations

import json

from albert_edge.android import SENTENCES_FILE, VOCAB_FILE, read_sentences
from albert_edge.android_qa import GOLDEN_QA, RESOURCES, render_qa_goldens


def test_committed_qa_golden_equals_a_fresh_regeneration():
    vocab_text = (RESOURCES / VOCAB_FILE).read_text(encoding="utf-8")
    fresh = render_qa_goldens(vocab_text, read_sentences(RESOURCES / SENTENCES_FILE))
    assert (RESOURCES / GOLDEN_QA).read_bytes() == fresh, "regenerate with: python -m albert_edge.android_qa"


def test_qa_golden_covers_several_windows_astral_text_and_an_empty_context():
    records = [json.loads(line) for line in (RESOURCES / GOLDEN_QA).read_text(encoding="utf-8").splitlines()]
    assert sum(len(r["windows"]) > 1 for r in records) >= 5
    # An answer after astral characters: its code-point offsets differ from Java's UTF-16 indices.
    assert any(r["answer"] and any(ord(ch) > 0xFFFF for ch in r["context"][:r["start"]]) for r in records)
    assert any(r["span"] is None and r["context"] == "" for r in records)
    for r in records:
        assert r["context"][r["start"]:r["end"]] == r["answer"]
