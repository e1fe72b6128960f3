"""Accuracy, label agreement and logit drift of any runnable model on labelled data.

The question quantization and export keep asking is "what did this cost?": how often the
model is right (accuracy), how often it says what the fp32 model says (agreement), and how far
its logits moved (max/mean |delta logit|, mean KL(reference || model) of the softmax). The
reference may be another model file, a TextClassifier, or the canonical weights themselves
(run through the numpy reference), so the same call judges an fp32 export against its
checkpoint and an int8 file against the fp32 one.

Data is a UTF-8 TSV, one example per line: ``label<TAB>text`` or ``label<TAB>text_a<TAB>text_b``,
read by the toolkit's one TSV reader (``albert_edge.inputs.data.read_tsv``, re-exported here); every
defect is a DataError naming the file and line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from albert_edge.inputs.data import Example, read_tsv
from albert_edge.errors import DataError, ModelFileError
from albert_edge.runtime.classifier import TextClassifier, softmax
from albert_edge.tokenizer import Encoding

__all__ = ["Example", "read_tsv", "compare_logits", "evaluate", "reference_logits", "EvalReport", "LogitDrift"]


@dataclass
class LogitDrift:
    """How far ``logits`` moved from ``reference`` (both [N, C])."""

    agreement: float
    max_abs_logit_delta: float
    mean_abs_logit_delta: float
    mean_kl: float
    max_kl: float


def compare_logits(logits: np.ndarray, reference: np.ndarray) -> LogitDrift:
    """Label agreement and logit/probability drift. [N, C], [N, C] -> LogitDrift.

    KL is KL(p_reference || p_model) per row, natural log, averaged (and maxed) over rows.
    """
    a = np.asarray(logits, np.float64)
    r = np.asarray(reference, np.float64)
    if a.shape != r.shape or a.ndim != 2 or a.shape[0] == 0:
        raise DataError(f"logits {a.shape} and reference {r.shape} must be equal, non-empty [N, C] arrays")
    delta = np.abs(a - r)
    p, q = softmax(r), softmax(a)
    kl = np.sum(p * (np.log(np.clip(p, 1e-300, None)) - np.log(np.clip(q, 1e-300, None))), axis=1)
    return LogitDrift(
        agreement=float(np.mean(a.argmax(1) == r.argmax(1))),
        max_abs_logit_delta=float(delta.max()),
        mean_abs_logit_delta=float(delta.mean()),
        mean_kl=float(np.mean(np.maximum(kl, 0.0))),
        max_kl=float(np.max(np.maximum(kl, 0.0))),
    )


@dataclass
class EvalReport:
    """Result of :func:`evaluate`. ``confusion[true][pred]`` counts examples."""

    model: str
    data: str
    num_examples: int
    accuracy: float
    labels: list[str]
    confusion: dict[str, dict[str, int]]
    truncated: int
    reference: str | None = None
    reference_accuracy: float | None = None
    drift: LogitDrift | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """One line for logs and the CLI."""
        text = f"{self.model}: accuracy {self.accuracy:.4f} on {self.num_examples} examples of {self.data}"
        if self.drift is not None:
            d = self.drift
            text += (
                f"; vs {self.reference}: agreement {d.agreement:.4f}, max|dlogit| {d.max_abs_logit_delta:.3g}, "
                f"mean|dlogit| {d.mean_abs_logit_delta:.3g}, mean KL {d.mean_kl:.3g}"
            )
        return text


def _as_classifier(model: Any, num_threads: int | None, backend: str) -> TextClassifier:
    if isinstance(model, TextClassifier):
        return model
    if isinstance(model, (str, os.PathLike)):
        return TextClassifier.from_file(model, num_threads=num_threads, backend=backend)
    raise ModelFileError(f"model: expected a model file path or a TextClassifier, got {type(model).__name__}")


def _is_weights(obj: Any) -> bool:
    return hasattr(obj, "tensors") and hasattr(obj, "config")


def reference_logits(weights: Any, encodings: Sequence[Encoding], batch_size: int = 32) -> np.ndarray:
    """Logits of the numpy float64 reference for already-encoded inputs. -> [N, num_labels]."""
    from albert_edge.model import reference_forward

    if not encodings:
        raise DataError("reference_logits: no encodings")
    order = sorted(range(len(encodings)), key=lambda i: encodings[i].length)
    result: np.ndarray | None = None
    for start in range(0, len(order), batch_size):
        group = order[start : start + batch_size]
        width = max(encodings[i].length for i in group)
        ids = np.zeros((len(group), width), np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, i in enumerate(group):
            e = encodings[i]
            ids[row, : e.length] = e.input_ids[: e.length]
            types[row, : e.length] = e.token_type_ids[: e.length]
            mask[row, : e.length] = 1
        logits = reference_forward(weights, ids, mask, types).logits
        if logits is None:
            raise ModelFileError(f"{getattr(weights, 'source', 'weights')}: reference weights have no classifier head")
        if result is None:
            result = np.zeros((len(encodings), logits.shape[1]), np.float64)
        result[group] = logits
    return result  # type: ignore[return-value]  # set on the first (always present) batch


def evaluate(
    model: Any,
    data: str | os.PathLike[str] | Sequence[Example],
    reference: Any = None,
    batch_size: int = 32,
    num_threads: int | None = None,
    backend: str = "auto",
) -> EvalReport:
    """Score ``model`` (path or TextClassifier) on labelled ``data`` (TSV path or Examples).

    ``reference`` (optional): another model path / TextClassifier, or AlbertWeights run
    through the numpy reference; its labels must match the model's, in order.
    """
    clf = _as_classifier(model, num_threads, backend)
    labels = list(clf.labels)
    if isinstance(data, (str, os.PathLike)):
        examples = read_tsv(data, labels)
        data_name = str(data)
    else:
        examples = list(data)
        data_name = "<examples>"
        unknown = [e for e in examples if e.label not in labels]
        if unknown:
            raise DataError(f"{data_name}:{unknown[0].line}: unknown label {unknown[0].label!r}; the model's labels are {labels}")
    if not examples:
        raise DataError(f"{data_name}: no examples")
    paired = [e.text_b is not None for e in examples]
    if any(paired) and not all(paired):
        raise DataError(f"{data_name}: mixes single texts and pairs")
    texts = [e.text_a for e in examples]
    pairs = [e.text_b for e in examples] if all(paired) else None
    logits, encs = clf.logits_batch(texts, pairs, batch_size=batch_size)

    truth = np.array([labels.index(e.label) for e in examples])
    pred = logits.argmax(1)
    confusion = {t: {p: 0 for p in labels} for t in labels}
    for t, p in zip(truth, pred):
        confusion[labels[t]][labels[p]] += 1
    report = EvalReport(
        model=clf.source,
        data=data_name,
        num_examples=len(examples),
        accuracy=float(np.mean(pred == truth)),
        labels=labels,
        confusion=confusion,
        truncated=sum(e.truncated for e in encs),
        extra={"backend": clf.backend_name, "variant": clf.pack.variant},
    )
    if reference is None:
        return report
    if _is_weights(reference):
        ref_logits = reference_logits(reference, encs, batch_size)
        report.reference = f"numpy reference of {getattr(reference, 'source', 'weights')}"
    else:
        ref_clf = _as_classifier(reference, num_threads, "auto" if isinstance(reference, (str, os.PathLike)) else backend)
        if list(ref_clf.labels) != labels:
            raise ModelFileError(f"{ref_clf.source}: reference labels {list(ref_clf.labels)} differ from the model's {labels}")
        ref_logits, _ = ref_clf.logits_batch(texts, pairs, batch_size=batch_size)
        report.reference = ref_clf.source
    if ref_logits.shape != logits.shape:
        raise ModelFileError(f"{report.reference}: reference gives {ref_logits.shape[1]} logits, the model {logits.shape[1]}")
    report.reference_accuracy = float(np.mean(ref_logits.argmax(1) == truth))
    report.drift = compare_logits(logits, ref_logits)
    return report
