"""The accuracy-aware choice: the fastest quantized variant whose drift fits the budget
(the most accurate one when several are equally fast within timing noise).

Pure decisions over measured results (``Budget`` itself is ``albert_edge.tasks.metrics``'s: each
task's drift reads it), so the policy is testable without converting a model.
The search itself (which variants to build, which ops to fall back) lives in ``pipeline``;
this module says whether a variant meets the budget, why not, and which one wins.
"""

from __future__ import annotations

from typing import Any, Sequence

from albert_edge.tasks.metrics import PERFECT, Budget, agreement_lower_bound

__all__ = ["SPEED_TIE_BAND", "Budget", "agreement_lower_bound", "best_effort", "budget_failures", "choose",
           "fallback_steps", "misses_only_size", "not_judged"]


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


def misses_only_size(failures: Sequence[str]) -> bool:
    """True when every one of ``budget_failures``' reasons is the size limit: keeping ops float (the
    fallback searches) can only make such a file larger, so no search step can fix it."""
    return bool(failures) and all(reason.startswith("size ") for reason in failures)


def not_judged(result: Any, budget: Budget) -> str | None:
    """Why ``result`` (a quantized VariantResult) was not judged against ``budget``; None when it was.

    Not judged: no rows to judge on at all, or too few for the agreement the budget asks
    (``TaskDrift.unjudged``). Such a variant misses the budget (``budget_failures`` lists why) but
    is not "rejected": nothing was shown against it. fp32 (the reference) and a variant that could
    not be built or run, or is over ``max_size_bytes``, are never "not judged".
    """
    if result.error or result.name == "fp32":
        return None
    if budget.max_size_bytes is not None and result.size_bytes > budget.max_size_bytes:
        return None  # a measured failure: rejected, whatever the rows
    if result.drift is None:
        return "no rows to judge on (pass --eval FILE, or --calib FILE: its texts are judged without --eval)"
    return result.drift.unjudged(budget)


#: Latency ratios closer than this (relative) are one speed. A fixed band: the timing step
#: (``measure.interleaved_latency``) records each variant's median and p10/p90 over rounds, not the
#: spread of the ratio between two variants, so there is no measured noise of a ratio to use yet.
#: The report's ``timing.speed_tie_band`` records it.
SPEED_TIE_BAND = 0.05


def choose(results: Sequence[Any], budget: Budget, prefer: str = "speed") -> tuple[Any | None, list[str]]:
    """(fastest quantized result meeting ``budget`` or None, decision log lines).

    ``prefer="size"`` (``--prefer size``) chooses the smallest shipped file within budget instead
    (then the most accurate, the faster, the name): for an app whose download size is the limit.

    A variant that was not judged (``not_judged``: too few rows for the agreement asked) is never
    chosen; its log line says "not judged" and why, not "rejected".

    Speed is the median latency ratio against fp32 measured in the same run; results without a
    latency (not runnable) never win. fp32 (TFLite or ONNX) is the reference, never a candidate.
    Passing variants within ``SPEED_TIE_BAND`` of the fastest passing one are one speed (timing
    noise would pick among them at random from run to run); among those the most accurate wins,
    the smallest ``shortfall`` against ``PERFECT`` (distance to fp32 in the task's own units),
    then the faster, then the name, so the choice is the same on every run.
    """
    log: list[str] = []
    ranked = sorted((r for r in results if r.name != "fp32" and r.ratio_vs_fp32 is not None),
                    key=lambda r: r.ratio_vs_fp32)
    passing = [r for r in ranked if not budget_failures(r, budget)]
    chosen = _smallest(ranked, passing, budget, log) if prefer == "size" else _most_accurate_of_fastest(passing)
    for r in ranked if prefer == "speed" else ():
        failures = budget_failures(r, budget)
        label = f"{r.format} {r.name}"
        unjudged = not_judged(r, budget) if failures else None
        if unjudged:
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32, not judged (never chosen): {unjudged}")
        elif failures:
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32 but rejected: {'; '.join(failures)}")
        elif r is chosen:
            fastest = passing[0]
            why = ("fastest within budget" if r is fastest else
                   f"within {100 * SPEED_TIE_BAND:g}% of the fastest ({fastest.name}, timing noise) and closer "
                   f"to fp32 ({r.drift.shortfall(PERFECT):.3g} vs {fastest.drift.shortfall(PERFECT):.3g})")
            slower = " (slower than fp32 on this machine: it saves size, not time)" if r.ratio_vs_fp32 > 1 else ""
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32, {r.drift.summary()}, "
                       f"{r.size_bytes / 1e6:.2f} MB: {why}, CHOSEN{slower}")
        else:
            why = ("slower than" if r.ratio_vs_fp32 >= chosen.ratio_vs_fp32 else
                   f"as fast within {100 * SPEED_TIE_BAND:g}% and less accurate than")
            log.append(f"{label}: x{r.ratio_vs_fp32:.2f} of fp32, within budget but {why} {chosen.name}")
    for r in results:
        if r.ratio_vs_fp32 is None and r.name != "fp32":
            log.append(f"{r.format} {r.name}: {'; '.join(budget_failures(r, budget))}")
    return chosen, log


def _smallest(ranked: Sequence[Any], passing: Sequence[Any], budget: Budget, log: list[str]) -> Any | None:
    """``--prefer size``: the smallest passing file (then the most accurate, the faster); log lines to ``log``."""
    chosen = min(passing, key=lambda r: (r.size_bytes, r.drift.shortfall(PERFECT), r.ratio_vs_fp32, r.key),
                 default=None)
    for r in ranked:
        failures = budget_failures(r, budget)
        unjudged = not_judged(r, budget) if failures else None
        label = f"{r.format} {r.name}: {r.size_bytes / 1e6:.2f} MB, x{r.ratio_vs_fp32:.2f} of fp32"
        if unjudged:
            log.append(f"{label}, not judged (never chosen): {unjudged}")
        elif failures:
            log.append(f"{label} but rejected: {'; '.join(failures)}")
        elif r is chosen:
            log.append(f"{label}, {r.drift.summary()}: smallest within budget (--prefer size), CHOSEN")
        else:
            log.append(f"{label}, within budget but larger than {chosen.name}")
    return chosen


def _most_accurate_of_fastest(passing: Sequence[Any]) -> Any | None:
    """Among ``passing`` (sorted fastest first), the most accurate one as fast as the fastest within noise."""
    if not passing:
        return None
    limit = passing[0].ratio_vs_fp32 * (1 + SPEED_TIE_BAND)
    tied = [r for r in passing if r.ratio_vs_fp32 <= limit]
    return min(tied, key=lambda r: (r.drift.shortfall(PERFECT), r.ratio_vs_fp32, r.key))


def best_effort(results: Sequence[Any], budget: Budget) -> Any | None:
    """The quantized variant closest to ``budget`` when none meets it: the smallest shortfall the
    task's drift reports (``TaskDrift.shortfall``, the distance to passing in the task's own
    units: classification accuracy and agreement points, NER entity F1 and entity agreement, QA
    F1 and span agreement, cosine points for embeddings), then fewest failed checks (a size
    limit), then the fastest. Never fp32, never an unrunnable variant."""
    candidates = [r for r in results if r.name != "fp32" and not r.error and r.drift is not None]
    if not candidates:
        return None

    def key(r: Any) -> tuple[float, int, float, str]:
        return (r.drift.shortfall(budget), len(budget_failures(r, budget)),
                r.ratio_vs_fp32 if r.ratio_vs_fp32 is not None else float("inf"), r.key)
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
