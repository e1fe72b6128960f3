"""The demo's closing examples come from the held-out split, carry their gold label, and are marked by
comparing prediction with gold (issue #31): never a hand-picked showcase, never a written mark."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from albert_edge.inputs.data import Example, read_tsv
from albert_edge.demo.pipeline import default_sample_dir
from albert_edge.demo.examples import judge_held_out, pick_examples

TEST_SPLIT = default_sample_dir() / "test.tsv"


@dataclass
class _Answer:
    label: str
    score: float


class _KeywordClassifier:
    """Predicts ``pos`` when the text holds a marker character, else ``neg``: right on some rows, wrong on others."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.calls = 0

    def predict_batch(self, texts, pairs=None):
        self.calls += 1
        return [_Answer("pos" if self.marker in text else "neg", 0.75) for text in texts]


def _examples(n_pos: int, n_neg: int) -> list[Example]:
    return ([Example("pos", f"good {i}", line=i + 1) for i in range(n_pos)]
            + [Example("neg", f"bad {i}", line=n_pos + i + 1) for i in range(n_neg)])


def test_the_pick_is_seeded_balanced_and_in_file_order() -> None:
    rows = _examples(40, 10)
    first = pick_examples(rows, 6, seed=7)
    assert first == pick_examples(rows, 6, seed=7)
    assert [r.label for r in first].count("pos") == 3 and [r.label for r in first].count("neg") == 3
    assert [r.line for r in first] == sorted(r.line for r in first)
    assert {r.text_a for r in first} != {r.text_a for r in pick_examples(rows, 6, seed=8)}
    # A class with too few rows gives what it has; the rest comes from the other.
    assert [r.label for r in pick_examples(_examples(10, 1), 6)].count("neg") == 1
    assert len(pick_examples(_examples(2, 1), 6)) == 3
    assert pick_examples([], 6) == [] and pick_examples(rows, 0) == []


def test_marks_and_accuracy_are_computed_from_the_predictions(tmp_path: Path) -> None:
    split = tmp_path / "test.tsv"
    split.write_text("label\ttext\npos\t好看\npos\t不好看\nneg\t难看\nneg\t好难看\npos\t好\nneg\t差\n", encoding="utf-8")
    judged = judge_held_out(_KeywordClassifier("好"), split, "m.tflite", count=4, seed=1)
    # The whole split is classified once: 好看 right, 不好看 right, 难看 right, 好难看 wrong, 好 right, 差 right.
    assert (judged.count, judged.correct) == (6, 5)
    assert judged.to_dict()["split_accuracy"] == pytest.approx(5 / 6, abs=1e-4)
    rows = {row.text_a: row for row in read_tsv(split)}
    for item in judged.examples:
        row = rows[item["text"]]
        assert item["gold"] == row.label and item["line"] == row.line
        assert item["correct"] == (item["label"] == item["gold"])
    lines = judged.lines()
    assert "5 of 6 right" in lines[0] and len(lines) == 1 + len(judged.examples)
    assert all(("right" in line) != ("WRONG" in line) for line in lines[1:])


@pytest.mark.skipif(not TEST_SPLIT.exists(), reason="shipped sample data not in this checkout")
def test_on_the_shipped_split_the_examples_are_its_rows() -> None:
    judged = judge_held_out(_KeywordClassifier("好"), TEST_SPLIT, "m.tflite", count=6, seed=0)
    rows = read_tsv(TEST_SPLIT)
    assert judged.count == len(rows) == 1728
    by_text = {row.text_a: row.label for row in rows}
    assert len(judged.examples) == 6
    assert {item["gold"] for item in judged.examples} == {"neg", "pos"}
    assert all(by_text[item["text"]] == item["gold"] for item in judged.examples)
    expected = sum(("pos" if "好" in row.text_a else "neg") == row.label for row in rows)
    assert judged.correct == expected
