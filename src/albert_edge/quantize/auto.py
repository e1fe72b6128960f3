"""The accuracy-aware choice: the fastest quantized variant whose drift fits the budget.

Pure decisions over measured results (``Budget`` itself is ``albert_edge.tasks.metrics``'s: each
task's drift reads it), so the policy is testable without converting a model.
The search itself (which variants to build, which ops to fall back) lives in ``pipeline``;
this module says whether a variant meets the budget, why not, and which one wins.
"""

from __future__ import annotations

from typing import Any, Sequence

from albert_edge.tasks.metrics import Budget, agreement_lower_bound

__all__ = ["Budget", "agreement_lower_bound", "best_effort", "budget_failures", "choose", "fallback_steps"]


def budget_failures(result: Any, budget: Budget) -> list[str]:
    """Why ``result`` (a VariantResult) misses ``budget``; empty when it meets it."""
    if result.error:
        return [f"not runnable: {result.error}"]
    d = result.drift
    if d is None:
        return ["no drift measured"]
    reasons = d.budget_failures(budget)  # the task's own metrics (albert_edge.tasks)
    if budget.max_size_bytes is not None and result.size_bytes > budget.max_size_bytes:
        reasons.append(f"size {result.size_bytes / 1e6:.2f} MB > {budget.max_size_bytes / 1e6:.2f} MB")
    return reasons


def choose(results: Sequence[Any], budget: Budget) -> tuple[Any | None, list[str]]:
    """(fastest quantized result meeting ``budget`` or None, decision log lines).

    Speed is the median latency ratio against fp32 measured in the same run; results without a
    latency (not runnable) never win. fp32 (TFLite or ONNX) is the reference, never a candidate.
    """
    log: list[str] = []
    ranked = sorted((r for r in results if r.name != "fp32" and r.ratio_vs_fp32 is not None),
                    key=lambda r: r.ratio_vs_fp32)
    chosen = None
    for r in ranked:
        failures = budget_failures(r, budget)
        label = f"{r.format} {r.name}"
        if failures:
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32 but rejected: {'; '.join(failures)}")
        elif chosen is None:
            chosen = r
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32, {r.drift.summary()}, "
                       f"{r.size_bytes / 1e6:.2f} MB: fastest within budget, CHOSEN")
        else:
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32, within budget but slower than {chosen.name}")
    for r in results:
        if r.ratio_vs_fp32 is None and r.name != "fp32":
            log.append(f"{r.format} {r.name}: {'; '.join(budget_failures(r, budget))}")
    return chosen, log


def best_effort(results: Sequence[Any], budget: Budget) -> Any | None:
    """The quantized variant closest to ``budget`` when none meets it: fewest failed checks, then the
    smallest shortfall the task's drift reports (``shortfall``; classification: points lost plus
    agreement points missing), then the fastest. Never fp32, never an unrunnable variant."""
    candidates = [r for r in results if r.name != "fp32" and not r.error and r.drift is not None]
    if not candidates:
        return None

    def key(r: Any) -> tuple[int, float, float]:
        shortfall = getattr(r.drift, "shortfall", None)
        return (len(budget_failures(r, budget)), shortfall(budget) if shortfall else 0.0,
                r.ratio_vs_fp32 if r.ratio_vs_fp32 is not None else float("inf"))
    return min(candidates, key=key)


def fallback_steps(ranking_size: int, max_steps: int) -> list[int]:
    """How many of the worst-ranked ops to keep float at each search step: 1, 2, 4, ... (capped)."""
    steps, k = [], 1
    while k < ranking_size and len(steps) < max_steps:
        steps.append(k)
        k *= 2
    if ranking_size and len(steps) < max_steps:
        steps.append(ranking_size)
    return steps
