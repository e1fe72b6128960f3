"""Real lengths vs padding: the ratio with its interval, issue #29's goal, and the floor under it.

The goal (issue #29): at batch 1, a call at the eval set's real token lengths takes at most 0.40x
the time of the same call padded to 128. A call's time is a part that does not shrink with the
length plus the work that does; how far the first keeps the ratio above (median real length / 128)
is read from what the bench measured anyway:

* the fixed-length rows of the same variant, backend, threads and source (``--seq-len 16,32,64,128``,
  the default) give p50(n) = a + b n by least squares: ``a`` is what a call costs whatever its
  length at a shape the interpreter already has (dispatch, thread wake-ups, the wrapper), ``b`` the
  work per token;
* the real-length row changes shape on almost every call; its p50 minus a + b x (median real
  length) is what a new shape costs (resize, re-allocation, re-preparing the ops and XNNPACK).

From them: the ratio without the new-shape cost, (a + b m) / (a + b L), and with neither cost,
m / L. The fixed-length rows and the real row are timed in rounds of their own (not paired), so the
ratio's interval resamples each side apart (``stats.unpaired_ratio``) and the decomposition is as
good as the load was steady between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from albert_edge.bench_latency.analysis import _p50
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.bench_latency.stats import PairedRatio, unpaired_ratio

GOAL_RATIO = 0.40
GOAL_SEQ_LEN = 128
# The line is trusted for a decomposition only if it fits every fixed-length p50 this closely and its
# intercept is positive; otherwise the rows were timed under different loads (they are separate
# rounds) or the time is far from linear, and only the ratio is given.
MAX_FIT_RESIDUAL = 0.15


@dataclass(frozen=True)
class RealLengthCost:
    """One configuration's real-length ratio and, when the fixed lengths allow, where its time goes."""

    ratio: PairedRatio
    median_length: float | None
    fixed_ms: float | None = None          # a: cost of a call at a known shape, whatever its length
    per_token_ms: float | None = None      # b
    new_shape_ms: float | None = None      # real p50 minus a + b m
    stable_shape_ratio: float | None = None  # (a + b m) / (a + b L)
    proportional_ratio: float | None = None  # m / L
    fit_lengths: tuple[int, ...] = ()
    unfit: str | None = None                 # why the fixed lengths gave no decomposition

    def goal(self, longest: int) -> str:
        """``met`` / ``not met`` / ``undecided`` against the 0.40 goal (judged only at 128)."""
        if longest != GOAL_SEQ_LEN:
            return f"– (goal is vs {GOAL_SEQ_LEN})"
        r = self.ratio
        if not r.has_interval:
            return f"{'met' if r.ratio <= GOAL_RATIO else 'not met'}? (no interval)"
        if r.high <= GOAL_RATIO:  # type: ignore[operator]
            return "met"
        if r.low > GOAL_RATIO:  # type: ignore[operator]
            return "not met"
        return "undecided"


def fit_line(points: list[tuple[int, float]]) -> tuple[float, float, float] | None:
    """(a, b, worst relative residual) of p50 = a + b n by least squares over two or more distinct
    lengths, else None."""
    if len({n for n, _ in points}) < 2:
        return None
    lengths = np.asarray([n for n, _ in points], dtype=np.float64)
    times = np.asarray([t for _, t in points], dtype=np.float64)
    b, a = np.polyfit(lengths, times, 1)
    residual = float(np.max(np.abs(a + b * lengths - times) / times))
    return float(a), float(b), residual


def real_length_cost(real: dict, fixed_rows: list[dict], longest: int) -> RealLengthCost | None:
    """The cost split of one real-length row, given its configuration's fixed-length rows."""
    full = next((f for f in fixed_rows if f["seq_len"] == longest), None)
    if full is None:
        return None
    top, bottom = real.get("round_medians_ms") or [_p50(real)], full.get("round_medians_ms") or [_p50(full)]
    ratio = unpaired_ratio(top, bottom)
    median = (real.get("lengths") or {}).get("median")
    if median is None:
        return RealLengthCost(ratio, None)
    points = sorted((f["seq_len"], _p50(f)) for f in fixed_rows)
    fit = fit_line(points)
    if fit is None:
        return RealLengthCost(ratio, float(median))
    a, b, residual = fit
    lengths = tuple(n for n, _ in points)
    if a <= 0 or residual > MAX_FIT_RESIDUAL:
        return RealLengthCost(ratio, float(median), fit_lengths=lengths,
                              unfit=f"p50 = a + b x length over {', '.join(map(str, lengths))} gives a = {a:.3g} ms "
                                    f"and misses a p50 by {residual * 100:.0f} %")
    stable = a + b * median
    return RealLengthCost(ratio, float(median), fixed_ms=a, per_token_ms=b, new_shape_ms=_p50(real) - stable,
                          stable_shape_ratio=stable / (a + b * longest), proportional_ratio=median / longest,
                          fit_lengths=lengths)


def _fmt(value: float | None, spec: str = ".3g") -> str:
    return "–" if value is None else f"{value:{spec}}"


def _floor_sentence(row: dict, cost: RealLengthCost, longest: int) -> str | None:
    """Why a row misses the goal, in the measured costs (None when met or without fixed lengths)."""
    if not cost.fit_lengths or cost.goal(longest) == "met":
        return None
    threads = row["threads"] or "–"
    name = f"{row['variant']} ({row['backend']}, {threads} thread{'' if threads == 1 else 's'}, {row['source']})"
    if cost.unfit:
        return (f"- {name}: {cost.ratio.text()}; no split into fixed and per-token cost: {cost.unfit} (rows timed "
                "under different loads, or a time far from linear in the length).")
    share = cost.fixed_ms / (cost.fixed_ms + cost.per_token_ms * longest) * 100
    return (f"- {name}: {cost.ratio.text()}; a call costs {cost.fixed_ms:.3g} ms whatever its length (intercept of "
            f"the p50s at {', '.join(map(str, cost.fit_lengths))}; {share:.0f} % of a call at {longest}), and a new "
            f"shape costs {cost.new_shape_ms:.3g} ms more per call at real lengths (real p50 minus the line at the "
            f"median length {cost.median_length:g}). Without the new-shape cost the ratio would be "
            f"{cost.stable_shape_ratio:.2f}x, without either {cost.proportional_ratio:.2f}x (median length / {longest}).")


def real_length_section(report: BenchReport) -> list[str]:
    """report.md's "Real lengths vs padding to L" section (empty without a real-length and a fixed row)."""
    fixed = [r["seq_len"] for r in report.results if isinstance(r["seq_len"], int)]
    if not fixed or not any(r["seq_len"] == "real" for r in report.results):
        return []
    longest = max(fixed)
    lines = [f"## Real lengths vs padding to {longest}", "",
             f"p50 at the eval set's real lengths over p50 at {longest} tokens, same variant, backend, threads "
             "and run, with a 95 % bootstrap interval over each side's rounds (the two lengths are timed in "
             f"rounds of their own, so not paired). Goal (issue #29, batch 1): <= {GOAL_RATIO:.2f}x of "
             f"{GOAL_SEQ_LEN}; met when the whole interval is at or below it. Fixed cost: the intercept of "
             "p50 = a + b x length over the fixed lengths; new shape: the real p50 above that line at the "
             "median real length; both only where that line fits every fixed-length p50 within "
             f"{MAX_FIT_RESIDUAL * 100:.0f} % with a positive intercept (see bench_latency/real_length.py).", "",
             f"| variant | source | backend | threads | p50 ms real | p50 ms @ {longest} | ratio [95 %] | goal | "
             "fixed ms/call | new shape ms/call |",
             "|---|---|---|---:|---:|---:|---|---|---:|---:|"]
    notes = []
    for r in report.results:
        if r["seq_len"] != "real":
            continue
        same = [f for f in report.results if isinstance(f["seq_len"], int) and f["variant"] == r["variant"]
                and f["backend"] == r["backend"] and f["threads"] == r["threads"] and f["source"] == r["source"]]
        cost = real_length_cost(r, same, longest)
        if cost is None:
            continue
        full = next(f for f in same if f["seq_len"] == longest)
        goal = cost.goal(longest) + ("" if r.get("batch") in (None, 1) else f" (batch {r['batch']})")
        if any((x.get("contention") or {}).get("contended") for x in (r, full)):
            goal += " (under contention)"
        lines.append(f"| {r['variant']} | {r['source']} | {r['backend']} | {r['threads'] or '–'} | "
                     f"{_fmt(_p50(r))} | {_fmt(_p50(full))} | {cost.ratio.text()} | {goal} | "
                     f"{_fmt(cost.fixed_ms)} | {_fmt(cost.new_shape_ms)} |")
        sentence = _floor_sentence(r, cost, longest)
        if sentence:
            notes.append(sentence)
    if notes:
        lines += ["", "Where the goal is not shown met, what sets the floor:", "", *notes]
    return [*lines, ""]
