"""The bench's one verdict (``albert_edge.verdict``): the headline recommendation as the block that the
console, the top of report.md and the demo show.

There is one pick per report (``report_md.overall_recommendation``: host results at real lengths when
measured, else the longest length); the per-length sections show their own fastest-within-budget as
details, never as another "ship". A pick drawn from comparisons measured under contention decides
nothing: the block then says this machine could not decide and names the run that would.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from albert_edge.bench_latency.analysis import contended
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.verdict import Speed, Verdict

SHIPPED_NAMES = ("model.tflite", "model.onnx")  # quantize's shipped names (quantize.report.SHIPPED_NAMES)


def _path_of(report: BenchReport, name: str) -> str | None:
    """The file behind variant ``name``; when quantize's ``model.*`` has the same bytes, that name."""
    entry = report.variant(name)
    if entry is None:
        return None
    twins = [v for v in report.variants if v.get("sha256") == entry.get("sha256")
             and Path(v["path"]).name in SHIPPED_NAMES]
    return (twins[0] if twins else entry)["path"]


def _accuracy(report: BenchReport, name: str, baseline: str | None, drop: float | None) -> str | None:
    """The task's metric and agreement against the baseline, as measured on --eval."""
    mine, base = report.accuracy_of(name) or {}, report.accuracy_of(baseline or "") or {}
    if drop is not None and mine.get("accuracy") is not None and base.get("accuracy") is not None:
        agreement = f", agreement {100 * mine['agreement']:.1f} %" if mine.get("agreement") is not None else ""
        return (f"{0.0 - drop:+.2f} points ({100 * mine['accuracy']:.2f} % vs {100 * base['accuracy']:.2f} % "
                f"for {baseline}){agreement}")
    if mine.get("mean_cosine") is not None:
        return f"cosine to {baseline}: {mine['mean_cosine']:.5f} mean, {mine.get('min_cosine', 0):.5f} min"
    return None


def _rerun(report: BenchReport, seq_len: int | str) -> str:
    """The same bench, asked to spend longer: what an idle machine needs to decide."""
    s = report.settings
    models = " ".join(shlex.quote(v["path"]) for v in report.variants)
    threads = ",".join(str(t) for t in s.get("threads") or [])
    extra = f" --eval {shlex.quote(s['eval'])}" if s.get("eval") else ""
    seconds = int(2 * (s.get("max_seconds") or 120))
    return (f"albert-edge bench {models} --threads {threads} --seq-len {seq_len}{extra} "
            f"--max-seconds {seconds}")


def bench_verdict(report: BenchReport, details: str | None = None) -> Verdict:
    """The verdict of ``report`` (its ``recommendation``); ``details``: the report.md path to name."""
    stability = report.stability or {}
    impossible = len(stability.get("impossible") or [])
    warnings = {"UNSTABLE ratios": len(stability.get("unstable") or []),
                "impossible int8 speed-ups": impossible,
                "other warnings": max(0, len(report.warnings) - impossible)}
    rec = report.recommendation or {}
    seq_len = rec.get("seq_len")
    common = {"warnings": warnings, "details": details, "threads": rec.get("threads")}
    if not rec.get("variant"):
        return Verdict("bench", None, nothing_because=rec.get("text") or "nothing was timed on this host",
                       **common)
    rows = [r for r in report.results if r["seq_len"] == seq_len and r["source"] == "host"]
    busy = [r for r in rows if contended(r)]
    decided = rec.get("decided") is not False and not busy
    if busy:
        undecided = (f"{len(busy)} of {len(rows)} configurations at seq {seq_len} were measured under "
                     "contention, so neither the variant nor the thread count is decided")
    elif not decided:
        undecided = "the fastest candidates' intervals overlap (kept the fewest threads; see report.md)"
    else:
        undecided = None
    baseline = report.baseline()
    pick = next((r for r in rows if r["variant"] == rec["variant"] and r["backend"] == rec["backend"]
                 and r["threads"] == rec["threads"]), None)
    paired = (pick or {}).get("vs_baseline")
    where = "at the eval set's real lengths" if seq_len == "real" else f"at seq {seq_len}"
    speed = (Speed(paired["ratio"], paired.get("low"), paired.get("high"), where) if paired else
             Speed(1.0, 1.0, 1.0, where) if rec["variant"] == baseline else None)
    base_entry = report.variant(baseline or "") or {}
    return Verdict("bench", _path_of(report, rec["variant"]), variant=rec["variant"],
                   size_bytes=(report.variant(rec["variant"]) or {}).get("size_bytes"),
                   fp32_size_bytes=base_entry.get("size_bytes") if "fp32" in (baseline or "") else None,
                   speed=speed, accuracy=_accuracy(report, rec["variant"], baseline, rec.get("accuracy_drop_points")),
                   decided=decided, undecided=undecided, rerun=None if decided else _rerun(report, seq_len),
                   **common)


def file_verdict(report: BenchReport, path: str | Path, command: str, details: str | None = None) -> Verdict:
    """The verdict on one file already chosen (the demo's ``model.tflite``): its own rows decide only the
    thread count, so the block describes that file, not whichever variant the whole bench would pick."""
    from dataclasses import replace

    from albert_edge.bench_latency.analysis import headline_seq_len, recommend

    name = next((v["name"] for v in report.variants if Path(v["path"]) == Path(path)), None)
    host = [r for r in report.results if r["source"] == "host"]
    seq_len = headline_seq_len(r["seq_len"] for r in host)
    own = [r for r in host if r["variant"] == name]
    rec = None
    if name is not None and seq_len is not None:
        cores = report.machine.get("physical_cores") if report.machine.get("kind") == "host" else None
        rec = recommend(own, {a["variant"]: a for a in report.accuracy}, report.baseline(), seq_len,
                        report.settings.get("max_drop", 0.5), max_threads=int(cores) if cores else None)
    return replace(bench_verdict(replace(report, recommendation=rec), details), command=command)
