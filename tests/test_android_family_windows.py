"""albert-core's NER and QA windows for RoBERTa's and XLM-R's ``<s>`` template (#40): the committed goldens are
exactly what Python's runtime builds today, they hold what the Java port must get right, and
``android-assets`` writes NER and QA assets for these families (it refused them while the Java windows
were BERT's only).

The JVM test ``TemplateWindowsGoldenTest`` (android_demo/ci-check.sh) holds the Java port to these files.
"""

from __future__ import annotations

import json

import pytest

from albert_edge.android.family_windows import GOLDEN_FILES, RESOURCES, render
from albert_edge.tokenizer import load_tokenizer


def _records(member: str) -> list[dict]:
    lines = (RESOURCES / GOLDEN_FILES[member][1]).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("member", sorted(GOLDEN_FILES))
def test_committed_window_golden_equals_regeneration(member):
    golden = GOLDEN_FILES[member][1]
    assert (RESOURCES / golden).read_bytes() == render(member, (RESOURCES / member).read_bytes()), (
        f"{golden} drifted: run python -m albert_edge.android.family_windows")


@pytest.mark.parametrize("member", sorted(GOLDEN_FILES))
def test_window_goldens_hold_the_template_and_what_the_port_must_get_right(member):
    """``<s> q </s></s> context </s>`` rows with type 0, several windows, truncated questions, answers after
    astral characters, entities, and an empty text (no windows)."""
    tokenizer = load_tokenizer(GOLDEN_FILES[member][0], (RESOURCES / member).read_bytes(), False, member)
    cls, sep = tokenizer.cls_id, tokenizer.sep_id
    records = _records(member)
    qa = [r for r in records if r["task"] == "qa"]
    ner = [r for r in records if r["task"] == "ner"]
    for r in qa:
        for w in r["windows"]:
            q = len(r["question_ids"])
            assert w["input_ids"][:q + 3] == [cls, *r["question_ids"], sep, sep] and w["input_ids"][-1] == sep
            assert w["offset"] == q + 3 and set(w["token_type_ids"]) == {0}
            assert len(w["input_ids"]) <= r["max_seq_len"]
    for r in ner:
        assert all(row[0] == cls and row[-1] == sep and len(row) <= r["max_seq_len"] for row in r["window_input_ids"])
    assert sum(len(r["windows"]) > 1 for r in qa) >= 15 and sum(len(r["window_starts"]) > 1 for r in ner) >= 15
    assert any(len(r["question_ids"]) == r["max_question_tokens"] for r in qa)
    assert any(r["answer"] and any(ord(c) > 0xFFFF for c in r["context"][:r["start"]]) for r in qa)
    assert sum(len(r["entities"]) for r in ner) >= 200
    assert any(r["context"] == "" and r["windows"] == [] for r in qa)
    assert any(r["text"] == "" and r["window_input_ids"] == [] for r in ner)


@pytest.mark.parametrize("family, head", [("roberta", "QuestionAnswering"), ("xlm-roberta", "TokenClassification")])
def test_android_assets_write_qa_and_ner_goldens_for_the_s_template(family, head, tmp_path, monkeypatch):
    """A converted RoBERTa QA and XLM-R NER model get their app assets (refused while albert-core's windows were
    BERT's): the goldens are the runtime's answers and entities, and the QA rows are ``<s> q </s></s> c </s>``."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    pytest.importorskip("ai_edge_litert")
    from albert_edge.android import ner as android_ner
    from albert_edge.android import qa as android_qa
    from albert_edge.android.golden_inputs import GOLDEN_NER
    from albert_edge.cli import main
    from albert_edge.errors import BackendError
    from albert_edge.runtime import QuestionAnswerer, TokenClassifier
    from tests.support.tiny_families import family_checkpoint

    ner = head == "TokenClassification"
    folder, _, tokenizer = family_checkpoint(tmp_path / "ckpt", family, head, **({"num_labels": 5} if ner else {}))
    convert = ["convert", str(folder), "--out", str(tmp_path / "out"), "--formats", "tflite", "--max-seq-len", "32",
               "--no-progress"]
    assert main(convert + (["--labels", "O,B-PER,I-PER,B-LOC,I-LOC"] if ner else [])) == 0
    model = tmp_path / "out" / "model_fp32.tflite"
    # Every code point's digest is 1.1M tokenizations (minutes); the slow family golden test covers that writer.
    monkeypatch.setattr(android_ner, "sentencepiece_codepoint_digests", lambda tok, lower: {"skipped": True})
    assert main(["android-assets", str(model), str(tmp_path / "app")]) == 0
    if ner:
        lines = (tmp_path / "app" / GOLDEN_NER).read_text(encoding="utf-8").splitlines()
        runtime = TokenClassifier.from_file(model, backend="litert")
        for record in map(json.loads, lines):
            got = [(e.label, e.start, e.end, e.text) for e in runtime.predict(record["text"])]
            assert got == [(e["label"], e["start"], e["end"], e["text"]) for e in record["entities"]]
            assert [t[0] for t in record["tokens"]] == tokenizer.tokenize(record["text"])
        assert len(lines) == len(android_ner.DEFAULT_NER_TEXTS)
        return
    lines = (tmp_path / "app" / android_qa.GOLDEN_QA_MODEL).read_text(encoding="utf-8").splitlines()
    runtime = QuestionAnswerer.from_file(model, backend="litert")
    for record in map(json.loads, lines):
        got = runtime.answer(record["question"], record["context"])
        assert (got.text, got.start, got.end) == (record["answer"], record["start"], record["end"])
        q = record["question_ids"]
        for w in record["windows"]:
            assert w["input_ids"][:len(q) + 3] == [tokenizer.cls_token_id, *q, tokenizer.sep_token_id,
                                                  tokenizer.sep_token_id] and set(w["token_type_ids"]) == {0}
    assert len(lines) == len(android_qa.DEFAULT_QA_CASES)
    # 32 positions: <s>, 28 question tokens, </s></s> and the last </s> leave no context (BERT's template would
    # leave one token): refused at load in one line, not inside the first long question.
    with pytest.raises(BackendError) as err:
        QuestionAnswerer(model.read_bytes(), str(model), backend="litert", max_question_tokens=28)
    assert str(err.value) == "max_question_tokens 28: leaves no context in max_seq_len 32"
