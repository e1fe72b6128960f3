"""From raw results to answers: thread scaling, speed-ups against the baseline, the recommendation.

Ratios are computed only between results of one run and one source (host or device), because a
ratio across two runs on a shared machine measures the neighbours as much as the models.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable


def _p50(result: dict) -> float:
    """The latency a table ranks by: the median, or the mean when a device log gives no median."""
    latency = result["latency_ms"]
    return latency["median"] if latency["median"] is not None else latency["mean"]


def thread_scaling(results: Iterable[dict], physical_cores: int) -> tuple[list[dict], list[str]]:
    """Speed-up of N threads over 1 per (variant, backend, seq_len, source), and the warnings.

    Warns when more threads are slower than fewer (TFLite's thread pool often is on small models:
    tensorflow#41580, LiteRT#3360) and when the thread count exceeds the host's physical cores.
    """
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
                           "speedup_vs_1": _p50(one) / _p50(r) if one else None})
        for fewer, more in itertools.pairwise(rows):
            if _p50(more) > _p50(fewer):
                where = f"{variant} ({backend}, seq {seq_len}, {source})"
                notes.append(f"{where}: {more['threads']} threads slower than {fewer['threads']} "
                             f"({_p50(more):.3g} ms vs {_p50(fewer):.3g} ms); ship {fewer['threads']}")
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
    oversubscribed_only = False
    if max_threads is not None:
        within = [r for r in rows if r["threads"] is None or r["threads"] <= max_threads]
        oversubscribed_only = not within
        rows = within or rows
    measured = any(a.get("accuracy") is not None for a in accuracy.values())
    allowed = []
    for r in rows:
        drop = accuracy_drop_points(accuracy, r["variant"], baseline)
        if not measured or (drop is not None and drop <= max_drop):
            allowed.append((r, drop))
    if not allowed:
        return {"variant": None, "backend": None, "threads": None, "seq_len": seq_len, "median_ms": None,
                "accuracy_drop_points": None,
                "text": f"no variant is within the {max_drop:g}-point accuracy budget at seq {seq_len}"}
    best, drop = min(allowed, key=lambda pair: _p50(pair[0]))
    speedup = speedup_vs_baseline(results, best, baseline)
    plural = "s" if best["threads"] != 1 else ""
    parts = [f"ship {best['variant']} ({best['backend']}, {best['threads']} thread{plural}): "
             f"p50 {_p50(best):.3g} ms at seq {seq_len}"]
    if oversubscribed_only:
        parts.append(f"WARNING: only thread counts above the {max_threads} physical cores were measured, so this "
                     f"pick is oversubscribed and its latency includes contention; re-run with --threads "
                     f"{max_threads}")
    if speedup is not None and best["variant"] != baseline:
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
            "text": ", ".join(parts)}


def headline_seq_len(seq_lens: Iterable[int | str]) -> int | str | None:
    """The length the overall recommendation uses: real lengths when measured, else the longest."""
    values = list(seq_lens)
    if "real" in values:
        return "real"
    ints = [v for v in values if isinstance(v, int)]
    return max(ints) if ints else None
