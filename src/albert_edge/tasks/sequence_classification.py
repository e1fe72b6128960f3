"""Sequence classification: tanh pooler on [CLS], then a linear layer to one logit per label.

Head weights (canonical names): ``pooler.kernel`` [H, H], ``pooler.bias`` [H],
``classifier.kernel`` [H, num_labels], ``classifier.bias`` [num_labels]. The signature's one output
is ``logits`` [batch, num_labels]; post-processing is a softmax and an argmax (runtime
``TextClassifier``). Drift is label agreement, accuracy drop and |Δlogit| against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from albert_edge.tasks.base import ClassifierHeadTask, TaskDrift, as_rows, check_same_shape


@dataclass
class ClassificationDrift(TaskDrift):
    """Drift of a classifier against the baseline's logits on the same inputs.

    ``accuracy`` is None without labels; ``accuracy_drop`` is then bounded by the disagreement
    (a prediction that agrees with the baseline cannot change accuracy), in percentage points.
    """

    examples: int
    agreement: float
    max_abs_logit: float
    mean_abs_logit: float
    accuracy: float | None
    accuracy_drop: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def budget_failures(self, budget: Any) -> list[str]:
        reasons = []
        if self.accuracy_drop > budget.max_drop + 1e-9:
            reasons.append(f"accuracy drop {self.accuracy_drop:.2f} pt > {budget.max_drop:g}")
        bound = agreement_lower_bound(self.agreement, self.examples, budget.confidence)
        if bound < budget.min_agreement - 1e-9:
            reasons.append(f"agreement {100 * self.agreement:.2f}% of {self.examples} (lower bound {100 * bound:.2f}% "
                           f"at {100 * budget.confidence:g}% confidence) < {100 * budget.min_agreement:g}%")
        return reasons

    def summary(self) -> str:
        return f"drop {self.accuracy_drop:.2f} pt, agreement {100 * self.agreement:.1f}%"


def classification_drift(logits: np.ndarray, reference: np.ndarray, labels: np.ndarray | None = None) -> ClassificationDrift:
    """Agreement and logit error of ``logits`` against ``reference`` [N, C]; accuracy if ``labels`` [N]."""
    logits, reference = as_rows(logits), as_rows(reference)
    check_same_shape(logits, reference, ("logits", "baseline logits"))
    pred, ref_pred = logits.argmax(-1), reference.argmax(-1)
    agreement = float(np.mean(pred == ref_pred))
    delta = np.abs(logits - reference)
    if labels is not None:
        accuracy = float(np.mean(pred == labels))
        drop = 100.0 * (float(np.mean(ref_pred == labels)) - accuracy)
    else:
        accuracy, drop = None, 100.0 * (1.0 - agreement)
    return ClassificationDrift(len(pred), agreement, float(delta.max()), float(delta.mean()), accuracy, drop)


def agreement_lower_bound(agreement: float, n: int, confidence: float = 0.95) -> float:
    """One-sided Wilson score lower bound of a proportion measured as ``agreement`` over ``n`` examples."""
    if n <= 0:
        return 0.0
    if confidence <= 0.5:
        return agreement
    z = _normal_quantile(confidence)
    centre = agreement + z * z / (2 * n)
    spread = z * math.sqrt(agreement * (1 - agreement) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


def _normal_quantile(p: float) -> float:
    # Bisection on the normal CDF: exact enough for a confidence level, no scipy needed.
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


class SequenceClassification(ClassifierHeadTask):
    """Logits per label for a text or a text pair."""

    name: ClassVar[str] = "sequence_classification"
    head_prefixes: ClassVar[tuple[str, ...]] = ("pooler.", "classifier.")
    # fp32 is the contract; fp16 stores weights rounded to 11 significant bits, which moves
    # ALBERT-Tiny logits by ~1e-3. Hidden states of a trained model are larger than random ones
    # (post-LN gamma grows in training): the trained sample's fp16 file moved them by 3.2e-2 while
    # its logits moved by 4.4e-4, so the hidden bound is looser than the logit bound.
    tolerances: ClassVar[dict[str, dict[str, float]]] = {
        "fp32": {"logits": 1e-4, "hidden": 1e-4},
        "fp16": {"logits": 2e-2, "hidden": 6e-2},
    }

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return "classifier.kernel" in weights.tensors

    def required_weights(self) -> tuple[str, ...]:
        return ("pooler.kernel", "pooler.bias", "classifier.kernel", "classifier.bias")

    def outputs(self) -> tuple[str, ...]:
        return ("logits",)

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        return {"logits": ["batch", self.num_labels(weights)]}

    def tf_head(self, tf: Any, params: Mapping[str, Any], sequence: Any, attention_mask: Any) -> dict[str, Any]:
        hidden = params["pooler.kernel"].shape[0]
        batch = tf.shape(sequence)[0]
        first = tf.reshape(tf.slice(sequence, [0, 0, 0], tf.stack([batch, 1, hidden])), tf.stack([batch, hidden]))
        pooled = tf.tanh(tf.matmul(first, params["pooler.kernel"]) + params["pooler.bias"])
        return {"logits": tf.matmul(pooled, params["classifier.kernel"]) + params["classifier.bias"]}

    def onnx_head(self, builder: Any, sequence: str, attention_mask: str) -> list[tuple[str, list[str | int]]]:
        first = builder.op("Gather", [sequence, builder.const(0, np.int64)], axis=1)
        pooled = builder.op("Tanh", [builder.dense(first, "pooler")])
        builder.op("Identity", [builder.dense(pooled, "classifier")], outputs=["logits"])
        return [("logits", ["batch", self.num_labels(builder.weights)])]

    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        return {"logits": reference.logits, "hidden": reference.last_hidden_state}

    def parity_required(self) -> tuple[str, ...]:
        return ("logits",)

    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        return as_rows(outputs["logits"])

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> ClassificationDrift:
        return classification_drift(values, baseline, labels)
