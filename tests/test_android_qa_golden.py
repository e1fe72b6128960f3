"""The committed QA goldens are what Python computes.

golden_qa_spans.jsonl (span decoding on seeded logits) equals a fresh regeneration from the committed
vocab and sentences. golden_qa.jsonl (end to end from strings on the committed qa_model.tflite) holds
the pack tokenizer's tokens and offsets, the windows tasks.qa_spans builds, LiteRT's logits (within
1e-4 of a fresh run) and the answers QuestionAnswerer gives; QaSpans.java and QuestionAnswerer.java
are tested on these files by the JVM tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.android_fixtures import committed_case

from albert_edge.android import goldens as android
from albert_edge.android import qa as android_qa
from albert_edge.android.goldens import SENTENCES_FILE, VOCAB_FILE, read_sentences
from albert_edge.android.qa import GOLDEN_QA, RESOURCES, render_qa_goldens
from albert_edge.outputs.output_set import OutputSet
from albert_edge.tasks.qa_spans import (
    best_span,
    encode_windows,
    question_ids,
    span_text,
)


def test_committed_qa_golden_equals_a_fresh_regeneration():
    vocab_text = (RESOURCES / VOCAB_FILE).read_text(encoding="utf-8")
    fresh = render_qa_goldens(vocab_text, read_sentences(RESOURCES / SENTENCES_FILE))
    assert (RESOURCES / GOLDEN_QA).read_bytes() == fresh, "regenerate with: python -m albert_edge.android.qa"


def test_qa_golden_covers_several_windows_astral_text_and_an_empty_context():
    records = [json.loads(line) for line in (RESOURCES / GOLDEN_QA).read_text(encoding="utf-8").splitlines()]
    assert sum(len(r["windows"]) > 1 for r in records) >= 5
    # An answer after astral characters: its code-point offsets differ from Java's UTF-16 indices.
    assert any(r["answer"] and any(ord(ch) > 0xFFFF for ch in r["context"][:r["start"]]) for r in records)
    assert any(r["span"] is None and r["context"] == "" for r in records)
    for r in records:
        assert r["context"][r["start"]:r["end"]] == r["answer"]


# ------------------------------------------------------------------ golden_qa.jsonl: a real QA model
QA_MODEL = RESOURCES / android_qa.QA_MODEL


QA_CASES = [(android_qa.QA_MODEL, android_qa.GOLDEN_QA_MODEL, "wordpiece"),
            (android_qa.QA_MODEL_SP, android_qa.GOLDEN_QA_MODEL_SP, "sentencepiece")]


@pytest.fixture(scope="module", params=QA_CASES, ids=["wordpiece", "sentencepiece"])
def qa_case(request) -> tuple[Path, list[dict], str]:
    """(model file, its golden records, tokenizer type) for each committed QA fixture."""
    return committed_case(RESOURCES, *request.param)


def _tokenizer(model: Path, kind: str):
    from albert_edge.runtime.pack import read_pack
    from albert_edge.tokenizer import load_tokenizer

    pack = read_pack(model)
    assert pack.task == "question_answering" and pack.tokenizer_type == kind
    return load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, model.name)


def test_qa_golden_answers_are_the_python_decoding_of_its_own_logits(qa_case):
    model, qa_golden, kind = qa_case
    tokenizer = _tokenizer(model, kind)
    for r in qa_golden:
        tokens = [tuple(t) for t in r["tokens"]]
        assert tokens == tokenizer.tokenize_with_offsets(r["context"]), r["context"]
        assert r["question_ids"] == question_ids(tokenizer, r["question"], r["max_question_tokens"])
        windows = encode_windows(tokenizer, r["question_ids"], tokens, r["max_seq_len"], r["stride"]) if tokens else []
        assert [list(w.input_ids) for w in windows] == [w["input_ids"] for w in r["windows"]]
        assert [list(w.token_type_ids) for w in windows] == [w["token_type_ids"] for w in r["windows"]]
        logits = [(np.asarray(s, np.float32), np.asarray(e, np.float32)) for s, e in zip(r["start_logits"], r["end_logits"])]
        span = best_span(logits, windows, r["max_answer_tokens"])
        assert (None if span is None else [span.start, span.end, span.window]) == r["span"]
        assert span_text(r["context"], tokens, span) == (r["answer"], r["start"], r["end"])
        assert r["context"][r["start"]:r["end"]] == r["answer"]


def test_qa_golden_covers_windows_strides_caps_astral_offsets_and_empty_contexts(qa_case):
    _, qa_golden, _ = qa_case
    assert len(qa_golden) >= 40
    assert sum(len(r["windows"]) >= 3 for r in qa_golden) >= 10
    assert {r["stride"] for r in qa_golden} >= {None, 0, 16} and {r["max_answer_tokens"] for r in qa_golden} >= {3, 30}
    assert any(len(r["question_ids"]) == r["max_question_tokens"] for r in qa_golden)  # a question over the cap
    assert any(r["answer"] and any(ord(ch) > 0xFFFF for ch in r["context"][:r["start"]]) for r in qa_golden)
    assert any(r["answer"] != r["context"][r["start"]:r["end"]].lower() for r in qa_golden if r["answer"])
    assert sum(not r["windows"] for r in qa_golden) >= 2  # empty and whitespace-only contexts


def test_the_wordpiece_qa_fixture_is_a_trained_model_not_noise():
    lines = (RESOURCES / android_qa.GOLDEN_QA_MODEL).read_text(encoding="utf-8").splitlines()[:5]
    assert [json.loads(line)["answer"] for line in lines] == ["Berlin", "Initech", "BERLIN", "成都", "腾讯"]


def test_qa_golden_is_the_committed_model_run_by_litert_and_question_answerer(qa_case):
    pytest.importorskip("ai_edge_litert")
    model, qa_golden, _ = qa_case
    committed = [r for r in qa_golden if r["stride"] == 16]
    assert committed
    fresh = android_qa.qa_model_records(model.read_bytes(), model.name,
                                        [(r["question"], r["context"]) for r in committed], settings=((16, 3),))
    for want, got in zip(committed, fresh):
        assert got["tokens"] == want["tokens"] and got["windows"] == want["windows"]
        for a, b in zip(got["start_logits"] + got["end_logits"], want["start_logits"] + want["end_logits"]):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4)
        assert (got["answer"], got["start"], got["end"], got["span"]) == (want["answer"], want["start"], want["end"],
                                                                          want["span"])


def test_android_assets_for_a_qa_model_write_answer_goldens_checked_by_question_answerer(tmp_path, monkeypatch):
    pytest.importorskip("ai_edge_litert")
    from albert_edge.cli import main
    from albert_edge.runtime import QuestionAnswerer

    monkeypatch.setattr(android, "codepoint_digests", lambda vocab_text, casings: {"casings": list(casings)})
    assets = tmp_path / "assets"
    with OutputSet(assets) as previous_run:  # goldens of other models that albert-edge wrote here before
        previous_run.write_text(android.GOLDEN_LOGITS, "stale classifier logits\n")
        previous_run.write_text(android.GOLDEN_NER, "stale entities\n")
    assert main(["android-assets", str(QA_MODEL), str(assets)]) == 0
    assert (assets / android.ASSET_MODEL).read_bytes() == QA_MODEL.read_bytes()
    assert not (assets / android.GOLDEN_LOGITS).exists() and not (assets / android.GOLDEN_NER).exists()
    lines = [json.loads(line) for line in (assets / android_qa.GOLDEN_QA_MODEL).read_text(encoding="utf-8").splitlines()]
    assert [(r["question"], r["context"]) for r in lines] == list(android_qa.DEFAULT_QA_CASES)
    qa = QuestionAnswerer.from_file(QA_MODEL, backend="litert")
    for r in lines:
        got = qa.answer(r["question"], r["context"])
        assert (got.text, got.start, got.end) == (r["answer"], r["start"], r["end"])
    assert lines[2]["answer"] == "BERLIN"  # cut from the context as typed


def test_android_assets_for_a_qa_model_use_sentences_as_contexts(tmp_path, monkeypatch):
    pytest.importorskip("ai_edge_litert")
    from albert_edge.cli import main

    monkeypatch.setattr(android, "codepoint_digests", lambda vocab_text, casings: {"casings": list(casings)})
    sentences = tmp_path / "s.txt"
    sentences.write_text("Grace Lee moved to Berlin.\n李娜在成都的华为工作。\n", encoding="utf-8")
    assert main(["android-assets", str(QA_MODEL), str(tmp_path / "assets"), "--sentences", str(sentences)]) == 0
    lines = (tmp_path / "assets" / android_qa.GOLDEN_QA_MODEL).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["context"] for line in lines] == ["Grace Lee moved to Berlin.", "李娜在成都的华为工作。"]


def test_qa_goldens_refuse_a_classifier_model():
    from albert_edge.errors import ModelFileError

    with pytest.raises(ModelFileError, match="QA goldens need a question_answering model"):
        android_qa.qa_model_records((RESOURCES / android.PACK_FIXTURE).read_bytes(), "pack_fixture.tflite", [("a", "b")])
