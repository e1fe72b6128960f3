"""Sequence regression: one real-valued score per text or text pair (STS-B similarity, ratings).

Head weights (canonical): ``pooler.*`` and ``classifier.kernel`` [H, 1], ``classifier.bias`` [1], the
same layers as sentence classification with one output. Hugging Face makes a
``*ForSequenceClassification`` with ``num_labels == 1`` a regressor (``problem_type`` "regression",
MSE loss), and a TF1 ``run_classifier`` head with one output row is the same thing, so a width-1
classifier is detected as this task: a softmax over one label would always say 1.0. The
signature's one output is ``logits`` [batch, 1], as optimum's export of such a model names it.

Post-processing is none: the logit is the score (``interpret`` -> ``{"score": ...}``), so the
generic runtime ``TaskModel`` serves it and ``predict``'s generic adapter prints one score per text.

Drift (``RegressionDrift``): Pearson and Spearman correlation of the variant's scores with gold
scores (a ``.jsonl`` eval file of ``{"text", "text_b"?, "score"}``) or with fp32's own scores, and
|Δscore| against fp32. Budget: ``--max-drop`` in correlation points (100 x Pearson lost against
gold, or 100 x (1 - Pearson) against fp32); ``--min-agreement`` is the share of texts whose score
moved by at most ``AGREEMENT_TOLERANCE`` of fp32's score spread, judged by its Wilson bound.

This module is the whole task: converter, parity, quantize, bench, predict and the runtime reach
it through the ``Task`` interface and their generic defaults only (no MediaPipe output, the
metadata title from the name, the generic predict and bench drift adapters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from albert_edge.tasks.base import ClassifierHeadTask, Column, TaskDrift, as_rows, check_same_shape
from albert_edge.tasks.eval_format import EvalFormat, Samples
from albert_edge.tasks.metrics import (
    Budget,
    f1_and_agreement_failures,
    f1_and_agreement_hints,
    f1_and_agreement_shortfall,
    f1_and_agreement_unjudged,
)
from albert_edge.tasks.sequence_classification import SequenceClassification
from albert_edge.tokenizer import batch_one

#: A score "agrees" with fp32's when it moved by at most this share of fp32's standard deviation.
AGREEMENT_TOLERANCE = 0.05


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two flat arrays; 1.0 for identical constants, 0.0 when only one is constant."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    sa, sb = a.std(), b.std()
    if sa == 0 or sb == 0:
        return 1.0 if np.array_equal(a, b) else 0.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), as Spearman's rho needs."""
    x = np.asarray(x, np.float64).ravel()
    order = np.argsort(x, kind="stable")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=r)
    return sums[inverse] / counts[inverse]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: Pearson r of the average ranks. A constant side has no ranking: it gets
    ``pearson``'s verdict on the values (the ranks of any two constants are equal, which read as 1.0
    beside a Pearson of 0.0 for constant gold)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.std() == 0 or b.std() == 0:
        return pearson(a, b)
    return pearson(ranks(a), ranks(b))


@dataclass
class RegressionDrift(TaskDrift):
    """Scores of a variant against the baseline's (fp32) on the same texts.

    ``pearson`` / ``spearman``: the variant's correlation with ``against`` ("gold" or "baseline
    scores"); ``baseline_pearson``: fp32's with gold (labelled only). ``agreement``: share of texts
    whose score is within ``AGREEMENT_TOLERANCE`` x fp32's spread of fp32's. ``drop``: correlation
    points lost (labelled: 100 x (baseline_pearson - pearson); unlabelled: 100 x (1 - pearson)).
    """

    examples: int
    pearson: float
    spearman: float
    baseline_pearson: float | None
    agreement: float
    max_abs_diff: float
    mean_abs_diff: float
    drop: float
    against: str

    columns: ClassVar[tuple[Column, ...]] = (
        Column("pearson", "pearson", ".4f"), Column("spearman", "spearman", ".4f"), Column("drop pt", "drop", ".2f"),
        Column("agree %", "agreement", ".1f", percent=True), Column("max|dscore|", "max_abs_diff", ".4f"))

    def to_dict(self) -> dict[str, Any]:
        # ``accuracy`` is the headline score the bench's main table and recommendation read.
        return {**asdict(self), "accuracy": self.pearson}

    def budget_failures(self, budget: Budget) -> list[str]:
        return f1_and_agreement_failures(budget, self.drop, "correlation (Pearson)", self.agreement, self.examples,
                                         "score")

    def unjudged(self, budget: Budget) -> str | None:
        return f1_and_agreement_unjudged(budget, self.drop, self.agreement, self.examples, "score")

    def relax_hints(self, budget: Budget) -> list[str]:
        return f1_and_agreement_hints(budget, self.drop, self.agreement, self.examples)

    def shortfall(self, budget: Budget) -> float:
        """Pearson points lost beyond ``max_drop`` plus score-agreement points under the budget's bound."""
        return f1_and_agreement_shortfall(budget, self.drop, self.agreement, self.examples)

    def summary(self) -> str:
        return f"Pearson {self.pearson:.4f} vs {self.against}, drop {self.drop:.2f} pt, agreement {100 * self.agreement:.1f}%"


def regression_drift(values: np.ndarray, baseline: np.ndarray, gold: np.ndarray | None = None) -> RegressionDrift:
    """Drift of scores ``values`` [N, D] against ``baseline`` [N, D], and against ``gold`` [N] or [N, D]."""
    values, baseline = as_rows(values), as_rows(baseline)
    check_same_shape(values, baseline, ("scores", "baseline scores"))
    delta = np.abs(values - baseline)
    spread = float(baseline.std()) or 1.0
    agreement = float(np.mean(np.all(delta <= AGREEMENT_TOLERANCE * spread, axis=1))) if len(values) else 1.0
    if gold is not None:
        truth = np.asarray(gold, np.float64).reshape(values.shape)
        base_r = pearson(baseline, truth)
        r, rho = pearson(values, truth), spearman(values, truth)
        drop, against = 100.0 * (base_r - r), "gold"
    else:
        base_r = None
        r, rho = pearson(values, baseline), spearman(values, baseline)
        drop, against = 100.0 * (1.0 - r), "baseline scores"
    return RegressionDrift(int(values.shape[0]), r, rho, base_r, agreement,
                           float(delta.max()) if delta.size else 0.0, float(delta.mean()) if delta.size else 0.0,
                           drop, against)


class ScoreJsonlFormat(EvalFormat):
    """A regressor's labelled eval file: a ``.jsonl`` of scored texts."""

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int, labels: tuple[str, ...] | None = None,
                         max_examples: int | None = None) -> Samples | None:
        """``{"text", "text_b"?, "score"}`` per line of a ``.jsonl``: batch-1 samples and gold scores."""
        from albert_edge.errors import AlbertEdgeError, DataError
        from albert_edge.tasks.jsonl import iter_jsonl_rows
        from albert_edge.tokenizer import Preprocessor

        preprocessor = Preprocessor(tokenizer, max_seq_len)
        samples, gold = [], []
        for _, where, row in iter_jsonl_rows(path, "score file"):
            if max_examples is not None and len(samples) >= max_examples:
                break
            text, text_b, score = (row.get("text"), row.get("text_b"), row.get("score")) if isinstance(row, dict) \
                else (None, None, None)
            if not isinstance(text, str) or not text.strip() or (text_b is not None and not isinstance(text_b, str)):
                raise DataError(f"{where}: expected {{\"text\": str, \"text_b\": str (optional), \"score\": number}}")
            if score is None:  # another task's .jsonl (entities, questions): name this task's format
                raise DataError(f"{where}: no \"score\"; a sequence-regression model's --eval is a .jsonl of "
                                "{\"text\", \"text_b\" (optional), \"score\"} per line, or plain texts")
            # abs() first: np.isfinite of a 400-digit JSON integer raises OverflowError (an exit-1 "bug").
            if isinstance(score, bool) or not isinstance(score, (int, float)) or abs(score) > 1e300 \
                    or not np.isfinite(score):
                raise DataError(f"{where}: \"score\" must be a finite number, got {score!r}")
            try:
                enc = preprocessor.encode(text, text_b)
            except AlbertEdgeError as exc:
                raise DataError(f"{where}: {exc}") from None
            samples.append(batch_one(enc))
            gold.append(float(score))
        if not samples:
            raise DataError(f"{path}: no scored texts")
        return samples, np.asarray(gold)


class SequenceRegression(ClassifierHeadTask):
    """One score per text (or pair) from the pooled [CLS]: a width-1 classifier head."""

    name: ClassVar[str] = "sequence_regression"
    pipeline_tag: ClassVar[str | None] = "text-classification"
    head_prefixes: ClassVar[tuple[str, ...]] = ("pooler.", "classifier.")
    required_weights: ClassVar[tuple[str, ...]] = SequenceClassification.required_weights
    #: A score has no label names (the pack carries none).
    needs_labels: ClassVar[bool] = False
    tolerances: ClassVar[dict[str, dict[str, float]]] = SequenceClassification.tolerances
    eval_format: ClassVar[EvalFormat] = ScoreJsonlFormat()
    drift_title: ClassVar[str] = "Score drift (sequence regression; correlation against {against})"
    drift_columns: ClassVar[tuple[Column, ...]] = (
        Column("texts", "examples", "d"), Column("Pearson", "pearson", ".4f"), Column("Spearman", "spearman", ".4f"),
        Column("drop (pts)", "drop", ".2f"), Column("scores within 5% of spread", "agreement", ".2f", percent=True),
        Column("max abs Δscore", "max_abs_diff", ".3g"))

    # The head is sentence classification's (pooler, then one dense layer); only its width differs.
    head = SequenceClassification.head
    parity_expected = SequenceClassification.parity_expected
    parity_required = SequenceClassification.parity_required
    judged_values = SequenceClassification.judged_values

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return ("classifier.kernel" in weights.tensors and "pooler.kernel" in weights.tensors
                and cls.num_labels(weights) == 1)

    def check_weights(self, weights: Any) -> None:
        super().check_weights(weights)
        from albert_edge.errors import ConversionError

        if self.num_labels(weights) != 1:
            raise ConversionError(f"{weights.source}: task {self.name} needs a one-output head, the classifier "
                                  f"has {self.num_labels(weights)} outputs (a classifier: --task sequence_classification)")

    def outputs(self) -> tuple[str, ...]:
        return ("logits",)

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        return {"logits": ["batch", 1]}

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> RegressionDrift:
        return regression_drift(values, baseline, labels)

    def interpret(self, outputs: Mapping[str, np.ndarray], labels: Sequence[str] | None) -> dict[str, Any]:
        score = np.asarray(outputs["logits"], np.float64)[0]
        return {"score": float(score[0]) if score.size == 1 else [float(v) for v in score]}
