"""quantize's paired time ratio when a variant left the timing early (found by the docs test, #38).

A variant outside the budget stops being timed after a few rounds while fp32 goes on; dividing the
two round lists then failed with "operands could not be broadcast" (exit 1, `quantize --mode auto`
on a small checkpoint). Only the rounds both were timed in are paired.
"""

from __future__ import annotations

from albert_edge.quantize.measure import ratio_interval


def test_a_variant_that_left_early_is_paired_on_its_own_rounds() -> None:
    variant = [2.0, 2.2, 1.8, 2.0, 2.1]
    baseline = [1.0, 1.1, 0.9, 1.0, 1.05] + [1.0] * 25
    result = ratio_interval(variant, baseline)
    assert result["rounds"] == 5 and result["ratio"] == 2.0
    assert result["low"] is not None and result["low"] <= 2.0 <= result["high"]


def test_equal_round_counts_use_every_round() -> None:
    assert ratio_interval([1.0] * 30, [2.0] * 30) == {"ratio": 0.5, "low": 0.5, "high": 0.5, "rounds": 30}
