"""Judge a variant on a seeded subsample of the judge set that grows until the budget is decided.

Judging every variant on every row made quantize's time grow with variants x rows x model FLOPs
(issue #36: 10-49 s per variant on the sample's 1,749 dev rows; #39: a BERT-base-sized model did
not finish). Most variants are clearly inside or clearly outside the budget long before the last
row: a Wilson bound over a few hundred rows already says so. So the rows are visited in one seeded
order, in stages that double (``judge_sizes``); after each stage the task's drift says whether the
rows seen decide the budget (``TaskDrift.decided``: a classifier's agreement bounds, see
``ClassificationDrift.decided``); only an undecided variant goes on, and at the last stage it is
judged on every row exactly as before. The fp32 reference is computed once per row, on demand.

The verdict kind is unchanged (passes, rejected, not judged): a task whose drift cannot say when a
subsample decides (the default ``decided`` is False) is judged on all rows, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from albert_edge.tasks.metrics import Budget, min_judge_rows

__all__ = ["JUDGE_SEED", "SequentialJudge", "judge_sizes"]

#: Seed of the row order: the same judge set is visited in the same order on every run.
JUDGE_SEED = 0


def judge_sizes(rows: int, budget: Budget) -> list[int]:
    """Row counts of the judging stages over ``rows``: doubling from the fewest that could decide, then all.

    The first stage is the fewest rows on which a perfect agreement can show both the agreement
    gate and (since an accuracy drop never exceeds the disagreement) the accuracy budget: with
    99 % and 0.5 points at 95 % confidence, 539 rows. Fewer could only ever be "undecided".
    """
    gate = max(budget.min_agreement, 1.0 - budget.max_drop / 100.0)
    first = min_judge_rows(min(gate, 1.0 - 1e-6), budget.confidence)
    sizes, n = [], max(1, first)
    while n < rows:
        sizes.append(n)
        n *= 2
    return sizes + [rows]


class _NotPerRow(Exception):
    """The task's judged values are not one row per sample."""


@dataclass
class SequentialJudge:
    """The judge set in its seeded order, the fp32 reference computed so far, and the stage sizes.

    ``run_values(model, samples)`` -> ``[len(samples), D]`` judged values (``measure.variant_values``);
    ``make_drift(values, reference, gold)`` -> the task's drift. ``judge(model)`` returns the drift on
    the first stage that decides ``budget`` (every row when none does).
    """

    samples: Sequence[Mapping[str, np.ndarray]]
    gold: np.ndarray | None
    #: fp32's bytes; None until the converter hands them over (``prefetch`` needs none).
    reference_model: bytes | None
    budget: Budget
    run_values: Callable[[bytes, Sequence[Mapping[str, np.ndarray]]], np.ndarray]
    make_drift: Callable[[np.ndarray, np.ndarray, np.ndarray | None], Any]
    subsample: bool = True
    seed: int = JUDGE_SEED
    _reference: np.ndarray | None = field(default=None, init=False, repr=False)
    #: Each judged model's values on the rows run so far (``judge_all`` runs only the rest).
    _seen: dict[bytes, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        rows = len(self.samples)
        self.order = np.random.default_rng(self.seed).permutation(rows) if self.subsample else np.arange(rows)
        self.sizes = judge_sizes(rows, self.budget) if self.subsample else [rows]

    def reference(self, n: int) -> np.ndarray:
        """fp32's values on the first ``n`` rows of the order (each row run once per judge)."""
        have = 0 if self._reference is None else len(self._reference)
        if n > have:
            assert self.reference_model is not None, "the reference model is set before any verdict"
            more = self._run(self.reference_model, self.order[have:n])
            self._reference = more if self._reference is None else np.concatenate([self._reference, more])
        assert self._reference is not None
        return self._reference[:n]

    @property
    def reference_rows(self) -> int:
        """How many rows of the order fp32 has been run on so far."""
        return 0 if self._reference is None else len(self._reference)

    def prefetch(self, model: bytes) -> None:
        """Run ``model`` on the first stage's rows now, before fp32 exists: quantize does this while the
        converter child still converts fp32, so the later verdict costs only fp32's rows. A model that
        cannot run is left for ``judge`` to report."""
        if not self.subsample:
            return
        try:
            self._values(model, self.sizes[0])
        except _NotPerRow:
            self._judge_whole()
        except (RuntimeError, ValueError):
            pass

    def extend_reference(self, rows: int) -> bool:
        """Run fp32 on up to ``rows`` more rows of the order; False when it has run on all of them.

        Why: the chosen variant is confirmed on every row, so fp32's values on every row are needed in
        the end; computed in pieces while quantize waits for the converter child, they cost no wall
        time at the end, and a verdict never waits for rows it did not ask for (record 0250)."""
        have = self.reference_rows
        if not self.subsample or self.reference_model is None or have >= len(self.samples):
            return False
        try:
            self.reference(min(len(self.samples), have + max(1, rows)))
        except _NotPerRow:
            self._judge_whole()
            return False
        return True

    def judge(self, model: bytes) -> Any:
        """The task's drift of ``model`` on the first stage whose rows decide the budget (or on all rows).

        The reference itself is judged on every row from its cached values (no second run): its
        accuracy is the baseline every report line is read against, so it is never a subsample's."""
        if not self.subsample:
            return self._whole_drift(model)
        try:
            if model is self.reference_model or model == self.reference_model:
                return self._drift(self.reference(len(self.samples)), len(self.samples))
            drift = None
            for n in self.sizes:
                drift = self._drift(self._values(model, n), n)
                if n == len(self.samples) or drift.decided(self.budget):
                    return drift
            return drift
        except _NotPerRow:
            self._judge_whole()
            return self._whole_drift(model)

    def judge_all(self, model: bytes) -> Any:
        """The task's drift of ``model`` on every row (the figures a chosen variant is reported with);
        the rows ``judge`` already ran are not run again."""
        if not self.subsample:
            return self._whole_drift(model)
        try:
            return self._drift(self._values(model, len(self.samples)), len(self.samples))
        except _NotPerRow:
            self._judge_whole()
            return self._whole_drift(model)

    def _run(self, model: bytes, rows: Sequence[int]) -> np.ndarray:
        """``run_values`` on ``rows``; a task whose values are not one row per sample (QA and NER give one
        per token) cannot be subsampled or reordered by sample, which ``_NotPerRow`` says."""
        values = self.run_values(model, [self.samples[i] for i in rows])
        if len(values) != len(rows):
            raise _NotPerRow
        return values

    def _judge_whole(self) -> None:
        """From now on every model is judged on all samples in the file's order, as before subsampling."""
        self.subsample, self.order, self.sizes = False, np.arange(len(self.samples)), [len(self.samples)]
        self._reference, self._seen = None, {}

    def _whole_drift(self, model: bytes) -> Any:
        """The drift on every sample in the file's order (values of any shape, run once per model)."""
        for key in (self.reference_model, model):
            if key not in self._seen:
                self._seen[key] = self.run_values(key, list(self.samples))
        return self.make_drift(self._seen[model], self._seen[self.reference_model], self.gold)


    def _values(self, model: bytes, n: int) -> np.ndarray:
        """``model``'s values on the first ``n`` rows of the order, running only the rows not run yet."""
        values = self._seen.get(model)
        have = 0 if values is None else len(values)
        if n > have:
            more = self._run(model, self.order[have:n])
            values = more if values is None else np.concatenate([values, more])
            self._seen[model] = values
        assert values is not None
        return values[:n]

    def _drift(self, values: np.ndarray, n: int) -> Any:
        """The drift over the first ``n`` rows; on all rows in the file's own order (as before subsampling)."""
        rows = self.order[:n]
        reference = self.reference(n)
        if n == len(self.samples):
            back = np.argsort(self.order)  # each row's place in the order
            # Every row, in the file's order: the gold goes to the task as it came (a QA judge's gold is per
            # question while its rows are windows, so it is never indexed by rows).
            return self.make_drift(values[back], reference[back], self.gold)
        gold = None if self.gold is None else np.asarray(self.gold)[rows]
        return self.make_drift(values, reference, gold)
