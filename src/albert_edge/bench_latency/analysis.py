"""From raw results to answers: thread scaling, speed-ups against the baseline, the recommendation.

Ratios are computed only between results of one run and one source (host or device), because a
ratio across two runs on a shared machine measures the neighbours as much as the models.

Host results of the paired runner carry ``round_group`` and aligned ``round_medians_ms``: two
results of one group were timed in the same rounds, seconds apart. Between those, every verdict
("N threads slower", "ship X") is drawn from the paired ratio's bootstrap interval and only when
the interval excludes the alternative; otherwise the text says the run could not decide. Results
without rounds (phone logs, reports of older versions) keep the single-number comparison and say so.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from albert_edge.bench_latency.stats import (
    MAX_INT8_SPEEDUP,
    MIN_ROUNDS,
    PairedRatio,
    impossible_int8_speedup,
    instability,
    paired_ratio,
)
from albert_edge.neighbours import CONTENTION_SHARE

DEFAULT_TARGET_PRECISION = 0.03
# A burst that spent more than this share of its wall time waiting on a run queue (or a run whose
# load average exceeded the core count), or whose neighbours left it less than this share short of its
# threads' CPUs, was measured under contention (the one share quantize's verdict uses too).
CONTENTION_WAIT_SHARE = CONTENTION_SHARE
# A verdict between configurations of which one was measured under contention must clear this band, not
# just 1.0: a CPU hog biased paired ratios by 7-21 % in the issue #29 battery (more for the configuration
# with more threads, which loses a core), with intervals that did not cover the idle value.
CONTENTION_BAND = 0.25


def contention_limit(a: dict, b: dict) -> float:
    """How far above 1.0 a time ratio between ``a`` and ``b`` must lie to decide anything: 1.0, or
    ``1 + CONTENTION_BAND`` when either was measured under contention (below: its inverse)."""
    return 1.0 + CONTENTION_BAND if contended(a) or contended(b) else 1.0


def separated(estimate: PairedRatio, a: dict, b: dict) -> bool:
    """``a``'s time over ``b``'s lies below 1.0 with room for contention when either was contended."""
    return estimate.below(1.0 / contention_limit(a, b))


def _p50(result: dict) -> float:
    """The latency a table ranks by: the median, or the mean when a device log gives no median."""
    latency = result["latency_ms"]
    return latency["median"] if latency["median"] is not None else latency["mean"]


def paired(a: dict | None, b: dict | None) -> bool:
    """``a`` and ``b`` were timed in the same rounds (same run, same group, same round count)."""
    if a is None or b is None or not a.get("round_group") or a.get("round_group") != b.get("round_group"):
        return False
    return 0 < len(a.get("round_medians_ms") or ()) == len(b.get("round_medians_ms") or ())


def paired_estimate(row: dict, reference: dict) -> PairedRatio:
    """Time of ``row`` over ``reference``, round by round (both must be ``paired``)."""
    return paired_ratio(row["round_medians_ms"], reference["round_medians_ms"])


def _label(r: dict) -> str:
    return f"{r['variant']} ({r['backend']}, {r['threads']}T, seq {r['seq_len']})"


def contended(r: dict) -> bool:
    return bool((r.get("contention") or {}).get("contended"))


@dataclass(frozen=True)
class Comparison:
    """One paired comparison the report makes: ``row`` over ``reference`` (kind "variant" or "threads")."""

    kind: str
    row: dict
    reference: dict
    estimate: PairedRatio

    @property
    def contended(self) -> bool:
        return contended(self.row) or contended(self.reference)

    def describe(self) -> str:
        if self.kind == "threads":
            r = self.row
            return (f"{r['variant']} ({r['backend']}, seq {r['seq_len']}): {r['threads']} threads over "
                    f"{self.reference['threads']}")
        return f"{_label(self.row)} over {self.reference['variant']} ({self.reference['backend']})"


def _is_int8(name: str) -> bool:
    lowered = name.lower()
    return "int8" in lowered or "dynamic" in lowered


def impossible(comparison: Comparison) -> bool:
    """An int8 variant more than MAX_INT8_SPEEDUP times faster than fp32 on the same backend."""
    row, ref = comparison.row, comparison.reference
    return (comparison.kind == "variant" and row["backend"] == ref["backend"] and _is_int8(row["variant"])
            and "fp32" in ref["variant"].lower() and impossible_int8_speedup(comparison.estimate))


def paired_comparisons(results: list[dict], baseline: str | None) -> list[Comparison]:
    """Every paired comparison in ``results``: each variant over the baseline, each thread count over the next fewer."""
    out: list[Comparison] = []
    for r in results:
        if r["variant"] != baseline:
            ref = baseline_match(results, r, baseline)
            if ref is not None and paired(r, ref):
                out.append(Comparison("variant", r, ref, paired_estimate(r, ref)))
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in results:
        if r["threads"] is not None:
            groups[(r["variant"], r["backend"], r["seq_len"], r["source"])].append(r)
    for rows in groups.values():
        rows.sort(key=lambda r: r["threads"])
        for fewer, more in itertools.pairwise(rows):
            if paired(more, fewer):
                out.append(Comparison("threads", more, fewer, paired_estimate(more, fewer)))
    return out


def stability(results: list[dict], baseline: str | None,
              target: float = DEFAULT_TARGET_PRECISION) -> dict:
    """What a reader must know before trusting the ratios: unstable, impossible and contended comparisons."""
    unstable, flagged, under_contention = [], [], []
    for c in paired_comparisons(results, baseline):
        reason = instability(c.estimate, target)
        if reason:
            unstable.append(f"{c.describe()}: {c.estimate.text()}; {reason}")
        if impossible(c):
            flagged.append(f"{c.describe()}: {c.estimate.text()} is a {1 / c.estimate.ratio:.2f}x int8 speed-up, "
                           f"above the ~{MAX_INT8_SPEEDUP:g}x int8 arithmetic can give over fp32: contention or a "
                           f"broken measurement, not the model")
        if c.contended:
            under_contention.append(f"{c.describe()}: {c.estimate.text()}")
    few = sorted({len(r["round_medians_ms"]) for r in results
                  if r.get("round_group") and len(r.get("round_medians_ms") or ()) < MIN_ROUNDS})
    if few:
        unstable.insert(0, f"only {'/'.join(map(str, few))} round(s) were run: under {MIN_ROUNDS} rounds no ratio has "
                           f"an interval, so every verdict is undecided (run more --rounds or set --max-seconds)")
    return {"target_precision": target, "unstable": unstable, "impossible": flagged, "contended": under_contention}


def thread_scaling(results: Iterable[dict], physical_cores: int) -> tuple[list[dict], list[str]]:
    """Speed-up of N threads over 1 per (variant, backend, seq_len, source), and the warnings.

    Warns when more threads are slower than fewer (TFLite's thread pool often is on small models:
    tensorflow#41580, LiteRT#3360) and when the thread count exceeds the host's physical cores.
    Between results timed in the same rounds the warning needs the paired interval to exclude 1.0
    (and a point gets ``vs_fewer``, the interval of its time over the next fewer threads'); results
    without rounds are compared by their medians, and the warning says it is one measurement each.
    """
    results = list(results)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in results:
        groups[(r["variant"], r["backend"], r["seq_len"], r["source"])].append(r)
    scaling, warnings = [], []
    oversubscribed = sorted({r["threads"] for r in results if r["source"] == "host" and r["oversubscribed"]})
    for n in oversubscribed:
        warnings.append(f"{n} threads > {physical_cores} physical cores on this host: oversubscribed, "
                        f"the {n}-thread numbers measure contention, not scaling")
    for (variant, backend, seq_len, source), rows in groups.items():
        rows = sorted((r for r in rows if r["threads"] is not None), key=lambda r: r["threads"])
        if not rows:
            continue
        one = next((r for r in rows if r["threads"] == 1), None)
        points, notes = [], []
        for r in rows:
            points.append({"threads": r["threads"], "median_ms": _p50(r),
                           "speedup_vs_1": _p50(one) / _p50(r) if one else None, "vs_fewer": None})
        where = f"{variant} ({backend}, seq {seq_len}, {source})"
        for i, (fewer, more) in enumerate(itertools.pairwise(rows)):
            if paired(more, fewer):
                estimate = paired_estimate(more, fewer)
                points[i + 1]["vs_fewer"] = {**estimate.to_dict(), "threads": fewer["threads"]}
                limit = contention_limit(more, fewer)
                if estimate.above(limit):
                    mark = " (measured under contention)" if limit > 1.0 else ""
                    notes.append(f"{where}: {more['threads']} threads slower than {fewer['threads']} "
                                 f"(time ratio {estimate.text()}){mark}; ship {fewer['threads']}")
            elif _p50(more) > _p50(fewer):
                notes.append(f"{where}: {more['threads']} threads slower than {fewer['threads']} "
                             f"({_p50(more):.3g} ms vs {_p50(fewer):.3g} ms, one measurement each, not "
                             f"paired: no interval); ship {fewer['threads']}")
        scaling.append({"variant": variant, "backend": backend, "seq_len": seq_len, "source": source,
                        "points": points, "warnings": notes})
        warnings.extend(notes)
    return scaling, warnings


def baseline_match(results: list[dict], row: dict, baseline: str | None) -> dict | None:
    """The baseline's result comparable to ``row``: same threads, seq_len, batch and source."""
    if baseline is None:
        return None
    candidates = [r for r in results if r["variant"] == baseline and r["threads"] == row["threads"]
                  and r["seq_len"] == row["seq_len"] and r["source"] == row["source"]
                  and r["batch"] == row["batch"]]
    same_backend = [r for r in candidates if r["backend"] == row["backend"]]
    return (same_backend or candidates or [None])[0]


def speedup_vs_baseline(results: list[dict], row: dict, baseline: str | None) -> float | None:
    base = baseline_match(results, row, baseline)
    return _p50(base) / _p50(row) if base else None


def accuracy_drop_points(accuracy: dict[str, dict], variant: str, baseline: str | None) -> float | None:
    """Baseline accuracy minus the variant's, in percentage points (positive = worse)."""
    if baseline is None or variant not in accuracy or baseline not in accuracy:
        return None
    if accuracy[baseline].get("accuracy") is None or accuracy[variant].get("accuracy") is None:
        return None  # an embedding model: drift is cosine, not accuracy
    return (accuracy[baseline]["accuracy"] - accuracy[variant]["accuracy"]) * 100.0


def recommend(results: list[dict], accuracy: dict[str, dict], baseline: str | None, seq_len: int | str,
              max_drop: float, source: str = "host", max_threads: int | None = None) -> dict | None:
    """The fastest (variant, backend, threads) at ``seq_len`` whose accuracy drop is within budget.

    Without accuracy data every variant qualifies and the text says that drift was not measured.
    With ``max_threads`` (the host's physical cores) thread counts above it are never picked: on
    an oversubscribed host their latency measures contention, and an app on a phone shares its
    cores anyway. If only such counts were measured, the pick says so loudly.
    """
    rows = [r for r in results if r["seq_len"] == seq_len and r["source"] == source]
    if not rows:
        return None
    oversubscribed_only = max_threads is not None and not _within_threads(rows, max_threads)
    allowed = _within_budget(rows, accuracy, baseline, max_drop, max_threads)
    measured = any(a.get("accuracy") is not None for a in accuracy.values())
    if not allowed:
        return {"variant": None, "backend": None, "threads": None, "seq_len": seq_len, "median_ms": None,
                "accuracy_drop_points": None,
                "text": f"no variant is within the {max_drop:g}-point accuracy budget at seq {seq_len}",
                "decided": None}
    best, drop = min(allowed, key=lambda pair: _p50(pair[0]))
    candidates = [r for r, _ in allowed]
    decided: bool | None = None
    verdict = ""
    if len(candidates) > 1 and all(paired(candidates[0], r) for r in candidates[1:]):
        best, decided, verdict = _paired_pick(best, candidates, baseline)
        drop = next(d for r, d in allowed if r is best)
    speedup = speedup_vs_baseline(results, best, baseline)
    plural = "s" if best["threads"] != 1 else ""
    default = "" if decided is not False else " by default"
    parts = [(f"ship {best['variant']} ({best['backend']}, {best['threads']} thread{plural}){default}: "
              f"p50 {_p50(best):.3g} ms at seq {seq_len}")]
    if verdict:
        parts.append(verdict)
    if oversubscribed_only:
        parts.append(f"WARNING: only thread counts above the {max_threads} physical cores were measured, so this "
                     f"pick is oversubscribed and its latency includes contention; re-run with --threads "
                     f"{max_threads}")
    reference = baseline_match(results, best, baseline)
    if best["variant"] != baseline and reference is not None and paired(best, reference):
        if f"({_label(reference)}, time ratio" not in verdict:   # not said already as the closest rival
            parts.append(f"{paired_estimate(best, reference).text()} of {baseline}'s time")
    elif speedup is not None and best["variant"] != baseline:
        parts.append(f"{speedup:.2f}x vs {baseline}")
    cosine = (accuracy.get(best["variant"]) or {}).get("mean_cosine")
    if drop is not None:
        parts.append(f"accuracy {0.0 - drop:+.2f} points vs {baseline} (budget: at most {max_drop:g} lower)")
    elif cosine is not None:
        parts.append(f"embedding cosine to {baseline} {cosine:.5f} mean, "
                     f"{accuracy[best['variant']]['min_cosine']:.5f} min (not a budget: see quantize --min-cosine)")
    elif not measured:
        parts.append("accuracy not measured (pass --eval)")
    return {"variant": best["variant"], "backend": best["backend"], "threads": best["threads"],
            "seq_len": seq_len, "median_ms": _p50(best), "accuracy_drop_points": drop,
            "text": ", ".join(parts), "decided": decided}


def _within_threads(rows: list[dict], max_threads: int) -> list[dict]:
    return [r for r in rows if r["threads"] is None or r["threads"] <= max_threads]


def _within_budget(rows: list[dict], accuracy: dict[str, dict], baseline: str | None, max_drop: float,
                   max_threads: int | None) -> list[tuple[dict, float | None]]:
    """(row, accuracy drop) of the rows ``recommend`` may pick: within the thread cap (all rows when
    only oversubscribed counts were measured) and the accuracy budget (every row without accuracy data)."""
    if max_threads is not None:
        rows = _within_threads(rows, max_threads) or rows
    measured = any(a.get("accuracy") is not None for a in accuracy.values())
    allowed = []
    for r in rows:
        drop = accuracy_drop_points(accuracy, r["variant"], baseline)
        if not measured or (drop is not None and drop <= max_drop):
            allowed.append((r, drop))
    return allowed


def verdict_settled(results: list[dict], accuracy: dict[str, dict], baseline: str | None, seq_len: int | str,
                    max_drop: float, target: float, max_threads: int | None = None) -> bool:
    """Whether more rounds could still change what ``recommend`` says at ``seq_len``: the bench's stop rule.

    Settled when the fastest candidate's ratio over every other candidate is either decided (its
    interval clears 1.0, as ``_paired_pick`` asks) or known within ``target`` (a tie that no longer
    matters: two files a few per cent apart), and its ratio over the baseline, the verdict's speed
    figure, is known within ``target``. Comparisons no verdict reads (a slower file against fp32)
    need no more rounds. Rows must be timed in the same rounds.
    """
    return rounds_to_settle(results, accuracy, baseline, seq_len, max_drop, target, max_threads) == (0.0, 0.0)


def rounds_to_settle(results: list[dict], accuracy: dict[str, dict], baseline: str | None, seq_len: int | str,
                     max_drop: float, target: float, max_threads: int | None = None) -> tuple[float, float]:
    """(rounds the verdict's decisions need, rounds its speed figure needs) to settle at ``seq_len``, in all.

    0.0 for what is settled (``verdict_settled``), inf without intervals yet, else a projection from
    the widest unsettled ratio (a bootstrap interval narrows as one over the square root of the
    rounds) to the width that would decide it or call it a tie; the figure, the fastest over the
    baseline, needs ``target``. Crude at 20 rounds: the runner gives up only far beyond its time cap.
    """
    rows = [r for r in results if r["seq_len"] == seq_len and r["source"] == "host"]
    candidates = [r for r, _ in _within_budget(rows, accuracy, baseline, max_drop, max_threads)]
    if not candidates:
        return 0.0, 0.0
    fastest = min(candidates, key=_p50)
    decisions = 0.0
    for other in candidates:
        if other is fastest:
            continue
        estimate = paired_estimate(fastest, other)
        width = estimate.relative_half_width
        if width is None:
            return float("inf"), float("inf")
        if width > target and not separated(estimate, fastest, other):
            goal = max(target, abs(1.0 - estimate.ratio) / estimate.ratio)
            decisions = max(decisions, len(estimate.round_ratios) * (width / goal) ** 2)
    reference = baseline_match(rows, fastest, baseline)
    figure = 0.0
    if reference is not None and reference is not fastest:
        estimate = paired_estimate(fastest, reference)
        width = estimate.relative_half_width
        figure = (float("inf") if width is None else
                  0.0 if width <= target else len(estimate.round_ratios) * (width / target) ** 2)
    return decisions, figure


def _paired_pick(fastest: dict, candidates: list[dict], baseline: str | None) -> tuple[dict, bool, str]:
    """(pick, decided, why) among candidates timed in the same rounds.

    The fastest median is the pick only when its time ratio's interval over every other candidate
    lies below 1.0 (below ``1 / (1 + CONTENTION_BAND)`` when either side was measured under
    contention). Otherwise the data do not separate it from some rivals, and the pick is the
    conservative one among them (fewest threads, then the baseline variant): what to keep until a
    longer or quieter run decides.
    """
    rivals = [(r, paired_estimate(fastest, r)) for r in candidates if r is not fastest]
    tied = [(r, e) for r, e in rivals if not separated(e, fastest, r)]
    under = " (measured under contention)" if any(contended(r) for r in candidates) else ""
    if not tied:
        closest, estimate = max(rivals, key=lambda pair: pair[1].ratio)
        return fastest, True, (f"faster than every other candidate timed in the same rounds (closest: "
                               f"{_label(closest)}, time ratio {estimate.text()}){under}")
    pool = [fastest, *(r for r, _ in tied)]
    pick = min(pool, key=lambda r: (r["threads"] or 0, r["variant"] != baseline, _p50(r)))
    rival, estimate = max(tied, key=lambda pair: pair[1].ratio)
    if not estimate.has_interval:
        why = f"has no interval under {MIN_ROUNDS} rounds"
    elif estimate.below(1.0):
        why = (f"was measured under contention and does not clear its {CONTENTION_BAND:.0%} band "
               f"(below {1.0 / (1.0 + CONTENTION_BAND):.2f})")
    elif estimate.above(1.0):
        why = ("lies above 1.0: slower round by round although its pooled median is lower, so the load "
               "changed between rounds")
    else:
        why = "does not exclude 1.0"
    return pick, False, (f"undecided on this machine now: the fastest median, {_label(fastest)}, over "
                         f"{_label(rival)} is {estimate.text()}, which {why}; until a longer or quieter run "
                         f"decides, keep the fewest threads and the baseline among the candidates the data do "
                         f"not separate{under}")


def headline_seq_len(seq_lens: Iterable[int | str]) -> int | str | None:
    """The length the overall recommendation uses: real lengths when measured, else the longest."""
    values = list(seq_lens)
    if "real" in values:
        return "real"
    ints = [v for v in values if isinstance(v, int)]
    return max(ints) if ints else None
