"""The demo's example predictions: drawn from the held-out split with their gold labels, never hand-picked.

A newcomer reads the examples last and remembers them. Hand-written showcase sentences either hide a
model's weakness (chosen to look good) or expose it by accident (a plainly positive review printed as
``neg 0.937`` with nothing saying so). So the examples are a seeded random pick from the test split,
the same number from each class, each printed with its gold label and a right/wrong mark computed from
the prediction, beside the file's accuracy on the whole split: the honest picture, reproducible from the
seed. A user's own texts (``albert-edge demo --text``) are printed after them, without a mark.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from albert_edge.inputs.data import Example, read_tsv

#: How many held-out examples the demo shows by default (split evenly over the classes).
DEFAULT_COUNT = 6
DEFAULT_SEED = 0


class _Prediction(Protocol):
    label: str
    score: float


class _Classifier(Protocol):
    def predict_batch(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> Sequence[_Prediction]: ...


def pick_examples(examples: Sequence[Example], count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> list[Example]:
    """``count`` examples drawn at random (``seed``) with every class represented as evenly as it can be.

    Classes take turns in sorted order, each giving its next randomly ordered example, so two classes
    give 3 + 3 of 6; a class with too few examples gives what it has. The result is in file order, so
    the printout reads like the split.
    """
    if count <= 0 or not examples:
        return []
    rng = random.Random(seed)
    by_class: dict[str, list[Example]] = {}
    for example in examples:
        by_class.setdefault(example.label, []).append(example)
    queues = {label: rng.sample(group, len(group)) for label, group in sorted(by_class.items())}
    picked: list[Example] = []
    while len(picked) < min(count, len(examples)):
        for label in sorted(queues):
            if queues[label] and len(picked) < count:
                picked.append(queues[label].pop())
    order = {id(example): index for index, example in enumerate(examples)}
    return sorted(picked, key=lambda example: order[id(example)])


@dataclass(frozen=True)
class HeldOutExamples:
    """The split's accuracy with the chosen file and the judged examples, as printed and saved."""

    split: str
    seed: int
    count: int
    correct: int
    examples: list[dict[str, Any]]

    @property
    def accuracy(self) -> float:
        return self.correct / self.count if self.count else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"split": self.split, "seed": self.seed, "split_size": self.count, "split_correct": self.correct,
                "split_accuracy": round(self.accuracy, 4), "examples": self.examples}

    def lines(self) -> list[str]:
        """The console lines: a header with the accuracy, then one line per example with its mark."""
        out = [f"  {len(self.examples)} held-out examples from {self.split} (seed {self.seed}); this file gets "
               f"{self.correct} of {self.count} right ({100 * self.accuracy:.2f} %) on the whole split"]
        for item in self.examples:
            mark = "right" if item["correct"] else "WRONG"
            out.append(f"  {mark:<5} gold {item['gold']:<4} predicted {item['label']:<4} {item['score']:.3f}  "
                       f"{_one_line(item['text'])}")
        return out


def judge_held_out(classifier: _Classifier, split: Path, model_name: str, count: int = DEFAULT_COUNT,
                   seed: int = DEFAULT_SEED, labels: Sequence[str] | None = None) -> HeldOutExamples:
    """Classify the whole ``split`` with ``classifier`` and judge the seeded pick against its gold labels.

    The marks and the accuracy are computed here from the predictions, never written by hand.
    """
    rows = read_tsv(split, labels=labels)
    predictions = classifier.predict_batch([row.text_a for row in rows],
                                           [row.text_b for row in rows] if rows and rows[0].text_b is not None else None)
    correct = sum(prediction.label == row.label for prediction, row in zip(predictions, rows))
    index = {id(row): i for i, row in enumerate(rows)}
    judged = []
    for row in pick_examples(rows, count, seed):
        prediction = predictions[index[id(row)]]
        item: dict[str, Any] = {"text": row.text_a, "gold": row.label, "label": prediction.label,
                                "score": round(float(prediction.score), 4),
                                "correct": prediction.label == row.label, "line": row.line, "model": model_name}
        if row.text_b is not None:
            item["text_b"] = row.text_b
        judged.append(item)
    return HeldOutExamples(split=split.name, seed=seed, count=len(rows), correct=correct, examples=judged)


def user_text_lines(classifier: Any, texts: Sequence[str], model_name: str,
                    log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The user's own ``--text`` inputs: predicted and printed, with no gold and so no mark."""
    records = []
    if texts:
        log("  your texts (no gold label):")
    for text in texts:
        prediction = classifier.predict(text)
        records.append({"text": text, "label": prediction.label, "score": round(float(prediction.score), 4),
                        "model": model_name})
        log(f"        predicted {prediction.label:<4} {prediction.score:.3f}  {_one_line(text)}")
    return records


def _one_line(text: str, width: int = 60) -> str:
    """A review as one console line: newlines and tabs shown as spaces, long texts cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


__all__: Sequence[str] = ("DEFAULT_COUNT", "DEFAULT_SEED", "HeldOutExamples", "judge_held_out", "pick_examples",
                          "user_text_lines")
