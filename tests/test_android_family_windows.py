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
