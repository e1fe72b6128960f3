"""quantize's timing run stops when the verdict is decided: the variants within budget known within
the speed tie band, the others timed for the minimum rounds only. Fake backends with fixed costs
stand in for interpreters (what is counted is rounds, never seconds)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from albert_edge.quantize import measure
from albert_edge.quantize.measure import StopRule, interleaved_latency, median_interval


class _Backend:
    """Each run 'takes' the next duration of ``pattern`` on a fake clock; counts its runs."""

    clock = [0.0]

    def __init__(self, pattern: list[float]) -> None:
        self.durations = itertools.cycle(pattern)
        self.runs = 0

    def run(self, inputs) -> None:
        self.runs += 1
        self.clock[0] += next(self.durations)


@pytest.fixture
def backends(monkeypatch):
    made: dict[str, _Backend] = {}
    patterns = {"fp32": [0.010], "steady": [0.004], "noisy": [0.002, 0.008, 0.003, 0.009, 0.002],
                "failing": [0.005]}
    monkeypatch.setattr(measure, "_timing_backend", lambda data, name, threads: made.setdefault(name, _Backend(patterns[name])))
    monkeypatch.setattr(measure.time, "perf_counter", lambda: _Backend.clock[0])
    return made


def _models(*names: str) -> dict[str, bytes]:
    return {name: b"" for name in names}


def test_without_a_rule_every_round_runs_every_model(backends):
    out = interleaved_latency(_models("fp32", "steady", "failing"), {}, rounds=12, warmup=0, burst=1)
    assert {name: v["rounds"] for name, v in out.items()} == {"fp32": 12, "steady": 12, "failing": 12}


def test_a_steady_variant_within_budget_stops_the_run_after_the_minimum_rounds(backends):
    rule = StopRule("fp32", frozenset({"steady"}), band=0.05, min_rounds=5)
    out = interleaved_latency(_models("fp32", "steady", "failing"), {}, rounds=30, warmup=0, burst=1, stop=rule)
    assert out["fp32"]["rounds"] == out["steady"]["rounds"] == 5
    assert out["steady"]["median_ms"] == pytest.approx(4.0)


def test_a_noisy_variant_within_budget_keeps_the_run_going_to_the_cap_and_the_rest_leave_early(backends):
    rule = StopRule("fp32", frozenset({"noisy"}), band=0.05, min_rounds=5)
    out = interleaved_latency(_models("fp32", "noisy", "failing"), {}, rounds=20, warmup=0, burst=1, stop=rule)
    assert out["fp32"]["rounds"] == out["noisy"]["rounds"] == 20  # never known within 5 %: the cap, as before
    assert out["failing"]["rounds"] == 5 and backends["failing"].runs == 5  # cannot change the verdict


def test_the_median_interval_narrows_with_rounds_and_holds_the_median():
    rng = np.random.default_rng(0)
    few, many = rng.normal(1.0, 0.05, 9), rng.normal(1.0, 0.05, 400)
    lo9, hi9 = median_interval(few)
    lo, hi = median_interval(many)
    assert lo9 <= np.median(few) <= hi9 and lo <= np.median(many) <= hi
    assert hi - lo < (hi9 - lo9) / 3
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) == (1.0, 5.0)  # five rounds: the whole range
