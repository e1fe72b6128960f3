"""report.md: one table per sequence length, the recommendation first, warnings last."""

from __future__ import annotations

import numpy as np

from albert_edge.bench_latency.analysis import (
    _p50,
    accuracy_drop_points,
    headline_seq_len,
    recommend,
    speedup_vs_baseline,
)
from albert_edge.bench_latency.schema import BenchReport


def _fmt(value: float | None, spec: str = ".3g", suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def _size(size_bytes: int | None) -> str:
    if size_bytes is None:
        return "–"
    return f"{size_bytes / 1e6:.2f} MB" if size_bytes >= 1e5 else f"{size_bytes / 1e3:.1f} kB"


def _load(values: list[float] | None) -> str:
    return "/".join(f"{v:.1f}" for v in values) if values else "–"


def _busy(machine: dict, settings: dict) -> str:
    loads = (machine.get("load_average") or [0.0])[:1] + (settings.get("load_average_end") or [0.0])[:1]
    if max(loads) > machine.get("logical_cores", 1):
        return " (above the core count: runs waited for a CPU, so absolute numbers are pessimistic)"
    return ""


def _seq_key(seq_len: int | str | None) -> tuple:
    return (1, 0) if seq_len == "real" else (0, seq_len if isinstance(seq_len, int) else -1)


def _percent(entry: dict | None, key: str) -> float | None:
    """``entry[key]`` in percent, None when absent (no --eval, or an embedding model's entry)."""
    return None if not entry or entry.get(key) is None else entry[key] * 100


def render_markdown(report: BenchReport) -> str:
    """The human report; every number comes from ``report`` (nothing is re-measured)."""
    baseline = report.baseline()
    accuracy = {a["variant"]: a for a in report.accuracy}
    machine = report.machine
    settings = report.settings
    out = ["# albert-edge bench", ""]
    if report.recommendation:
        out += [f"**Recommendation:** {report.recommendation['text']}", ""]
    if machine.get("kind") == "host":
        out += [f"Host: {machine.get('cpu_model', '?')}, {machine.get('physical_cores', '?')} physical / "
                f"{machine.get('logical_cores', '?')} logical cores, SIMD {', '.join(machine.get('simd', [])) or '–'}; "
                f"{', '.join(f'{k} {v}' for k, v in machine.get('packages', {}).items())}. "
                f"Load average at start {_load(machine.get('load_average'))}, at end "
                f"{_load(settings.get('load_average_end'))}{_busy(machine, settings)}.",
                f"Batch {settings.get('batch')}, {settings.get('runs')} timed runs after {settings.get('warmup')} "
                f"warm-up in {settings.get('rounds')} interleaved rounds, one process per configuration"
                f"{', pinned' if settings.get('pin') else ''}. Baseline: {baseline or '–'}. "
                f"Accuracy on {settings.get('eval') or '– (no --eval)'}; budget {settings.get('max_drop')} points.",
                ""]
    elif report.results:
        out += ["Device-only report: numbers parsed from TFLite benchmark_model logs (p50 is the log's "
                "median when it prints one, else its average, marked \"(avg)\").", ""]
    for seq_len in sorted({r["seq_len"] for r in report.results}, key=_seq_key):
        rows = [r for r in report.results if r["seq_len"] == seq_len]
        title = "real token lengths of the eval set" if seq_len == "real" else f"{seq_len} tokens"
        out += [f"## Sequence length: {title}", ""]
        if seq_len == "real" and rows[0].get("lengths"):
            lengths = rows[0]["lengths"]
            out += [f"Lengths drawn: min {lengths['min']}, median {lengths['median']}, "
                    f"p90 {lengths['p90']}, max {lengths['max']}.", ""]
        out += ["| variant | source | backend | threads | size | p50 ms | p90 ms | speed-up vs "
                f"{baseline or 'baseline'} | accuracy | Δaccuracy (pts) | agreement |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        rows.sort(key=lambda r: (r["source"], r["threads"] or 0, _p50(r)))
        for r in rows:
            variant = report.variant(r["variant"]) or {}
            acc = accuracy.get(r["variant"])
            drop = accuracy_drop_points(accuracy, r["variant"], baseline)
            speedup = speedup_vs_baseline(report.results, r, baseline)
            p50 = _fmt(r["latency_ms"]["median"]) if r["latency_ms"]["median"] is not None \
                else _fmt(r["latency_ms"]["mean"]) + " (avg)"
            device = f" ({r['device']})" if r.get("device") else ""
            out.append(
                f"| {r['variant']} | {r['source']}{device} | {r['backend']} | {r['threads'] or '–'} | "
                f"{_size(variant.get('size_bytes'))} | {p50} | {_fmt(r['latency_ms']['p90'])} | "
                f"{_fmt(speedup, '.2f', 'x')} | {_fmt(_percent(acc, 'accuracy'), '.2f', '%')} | "
                f"{_fmt(0.0 - drop if drop is not None else None, '+.2f')} | "
                f"{_fmt(_percent(acc, 'agreement'), '.2f', '%')} |")
        pick = recommend(report.results, accuracy, baseline, seq_len, settings.get("max_drop", 0.5),
                         max_threads=_host_cores(report))
        if pick:
            out += ["", f"→ {pick['text']}"]
        out.append("")
    out += _real_length_ratios(report)
    out += _load_and_memory(report)
    out += _drift_sections(report.accuracy)
    scaling = [s for s in report.thread_scaling if len(s["points"]) > 1]
    if scaling:
        out += ["## Thread scaling (speed-up over 1 thread)", ""]
        threads = sorted({p["threads"] for s in scaling for p in s["points"]})
        out += ["| variant | backend | seq | source | " + " | ".join(f"{n}T" for n in threads) + " |",
                "|---|---|---|---|" + "---:|" * len(threads)]
        for s in sorted(scaling, key=lambda s: (s["source"], _seq_key(s["seq_len"]), s["variant"])):
            by_n = {p["threads"]: p for p in s["points"]}
            cells = [_fmt(by_n[n]["speedup_vs_1"], ".2f", "x") if n in by_n else "" for n in threads]
            out.append(f"| {s['variant']} | {s['backend']} | {s['seq_len']} | {s['source']} | "
                       + " | ".join(cells) + " |")
        out.append("")
    if report.arm_emulated:
        from albert_edge.arm.report import markdown_section

        out += [markdown_section(report.arm_emulated)]
    if report.peers:
        from albert_edge.bench_latency.peers import markdown_section as peers_section

        out += [peers_section(report.peers)]
    if report.warnings:
        out += ["## Warnings", ""] + [f"- {w}" for w in report.warnings] + [""]
    return "\n".join(out)


def _drift_sections(accuracy: list[dict]) -> list[str]:
    """The drift table of each task in the report, as the task declares it (``Task.drift_markdown``).

    Entries written before they named their task are classification entries; a task this version
    does not know (a report from a newer one) gets every number of its entries.
    """
    from albert_edge.tasks import TASK_NAMES, Task, task_class

    by_task: dict[str, list[dict]] = {}
    for entry in accuracy:
        by_task.setdefault(entry.get("task") or "sequence_classification", []).append(entry)
    out: list[str] = []
    for name, entries in by_task.items():
        cls = task_class(name) if name in TASK_NAMES else Task
        out += cls.drift_markdown(entries)
    return out


def _real_length_ratios(report: BenchReport) -> list[str]:
    """Each variant's p50 at real lengths over its own p50 at the longest fixed length, same run.

    The work shrinks with the length; a ratio well above (median real length / that length) is a
    fixed per-call cost (new-shape preparation, dispatch, the classifier) worth hunting.
    """
    fixed = [r["seq_len"] for r in report.results if isinstance(r["seq_len"], int)]
    if not fixed or not any(r["seq_len"] == "real" for r in report.results):
        return []
    longest = max(fixed)
    lines = [f"## Real lengths vs padding to {longest}", "",
             f"p50 at the eval set's real lengths divided by p50 at {longest} tokens, same variant, backend, "
             "threads and run.", "",
             f"| variant | source | backend | threads | p50 ms real | p50 ms @ {longest} | ratio |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in report.results:
        if r["seq_len"] != "real":
            continue
        full = next((f for f in report.results if f["seq_len"] == longest and f["variant"] == r["variant"]
                     and f["backend"] == r["backend"] and f["threads"] == r["threads"]
                     and f["source"] == r["source"]), None)
        if full is None:
            continue
        lines.append(f"| {r['variant']} | {r['source']} | {r['backend']} | {r['threads'] or '–'} | "
                     f"{_fmt(_p50(r))} | {_fmt(_p50(full))} | {_p50(r) / _p50(full):.2f}x |")
    return [*lines, ""]


def _load_and_memory(report: BenchReport) -> list[str]:
    """Per variant, backend and source: median init and first inference, and the model's own memory.

    Host rows carry the model's memory (RSS minus a runtime-only baseline, bench_latency/memory.py):
    after load, after the first inference and the peak during the timed runs at each length (the
    largest over thread counts). Device rows carry benchmark_model's peak footprint.
    """
    groups: dict[tuple, list[dict]] = {}
    for r in report.results:
        groups.setdefault((r["variant"], r["backend"], r["source"]), []).append(r)
    if not groups:
        return []
    seq_lens = sorted({r["seq_len"] for r in report.results if r.get("memory")}, key=_seq_key)
    methods = sorted({r["memory"]["method"] for r in report.results if r.get("memory")})
    lines = ["## Load time and model memory", "",
             "Init is the model load (file read, interpreter built, delegate applied); first inference includes "
             "tensor allocation for its shape; cold start is their sum (what an app waits for its first answer; "
             "benchmarks/suites/cold_start.py times it in fresh processes, with and without XNNPACK's weight cache); "
             "medians over every configuration. Model memory is the worker's "
             "resident set minus its baseline after importing only the runtime (numpy, the interpreter, the "
             "albert_edge loader), as TFLite's benchmark_model measures it: weights, delegate packing and arena, "
             "not Python. Measured with " + ("; ".join(methods) or "–") + ". Device rows: benchmark_model's "
             "peak memory footprint.", "",
             "| variant | source | backend | size | init ms | first inference ms | cold start ms | model MB after load | "
             "model MB after 1st inference | " + " | ".join(f"model peak MB @ {s}" for s in seq_lens)
             + (" | " if seq_lens else "") + "device peak MB |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|" + "---:|" * len(seq_lens) + "---:|"]
    for (variant, backend, source), rows in groups.items():
        size = (report.variant(variant) or {}).get("size_bytes")
        inits = [r["init_ms"] for r in rows if r["init_ms"] is not None]
        firsts = [r["first_inference_ms"] for r in rows if r["first_inference_ms"] is not None]
        colds = [r["init_ms"] + r["first_inference_ms"] for r in rows
                 if r["init_ms"] is not None and r["first_inference_ms"] is not None]
        mems = [r["memory"] for r in rows if r.get("memory")]
        loads = [m["model_after_load_mb"] for m in mems]
        after_first = [m["model_after_first_mb"] for m in mems]
        peaks = [_fmt(max((r["memory"]["model_peak_mb"] for r in rows if r.get("memory") and r["seq_len"] == s),
                          default=None), ".1f") for s in seq_lens]
        device = [r["peak_rss_mb"] for r in rows if source == "device" and r["peak_rss_mb"] is not None]
        lines.append(f"| {variant} | {source} | {backend} | {_size(size)} | "
                     f"{_fmt(float(np.median(inits)) if inits else None)} | "
                     f"{_fmt(float(np.median(firsts)) if firsts else None)} | "
                     f"{_fmt(float(np.median(colds)) if colds else None)} | "
                     f"{_fmt(float(np.median(loads)) if loads else None, '.1f')} | "
                     f"{_fmt(float(np.median(after_first)) if after_first else None, '.1f')} | "
                     + "".join(f"{p} | " for p in peaks) + f"{_fmt(max(device) if device else None)} |")
    return [*lines, ""]


def overall_recommendation(report: BenchReport) -> dict | None:
    """The headline pick: host results at real lengths if measured, else at the longest length."""
    host = [r for r in report.results if r["source"] == "host"]
    seq_len = headline_seq_len(r["seq_len"] for r in host)
    if seq_len is None:
        return None
    accuracy = {a["variant"]: a for a in report.accuracy}
    return recommend(report.results, accuracy, report.baseline(), seq_len,
                     report.settings.get("max_drop", 0.5), max_threads=_host_cores(report))


def _host_cores(report: BenchReport) -> int | None:
    """Physical cores of the host the numbers were measured on (None for a device-only report)."""
    cores = report.machine.get("physical_cores") if report.machine.get("kind") == "host" else None
    return int(cores) if cores else None
