"""Sequence classification: tanh pooler on [CLS], then a linear layer to one logit per label.

Head weights (canonical names): ``pooler.kernel`` [H, H], ``pooler.bias`` [H],
``classifier.kernel`` [H, num_labels], ``classifier.bias`` [num_labels]. The signature's one output
is ``logits`` [batch, num_labels]; post-processing is a softmax and an argmax (runtime
``TextClassifier``). Drift is label agreement, accuracy drop and |Δlogit| against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from albert_edge.model.skeleton import POOLER_SITE, pooler_activation
from albert_edge.tasks.base import ClassifierHeadTask, Column, TaskDrift, as_rows, check_same_shape
from albert_edge.tasks.eval_format import EvalFormat, Samples
from albert_edge.tasks.metrics import (
    Budget,
    agreement_lower_bound,
    agreement_upper_bound,
    min_judge_rows,
    near_tie_accounting,
    too_few_rows,
)
from albert_edge.tokenizer import batch_one


#: Upper edges (fp32 top-1 minus top-2 logit) of the buckets the report counts disagreements in.
MARGIN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0)


@dataclass
class ClassificationDrift(TaskDrift):
    """Drift of a classifier against the baseline's logits on the same inputs.

    ``accuracy`` is None without labels; ``accuracy_drop`` is then bounded by the disagreement
    (a prediction that agrees with the baseline cannot change accuracy), in percentage points.
    ``flip_margins`` holds, for every row whose prediction differs from the baseline's, the
    baseline's own margin (top-1 minus top-2 logit): a flip of a row the baseline itself calls a
    near tie is rounding noise, a flip of a confident row is damage. The agreement gate reads it
    (``agreement_verdict``).
    """

    examples: int
    agreement: float
    max_abs_logit: float
    mean_abs_logit: float
    accuracy: float | None
    accuracy_drop: float
    flip_margins: list[float] = field(default_factory=list)
    #: Baseline margins of all rows, kept only to count the rows at or above a tie margin.
    margins: list[float] = field(default_factory=list, repr=False)

    columns: ClassVar[tuple[Column, ...]] = (
        Column("rows", "examples", "d"), Column("acc", "accuracy", ".4f"), Column("drop pt", "accuracy_drop", ".2f"),
        Column("agree %", "agreement", ".1f", percent=True),
        Column("near-tie flips", "near_ties.near_tie_changes", "d"),
        Column("sure agree %", "near_ties.confident_agreement", ".1f", percent=True),
        Column("max|dlogit|", "max_abs_logit", ".4f"))

    def relax_hints(self, budget: Budget) -> list[str]:
        what = []
        if self.accuracy_drop > budget.max_drop + 1e-9:
            what.append(f"--max-drop {math.ceil(self.accuracy_drop * 100) / 100:g}")
        if not self.agreement_verdict(budget)[0]:
            bound = agreement_lower_bound(self.agreement, self.examples, budget.confidence)
            what.append(f"--min-agreement {math.floor(bound * 1000) / 1000:g} (or judge on more --eval rows)")
        return what

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["margins"]
        d["flip_margins"] = [round(m, 4) for m in self.flip_margins]
        d["flips_by_margin"] = flips_by_margin(self.flip_margins)
        if self.margins:
            d["near_ties"] = near_tie_accounting(self.flip_margins, self.margins)
        return d

    def decisive(self, tie_margin: float) -> tuple[int, int]:
        """(rows whose baseline margin is at least ``tie_margin``, how many of them flipped)."""
        rows = sum(1 for m in self.margins if m >= tie_margin) if self.margins else self.examples
        return rows, sum(1 for m in self.flip_margins if m >= tie_margin)

    def agreement_verdict(self, budget: Budget) -> tuple[bool, str]:
        """(agreement gate passed, the rule that decided and its figures).

        Rule 1, all rows: the one-sided Wilson lower bound of the agreement over every judged row
        reaches ``budget.min_agreement``. Rule 2, near ties excused (only when rule 1 fails and
        ``budget.tie_margin`` > 0): the same bound over the rows the baseline does not call a near
        tie (margin >= ``tie_margin``) reaches it; flips of near-tie rows are listed, not counted.
        Either rule needs at least ``min_judge_rows(min_agreement, confidence)`` rows: fewer cannot
        show the agreement even with no flip at all.
        """
        need = min_judge_rows(budget.min_agreement, budget.confidence)
        bound = agreement_lower_bound(self.agreement, self.examples, budget.confidence)
        if bound >= budget.min_agreement - 1e-9:
            return True, (f"all rows: {100 * self.agreement:.2f}% of {self.examples} (lower bound {100 * bound:.2f}%)")
        tie = getattr(budget, "tie_margin", 0.0)
        text = (f"agreement {100 * self.agreement:.2f}% of {self.examples} (lower bound {100 * bound:.2f}% at "
                f"{100 * budget.confidence:g}% confidence) < {100 * budget.min_agreement:g}%")
        if self.examples < need:
            return False, f"{text}; {self.examples} rows < the {need} needed to show it"
        if tie > 0 and self.margins:
            rows, flips = self.decisive(tie)
            near = len(self.flip_margins) - flips
            share = (rows - flips) / rows if rows else 0.0
            decisive_bound = agreement_lower_bound(share, rows, budget.confidence)
            if rows >= need and decisive_bound >= budget.min_agreement - 1e-9:
                return True, (f"near ties excused: {near} of {len(self.flip_margins)} flips had fp32 margin < {tie:g}; "
                              f"{100 * share:.2f}% of the other {rows} rows (lower bound {100 * decisive_bound:.2f}%)")
            return False, (f"{text}; without the {near} near-tie flips (margin < {tie:g}): {100 * share:.2f}% of "
                           f"{rows} (lower bound {100 * decisive_bound:.2f}%)")
        return False, text

    def budget_failures(self, budget: Budget) -> list[str]:
        reasons = []
        if self.accuracy_drop > budget.max_drop + 1e-9:
            reasons.append(f"accuracy drop {self.accuracy_drop:.2f} pt > {budget.max_drop:g}")
        ok, why = self.agreement_verdict(budget)
        if not ok:
            reasons.append(why)
        return reasons

    def unjudged(self, budget: Budget) -> str | None:
        """Too few rows for the agreement gate (``metrics.too_few_rows``) and no measured accuracy drop
        beyond ``max_drop``: these rows cannot accept the variant, nor do they show it misses."""
        if self.accuracy_drop > budget.max_drop + 1e-9:
            return None
        return too_few_rows(budget, self.agreement, self.examples)

    def decided(self, budget: Budget) -> bool:
        """Whether these rows (a subsample) decide ``budget`` at its confidence, either way.

        Passes: the agreement gate passes (``agreement_verdict``) and the Wilson upper bound of the
        disagreement, which bounds any accuracy drop (a prediction equal to fp32's cannot change
        accuracy), is within ``max_drop``. Fails: the agreement's Wilson upper bound is below
        ``min_agreement``, over all rows and (when near ties are excused) over the decisive rows
        too, so neither rule of the gate could pass on more rows.
        """
        lower = agreement_lower_bound(self.agreement, self.examples, budget.confidence)
        if self.agreement_verdict(budget)[0] and 100.0 * (1.0 - lower) <= budget.max_drop + 1e-9:
            return True
        if agreement_upper_bound(self.agreement, self.examples, budget.confidence) >= budget.min_agreement - 1e-9:
            return False
        if getattr(budget, "tie_margin", 0.0) > 0 and self.margins:
            rows, flips = self.decisive(budget.tie_margin)
            share = (rows - flips) / rows if rows else 0.0
            return agreement_upper_bound(share, rows, budget.confidence) < budget.min_agreement - 1e-9
        return True

    def shortfall(self, budget: Budget) -> float:
        """How far from ``budget``, in points: accuracy lost beyond max_drop plus, when the agreement
        gate fails (``agreement_verdict``), the points its Wilson lower bound misses; 0 when it passes."""
        drop = self.accuracy_drop - budget.max_drop if self.accuracy_drop > budget.max_drop + 1e-9 else 0.0
        if self.agreement_verdict(budget)[0]:
            return drop
        bound = agreement_lower_bound(self.agreement, self.examples, budget.confidence)
        return drop + 100 * max(0.0, budget.min_agreement - bound)

    def summary(self) -> str:
        return f"drop {self.accuracy_drop:.2f} pt, agreement {100 * self.agreement:.1f}%"


def flips_by_margin(flip_margins: list[float]) -> dict[str, int]:
    """Disagreements counted by the baseline's margin: ``"<0.05"``, ``"<0.1"``, ... ``">=1"``."""
    counts = {f"<{edge:g}": 0 for edge in MARGIN_BUCKETS}
    counts[f">={MARGIN_BUCKETS[-1]:g}"] = 0
    for m in flip_margins:
        key = next((f"<{e:g}" for e in MARGIN_BUCKETS if m < e), f">={MARGIN_BUCKETS[-1]:g}")
        counts[key] += 1
    return counts


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
    top2 = np.sort(reference, axis=-1)[:, -2:] if reference.shape[-1] > 1 else np.zeros((len(reference), 2))
    margins = (top2[:, 1] - top2[:, 0]).astype(float)
    return ClassificationDrift(len(pred), agreement, float(delta.max()), float(delta.mean()), accuracy, drop,
                               [float(m) for m in margins[pred != ref_pred]], [float(m) for m in margins])


class TsvEvalFormat(EvalFormat):
    """A sentence classifier's eval file: always a labelled TSV (``data.read_tsv``), whatever its suffix."""

    labelled_kind: ClassVar[str] = "labelled eval TSV"
    unlabelled_kind: ClassVar[str] = "unlabelled: accuracy drop bounded by disagreement"

    def reads_labelled(self, path: Any) -> bool:
        """Every eval file of a sentence classifier is a labelled TSV (``data.read_tsv``); a ``.jsonl``
        (another task's eval file) is refused here, naming the format, not as "got 1 column"."""
        if str(path).lower().endswith(".jsonl"):
            from albert_edge.errors import DataError

            raise DataError(f"{path}: a JSON lines file, but a sentence classifier's --eval is a label<TAB>text "
                            "TSV (label<TAB>text_a<TAB>text_b for pairs)")
        return True

    def labels_from_eval(self, path: Any) -> list[str] | None:
        """The TSV's distinct labels, sorted: the class order the project's fine-tuning assigns."""
        from albert_edge.inputs.data import infer_labels, read_tsv

        return list(infer_labels(read_tsv(path)))

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int, labels: tuple[str, ...] | None = None,
                         max_examples: int | None = None) -> Samples | None:
        """``label<TAB>text[<TAB>text_b]`` rows: batch-1 samples and class ids in ``labels``' order."""
        from albert_edge.inputs.data import label_ids, read_tsv
        from albert_edge.errors import AlbertEdgeError, DataError
        from albert_edge.tokenizer import Preprocessor

        if labels is None:
            raise DataError(f"{path}: judging accuracy needs the model's label names")
        examples = read_tsv(path, labels)[:max_examples]
        preprocessor = Preprocessor(tokenizer, max_seq_len)
        samples = []
        for number, ex in enumerate(examples, start=1):
            try:
                samples.append(batch_one(preprocessor.encode(ex.text_a, ex.text_b)))
            except AlbertEdgeError as exc:
                where = f"{path}:{ex.line}" if getattr(ex, "line", 0) else f"{path}: example {number}"
                raise DataError(f"{where}: {exc}") from None
        return samples, label_ids(examples, labels)


class SequenceClassification(ClassifierHeadTask):
    """Logits per label for a text or a text pair."""

    name: ClassVar[str] = "sequence_classification"
    pipeline_tag: ClassVar[str | None] = "text-classification"
    head_prefixes: ClassVar[tuple[str, ...]] = ("pooler.", "classifier.")
    required_weights: ClassVar[tuple[str, ...]] = ("pooler.kernel", "pooler.bias", "classifier.kernel",
                                                   "classifier.bias")
    # fp32 is the contract; fp16 stores weights rounded to 11 significant bits, which moves
    # ALBERT-Tiny logits by ~1e-3. Hidden states of a trained model are larger than random ones
    # (post-LN gamma grows in training): the trained sample's fp16 file moved them by 3.2e-2 while
    # its logits moved by 4.4e-4, so the hidden bound is looser than the logit bound.
    tolerances: ClassVar[dict[str, dict[str, float]]] = {
        "fp32": {"logits": 1e-4, "hidden": 1e-4},
        "fp16": {"logits": 2e-2, "hidden": 6e-2},
    }
    eval_format: ClassVar[EvalFormat] = TsvEvalFormat()

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return "classifier.kernel" in weights.tensors

    def outputs(self) -> tuple[str, ...]:
        return ("logits",)

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        return {"logits": ["batch", self.num_labels(weights)]}

    def head(self, ops: Any, sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """BERT's pooler (tanh of a dense layer on [CLS]; DistilBERT's ReLU, ELECTRA's GELU), dropout
        while training, the classifier."""
        pooled = ops.dropout(pooler_activation(ops, ops.dense(ops.first_token(sequence), "pooler")), POOLER_SITE)
        return {"logits": ops.named(ops.dense(pooled, "classifier"), "logits")}

    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        return {"logits": reference.logits, "hidden": reference.last_hidden_state}

    @property
    def parity_required(self) -> tuple[str, ...]:
        return ("logits",)

    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        return as_rows(outputs["logits"])

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> ClassificationDrift:
        return classification_drift(values, baseline, labels)

    def interpret(self, outputs: Mapping[str, np.ndarray], labels: Sequence[str] | None) -> dict[str, Any]:
        """The top label, its softmax probability and every label's, for one row."""
        logits = np.asarray(outputs["logits"], dtype=np.float64)[0]
        p = np.exp(logits - logits.max())
        p /= p.sum()
        names = list(labels) if labels is not None else [f"LABEL_{i}" for i in range(len(p))]
        top = int(p.argmax())
        return {"label": names[top], "score": float(p[top]), "scores": {n: float(v) for n, v in zip(names, p)}}
