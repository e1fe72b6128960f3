"""report.md's real-length section: the ratio's interval, issue #29's goal verdict, and the measured floor."""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.bench_latency.real_length import fit_line, real_length_cost, real_length_section
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.bench_latency.stats import paired_ratio, unpaired_ratio
from albert_edge.errors import DataError


def _row(seq_len, p50: float, rounds: int = 12, spread: float = 0.02, variant: str = "int8", threads: int = 2,
         median_length: float = 46.0, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    medians = [float(p50 * (1 + spread * x)) for x in rng.uniform(-1, 1, rounds)]
    return {"variant": variant, "backend": "litert", "threads": threads, "seq_len": seq_len, "batch": 1,
            "source": "host", "latency_ms": {"median": float(np.median(medians)), "mean": float(np.mean(medians))},
            "round_medians_ms": medians,
            "lengths": {"min": 5, "median": median_length, "p90": 128.0, "max": 128, "examples": 500}
            if seq_len == "real" else None}


def _fixed(a: float, b: float, lengths=(16, 32, 64, 128), **kw) -> list[dict]:
    return [_row(n, a + b * n, seed=n, **kw) for n in lengths]


def _report(rows: list[dict]) -> BenchReport:
    return BenchReport(settings={}, machine={}, results=rows)


def test_the_fixed_cost_and_the_new_shape_cost_are_read_back_from_the_rows():
    fixed = _fixed(1.0, 0.05, spread=0.0)
    real = _row("real", 1.0 + 0.05 * 46 + 1.2, spread=0.0)
    cost = real_length_cost(real, fixed, 128)
    assert cost.fixed_ms == pytest.approx(1.0) and cost.per_token_ms == pytest.approx(0.05)
    assert cost.new_shape_ms == pytest.approx(1.2)
    assert cost.stable_shape_ratio == pytest.approx((1 + 0.05 * 46) / (1 + 0.05 * 128))
    assert cost.proportional_ratio == pytest.approx(46 / 128)
    assert cost.ratio.ratio == pytest.approx(4.5 / 7.4)
    assert cost.goal(128) == "not met" and cost.fit_lengths == (16, 32, 64, 128)


def test_the_section_says_not_met_and_names_the_floor():
    rows = [*_fixed(1.0, 0.05, spread=0.0), _row("real", 4.5, spread=0.0)]
    md = "\n".join(real_length_section(_report(rows)))
    assert "## Real lengths vs padding to 128" in md and "Goal (issue #29, batch 1): <= 0.40x" in md
    line = next(x for x in md.splitlines() if x.startswith("| int8 |"))
    assert "| not met |" in line and "12 rounds" in line
    assert "what sets the floor" in md and "a call costs 1 ms whatever its length" in md and "a new shape costs 1.2" in md
    assert "without either 0.36x (median length / 128)" in md


def test_a_ratio_whose_interval_is_below_the_goal_is_met_and_needs_no_floor():
    rows = [*_fixed(0.2, 0.05), _row("real", 0.2 + 0.05 * 40)]
    md = "\n".join(real_length_section(_report(rows)))
    assert "| met |" in md and "what sets the floor" not in md


def test_an_interval_that_spans_the_goal_is_undecided():
    full = 1.0 + 0.05 * 128
    rows = [*_fixed(1.0, 0.05), _row("real", 0.40 * full, spread=0.3)]
    assert "| undecided |" in "\n".join(real_length_section(_report(rows)))


def test_without_fixed_lengths_besides_the_longest_only_the_ratio_is_given():
    rows = [_row(128, 7.4), _row("real", 4.5)]
    md = "\n".join(real_length_section(_report(rows)))
    line = next(x for x in md.splitlines() if x.startswith("| int8 |"))
    assert "| not met | – | – |" in line and "what sets the floor" not in md


def test_the_goal_is_judged_only_against_128():
    rows = [*_fixed(1.0, 0.05, lengths=(8, 16, 64)), _row("real", 2.0)]
    md = "\n".join(real_length_section(_report(rows)))
    assert "## Real lengths vs padding to 64" in md and "goal is vs 128" in md


def test_no_section_without_a_real_length_row():
    assert real_length_section(_report(_fixed(1.0, 0.05))) == []


def test_fit_line_needs_two_distinct_lengths():
    assert fit_line([(16, 1.0)]) is None and fit_line([(16, 1.0), (16, 2.0)]) is None
    a, b, residual = fit_line([(16, 2.0), (32, 3.0), (64, 5.0)])
    assert a == pytest.approx(1.0) and b == pytest.approx(1 / 16) and residual == pytest.approx(0.0, abs=1e-9)


def test_unpaired_ratio_interval_is_wider_than_the_paired_one_on_a_shared_drift():
    # A load that moves both sides together: pairing cancels it, independent resampling cannot.
    drift = np.linspace(1.0, 2.0, 20)
    top, bottom = 0.5 * drift, 1.0 * drift
    paired = paired_ratio(top, bottom)
    unpaired = unpaired_ratio(top, bottom)
    assert paired.ratio == pytest.approx(0.5) and paired.high - paired.low < 1e-9
    assert unpaired.low < 0.5 < unpaired.high and unpaired.high - unpaired.low > 0.1
    assert unpaired.round_ratios == () and unpaired.rounds == 20


def test_unpaired_ratio_gives_no_interval_under_five_rounds_and_refuses_empty_sides():
    few = unpaired_ratio([1.0, 1.1], [2.0, 2.1, 2.2])
    assert not few.has_interval and few.rounds == 2 and "no interval" in few.text()
    with pytest.raises(DataError, match="at least one round"):
        unpaired_ratio([], [1.0])


def test_rows_that_do_not_fit_a_line_give_only_the_ratio_and_say_why():
    # Timed in separate rounds under a load that rose: the short lengths look cheap, so the intercept
    # comes out negative and a "fixed cost" from it would be fiction.
    rows = [_row(16, 0.4), _row(32, 0.9), _row(64, 3.0), _row(128, 13.0), _row("real", 6.5)]
    cost = real_length_cost(rows[-1], rows[:-1], 128)
    assert cost.fixed_ms is None and cost.new_shape_ms is None and "gives a = -" in cost.unfit
    md = "\n".join(real_length_section(_report(rows)))
    line = next(x for x in md.splitlines() if x.startswith("| int8 |"))
    assert line.endswith("| – | – |") and "no split into fixed and per-token cost" in md
    assert "Without the new-shape cost" not in md and "(int8 (litert, 2 threads, host)" not in md


def test_a_ratio_measured_under_contention_says_so_in_the_goal_cell():
    rows = [*_fixed(1.0, 0.05), _row("real", 4.5)]
    rows[-1]["contention"] = {"contended": True}
    md = "\n".join(real_length_section(_report(rows)))
    assert "| not met (under contention) |" in md and "int8 (litert, 2 threads, host)" in md
