"""The sequential judge: a seeded subsample grows until the task's drift decides the budget.

No model is needed: ``run_values`` looks each row's logits up in a table per "model", so the tests
count exactly which rows each variant and fp32 were run on, and compare the verdict with the
all-rows judge of the same data.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.quantize.auto import budget_failures
from albert_edge.quantize.sequential_judge import SequentialJudge, judge_sizes
from albert_edge.tasks.metrics import Budget
from albert_edge.tasks.sequence_classification import classification_drift

ROWS = 1749  # the sample's dev.tsv


class _Rows:
    """Logits per model name for ``ROWS`` rows, and a count of the rows each model was run on."""

    def __init__(self, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        self.fp32 = rng.normal(size=(ROWS, 2)) * 3
        self.gold = self.fp32.argmax(-1).copy()
        self.gold[rng.choice(ROWS, 280, replace=False)] ^= 1  # fp32 is 84 % accurate, as the sample
        self.logits = {b"fp32": self.fp32}
        self.runs: dict[bytes, int] = {}

    def variant(self, name: bytes, flips: int, seed: int = 2) -> bytes:
        """A variant equal to fp32 except ``flips`` rows whose prediction it changes."""
        logits = self.fp32 + 0.01
        rows = np.random.default_rng(seed).choice(ROWS, flips, replace=False)
        logits[rows] = logits[rows][:, ::-1]
        self.logits[name] = logits
        return name

    def run_values(self, model: bytes, samples: list[dict]) -> np.ndarray:
        self.runs[model] = self.runs.get(model, 0) + len(samples)
        return self.logits[model][[s["row"] for s in samples]]

    def judge(self, budget: Budget, subsample: bool = True) -> SequentialJudge:
        samples = [{"row": i} for i in range(ROWS)]
        return SequentialJudge(samples, self.gold, b"fp32", budget, self.run_values, classification_drift,
                               subsample=subsample)


def test_stages_double_from_the_fewest_rows_that_could_decide_then_all_rows():
    assert judge_sizes(ROWS, Budget()) == [539, 1078, ROWS]
    assert judge_sizes(256, Budget()) == [256]  # fewer rows than could decide: all of them, as before
    assert judge_sizes(ROWS, Budget(max_drop=5.0, min_agreement=0.9))[0] < 539


def test_a_variant_equal_to_fp32_passes_on_the_first_stage_without_running_the_other_rows():
    rows = _Rows()
    drift = rows.judge(Budget()).judge(rows.variant(b"same", 0))
    assert drift.examples == 539 and not budget_failures_of(drift, Budget())
    assert rows.runs == {b"same": 539, b"fp32": 539}


def test_a_variant_far_from_fp32_is_rejected_on_the_first_stage():
    rows = _Rows()
    drift = rows.judge(Budget()).judge(rows.variant(b"far", 175))  # 10 % of predictions changed
    assert drift.examples == 539 and budget_failures_of(drift, Budget())


@pytest.mark.parametrize("flips", [0, 3, 9, 14, 18, 30, 175])
def test_the_verdict_is_the_all_rows_verdict(flips):
    rows = _Rows()
    budget = Budget()
    name = rows.variant(b"v", flips, seed=flips)
    sampled = rows.judge(budget).judge(name)
    full = rows.judge(budget, subsample=False).judge(name)
    assert full.examples == ROWS
    assert bool(budget_failures_of(sampled, budget)) == bool(budget_failures_of(full, budget))


def test_an_undecided_variant_is_judged_on_every_row_in_file_order_exactly_as_before():
    rows = _Rows()
    budget = Budget()
    name = rows.variant(b"edge", 14)  # 99.2 %: the bounds need every row
    drift = rows.judge(budget).judge(name)
    before = classification_drift(rows.logits[name], rows.fp32, rows.gold)
    assert drift.examples == ROWS
    assert drift == before  # the same figures and flip list, in the file's order


def test_fp32_runs_each_row_once_however_many_variants_are_judged():
    rows = _Rows()
    judge = rows.judge(Budget())
    for i, flips in enumerate((0, 14, 175, 16)):
        judge.judge(rows.variant(bytes([i]), flips, seed=i))
    assert rows.runs[b"fp32"] == ROWS


def test_a_drift_that_cannot_tell_when_rows_decide_is_judged_on_every_row():
    rows = _Rows()

    class _Opaque:
        def __init__(self, values, reference, gold):
            self.examples = len(values)

        def decided(self, budget):  # the TaskDrift default
            return False

    judge = SequentialJudge([{"row": i} for i in range(ROWS)], rows.gold, b"fp32", Budget(), rows.run_values,
                            _Opaque)
    assert judge.judge(rows.variant(b"same", 0)).examples == ROWS


def budget_failures_of(drift, budget):
    class _Result:
        error = None
        size_bytes = 0

    r = _Result()
    r.drift = drift
    return budget_failures(r, budget)


def test_judge_all_gives_the_all_rows_figures_of_a_variant_a_stage_decided():
    rows = _Rows()
    judge = rows.judge(Budget())
    name = rows.variant(b"same", 0)
    assert judge.judge(name).examples < ROWS
    assert judge.judge_all(name) == classification_drift(rows.logits[name], rows.fp32, rows.gold)
    assert rows.runs[name] == ROWS  # the first stage's rows are not run again


def test_the_reference_is_judged_on_every_row_from_its_own_values_run_once():
    rows = _Rows()
    judge = rows.judge(Budget())
    drift = judge.judge(b"fp32")
    assert drift.examples == ROWS and drift.agreement == 1.0 and drift.accuracy_drop == 0
    judge.judge(rows.variant(b"same", 0))
    assert rows.runs == {b"fp32": ROWS, b"same": 539}


def test_a_variant_prefetched_before_fp32_exists_gets_the_same_verdict_running_each_row_once():
    rows = _Rows()
    name = rows.variant(b"same", 0)
    judge = SequentialJudge([{"row": i} for i in range(ROWS)], rows.gold, None, Budget(), rows.run_values,
                            classification_drift)
    judge.prefetch(name)  # the converter child has not handed fp32 over yet
    assert rows.runs == {b"same": 539}
    judge.reference_model = b"fp32"
    other = _Rows()
    assert judge.judge(name) == other.judge(Budget()).judge(other.variant(b"same", 0))
    assert rows.runs == {b"same": 539, b"fp32": 539}  # no row run twice


def test_fp32_filled_in_pieces_runs_every_row_once_and_changes_no_verdict():
    rows = _Rows()
    judge = rows.judge(Budget())
    name = rows.variant(b"edge", 14, seed=3)
    pieces = 0
    while judge.extend_reference(500):
        pieces += 1
    assert pieces == 4 and rows.runs == {b"fp32": ROWS}  # 500, 1000, 1500, 1749 rows
    assert not judge.extend_reference(500)
    other = _Rows()
    assert judge.judge(name) == other.judge(Budget()).judge(other.variant(b"edge", 14, seed=3))
    assert judge.judge(b"fp32").examples == ROWS and rows.runs[b"fp32"] == ROWS
