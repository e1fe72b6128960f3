"""report.md: one table per sequence length, the recommendation first, warnings last."""

from __future__ import annotations

from typing import Any

import numpy as np

from albert_edge.bench_latency.analysis import (
    _p50,
    accuracy_drop_points,
    headline_seq_len,
    recommend,
    speedup_vs_baseline,
)
from albert_edge.bench_latency.real_length import real_length_section
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.bench_latency.stats import PairedRatio


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


def _markdown_safe(report: BenchReport) -> BenchReport:
    """A copy whose strings cannot break report.md's tables (``md_escape``); the recommendation and
    warnings are albert-edge's own sentences and stay as written."""
    from dataclasses import fields, replace

    from albert_edge.bench_latency.md_escape import md_escaped

    keep = {"recommendation", "warnings"}
    return replace(report, **{f.name: md_escaped(getattr(report, f.name)) for f in fields(report) if f.name not in keep})


def render_markdown(report: BenchReport) -> str:
    """The human report; every number comes from ``report`` (nothing is re-measured)."""
    report = _markdown_safe(report)
    baseline = report.baseline()
    accuracy = {a["variant"]: a for a in report.accuracy}
    machine = report.machine
    settings = report.settings
    out = ["# albert-edge bench", ""]
    if report.recommendation:
        from albert_edge.bench_latency.bench_verdict import bench_verdict
        from albert_edge.verdict import verdict_lines

        # The one verdict (the console prints the same block); each length's pick below is a detail.
        out += ["```", *verdict_lines(bench_verdict(report)), "```", "",
                f"**Why:** {report.recommendation['text']}", ""]
    out += _unstable_block(report)
    if machine.get("kind") == "host":
        out += [f"Host: {machine.get('cpu_model', '?')}, {machine.get('physical_cores', '?')} physical / "
                f"{machine.get('logical_cores', '?')} logical cores, SIMD {', '.join(machine.get('simd', [])) or '–'}; "
                f"{', '.join(f'{k} {v}' for k, v in machine.get('packages', {}).items())}. "
                f"Load average at start {_load(machine.get('load_average'))}, at end "
                f"{_load(settings.get('load_average_end'))}{_busy(machine, settings)}.",
                f"Batch {settings.get('batch')}, {_schedule(report)}{', pinned' if settings.get('pin') else ''}. "
                f"Baseline: {baseline or '–'}. "
                f"Accuracy on {settings.get('eval') or '– (no --eval)'}; budget {settings.get('max_drop')} points.",
                ""]
        out += _contention_lines(report)
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
        out += ["| variant | source | backend | threads | size | p50 ms | p90 ms | CV of rounds | speed-up vs "
                f"{baseline or 'baseline'} | time vs {baseline or 'baseline'} [95 % interval], rounds | accuracy | "
                "Δaccuracy (pts) | agreement |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        rows.sort(key=lambda r: (r["source"], r["threads"] or 0, _p50(r)))
        for r in rows:
            variant = report.variant(r["variant"]) or {}
            acc = accuracy.get(r["variant"])
            drop = accuracy_drop_points(accuracy, r["variant"], baseline)
            paired = r.get("vs_baseline")
            speedup = 1.0 / paired["ratio"] if paired else speedup_vs_baseline(report.results, r, baseline)
            p50 = _fmt(r["latency_ms"]["median"]) if r["latency_ms"]["median"] is not None \
                else _fmt(r["latency_ms"]["mean"]) + " (avg)"
            device = f" ({r['device']})" if r.get("device") else ""
            out.append(
                f"| {r['variant']} | {r['source']}{device} | {r['backend']} | {r['threads'] or '–'} | "
                f"{_size(variant.get('size_bytes'))} | {p50} | {_fmt(r['latency_ms']['p90'])} | "
                f"{_fmt(_percent(r, 'latency_cv'), '.1f', ' %')} | "
                f"{_fmt(speedup, '.2f', 'x')} | {_paired_cell(paired)} | {_fmt(_percent(acc, 'accuracy'), '.2f', '%')} | "
                f"{_fmt(0.0 - drop if drop is not None else None, '+.2f')} | "
                f"{_fmt(_percent(acc, 'agreement'), '.2f', '%')} |")
        pick = recommend(report.results, accuracy, baseline, seq_len, settings.get("max_drop", 0.5),
                         max_threads=_host_cores(report))
        if pick:
            text = pick["text"].removeprefix("ship ")
            out += ["", f"→ fastest within budget at this length (a detail: the verdict above says what to ship): {text}"]
        out.append("")
    out += real_length_section(report)
    out += _load_and_memory(report)
    out += _memory_breakdown(report)
    out += _drift_sections(report.accuracy)
    scaling = [s for s in report.thread_scaling if len(s["points"]) > 1]
    if scaling:
        out += ["## Thread scaling (speed-up over 1 thread, or paired time ratio)", "",
                ("Where both counts were timed in the same rounds, a cell is instead its time over the next "
                 "fewer threads' with the 95 % interval (below 1.0: faster); a count is called slower or faster "
                 "only when that interval excludes 1.0."), ""]
        threads = sorted({p["threads"] for s in scaling for p in s["points"]})
        out += ["| variant | backend | seq | source | " + " | ".join(f"{n}T" for n in threads) + " |",
                "|---|---|---|---|" + "---:|" * len(threads)]
        for s in sorted(scaling, key=lambda s: (s["source"], _seq_key(s["seq_len"]), s["variant"])):
            by_n = {p["threads"]: p for p in s["points"]}
            cells = [_scaling_cell(by_n[n]) if n in by_n else "" for n in threads]
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


def _paired_cell(paired: dict | None) -> str:
    """``0.42x [0.41–0.43], 40 rounds``, marked when the comparison was made under contention."""
    if not paired:
        return "–"
    text = PairedRatio.from_dict(paired).text()
    return text + (" (contended)" if paired.get("contended") else "")


def _scaling_cell(point: dict) -> str:
    """The paired time ratio over the next fewer threads when there is one, else the pooled speed-up.

    Both are never shown together: a speed-up from pooled medians can point the other way than the
    paired ratio of the same rounds, and only the paired one is a measurement of the difference.
    """
    fewer = point.get("vs_fewer")
    if fewer:
        return f"time over {fewer['threads']}T: {PairedRatio.from_dict(fewer).text()}"
    return _fmt(point["speedup_vs_1"], ".2f", "x")


def _schedule(report: BenchReport) -> str:
    """How the numbers were timed: paired rounds (this version) or one process per round (older reports)."""
    settings = report.settings
    groups = (report.stability or {}).get("groups") or []
    if not groups:
        return (f"{settings.get('runs')} timed runs after {settings.get('warmup')} warm-up in "
                f"{settings.get('rounds')} interleaved rounds, one process per configuration")
    rounds = "/".join(str(g["rounds"]) for g in groups)
    stopped = sorted({g["stopped"] for g in groups})
    return (f"{rounds} paired rounds (per sequence length) of {groups[0]['calls_per_round']} timed calls per "
            f"configuration after {settings.get('warmup')} warm-up, one long-lived process per configuration, "
            f"order shuffled per round; stopped on: {', '.join(stopped)} (target ±"
            f"{(report.stability or {}).get('target_precision', 0) * 100:g} %)")


def _contention_lines(report: BenchReport) -> list[str]:
    """Load before and during each length's rounds against the cores, and how many comparisons waited."""
    judged = report.stability or {}
    groups = judged.get("groups") or []
    if not groups:
        return []
    parts = []
    for g in groups:
        during = g.get("load_average_during") or {}
        parts.append(f"seq {g['seq_len']}: load {_load((g.get('load_average_before') or [])[:1])} before, "
                     f"{during.get('median', 0):.1f} median / {during.get('max', 0):.1f} max during "
                     f"({g['logical_cores']} logical cores)")
    contended = judged.get("contended") or []
    line = ("Contention: " + "; ".join(parts) + ". " +
            (f"{len(contended)} comparison(s) were made under contention (other processes held the CPUs "
             "their workers needed, or, where that is not measured, they waited for a CPU more than 10 % "
             "of the timed time or the load exceeded the cores): pairing cancels most of a "
             "neighbour's load, but not all of it, so their ratios lean toward 1.0 and their absolute "
             "latencies are pessimistic." if contended else "No comparison was made under contention."))
    return [line, ""]


def _unstable_block(report: BenchReport) -> list[str]:
    """UNSTABLE: ratios that the run could not pin down, and results that cannot be true."""
    judged = report.stability or {}
    unstable, impossible = judged.get("unstable") or [], judged.get("impossible") or []
    if not unstable and not impossible:
        return []
    target = judged.get("target_precision", 0) * 100
    out = ["## UNSTABLE", "",
           (f"These ratios did not hold still to the ±{target:g} % target on this machine during this run, or "
            "cannot be true. A verdict above uses a wide interval only where even it excludes the alternative; "
            "an impossible ratio means the run measured contention or a broken setup, not the model."), ""]
    out += [f"- IMPOSSIBLE: {line}" for line in impossible]
    out += [f"- {line}" for line in unstable]
    return [*out, ""]


def _drift_sections(accuracy: list[dict]) -> list[str]:
    """The drift table of each task in the report (``drift.drift_section``).

    Entries written before they named their task are classification entries; a task this version
    does not know (a report from a newer one) gets every number of its entries.
    """
    from albert_edge.bench_latency.drift import drift_section

    by_task: dict[str, list[dict]] = {}
    for entry in accuracy:
        by_task.setdefault(entry.get("task") or "sequence_classification", []).append(entry)
    out: list[str] = []
    for name, entries in by_task.items():
        out += drift_section(name, entries)
    return out


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
    caches = sorted({r["memory"].get("page_cache", "") for r in report.results if r.get("memory")} - {""})
    lines = ["## Load time and model memory", "",
             "First answer is what an app waits for: the pack's task runtime (TextClassifier, TextEmbedder, "
             "TokenClassifier, QuestionAnswerer) from_file and its first answer, in a fresh process (pack, "
             "metadata, tokenizer, load-time checks, interpreter, one call). Beside it, the interpreter's part: "
             "init is the model load (file mapped as `from_file` maps it, interpreter built, delegate applied); "
             "first inference includes tensor allocation for its shape; interpreter cold start is their sum "
             "(benchmarks/suites/cold_start.py times both in fresh processes, step by step); "
             "medians over every configuration. Model memory is the worker's "
             "resident set minus its baseline after importing only the runtime (numpy, the interpreter, the "
             "albert_edge loader), as TFLite's benchmark_model measures it: weights, delegate packing and arena, "
             "not Python. Measured with " + ("; ".join(methods) or "–") + "; the model file in the page cache "
             + ("; ".join(caches) or "as found") + ", since its resident pages depend on how it entered there "
             "(record 0307). Device rows: benchmark_model's "
             "peak memory footprint.", "",
             "| variant | source | backend | size | first answer ms | init ms | first inference ms | interpreter cold start ms "
             "| model MB after load | "
             "model MB after 1st inference | " + " | ".join(f"model peak MB @ {s}" for s in seq_lens)
             + (" | " if seq_lens else "") + "device peak MB |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(seq_lens) + "---:|"]
    for (variant, backend, source), rows in groups.items():
        size = (report.variant(variant) or {}).get("size_bytes")
        answers = [r["first_answer_ms"] for r in rows if r.get("first_answer_ms") is not None]
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
                     f"{_fmt(float(np.median(answers)) if answers else None)} | "
                     f"{_fmt(float(np.median(inits)) if inits else None)} | "
                     f"{_fmt(float(np.median(firsts)) if firsts else None)} | "
                     f"{_fmt(float(np.median(colds)) if colds else None)} | "
                     f"{_fmt(float(np.median(loads)) if loads else None, '.1f')} | "
                     f"{_fmt(float(np.median(after_first)) if after_first else None, '.1f')} | "
                     + "".join(f"{p} | " for p in peaks) + f"{_fmt(max(device) if device else None)} |")
    return [*lines, ""]


def _memory_breakdown(report: BenchReport) -> list[str]:
    """Where each variant's model memory goes after its first call (host rows with the split), per length.

    The split is the worker's (bench_latency/memory.py). The ratio issue #39 judges is the model's own memory
    over the file (record 0290): the runtime's library code pages are a per-process cost, shown apart, and
    the total with them stays in the table. Own = the file's mapped pages + the graph's packed weights (per
    use) + the heap's rest (arena, activations, scratch, interpreter structures).
    """
    groups: dict[tuple, list[dict]] = {}
    for r in report.results:
        if r["source"] == "host" and (r.get("memory") or {}).get("part_file_mb") is not None:
            groups.setdefault((r["variant"], r["backend"], r["seq_len"]), []).append(r["memory"])
    if not groups:
        return []
    lines = ["## Where the model memory goes", "",
             "After the first call, medians over configurations. The file is mapped as an app's `from_file` maps "
             "it: file mapped = its resident pages. Packed weights: the graph's matmul weights summed per op that "
             "uses them (what XNNPACK without a weight cache packs; once: per distinct buffer, ALBERT's shared "
             "layer once). Arena & rest: the heap's remainder (tensor arena, activations, kernels' scratch, the "
             "interpreter's structures). Own: the model's memory (the three parts), which x file judges. Library "
             "code: the runtime's shared-object pages the load and first call faulted in (any model pays them "
             "once per process); total: own + library code, the figure before record 0290. Not included: the "
             "tokenizer (the worker feeds token ids). Interpreter / first call: the total split in time (built "
             "with its delegate applied; what the first call at that length adds).", "",
             "| variant | backend | tokens | file mapped MB | packed weights MB | arena & rest MB | own MB "
             "| own x file | library code MB | total MB | total x file | interpreter MB | first call MB "
             "| packed once MB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (variant, backend, seq_len), mems in sorted(groups.items(), key=lambda kv: (kv[0][:2], _seq_key(kv[0][2]))):
        lines.append(_breakdown_row(variant, backend, seq_len, mems, (report.variant(variant) or {}).get("size_bytes")))
    return [*lines, ""]


def _breakdown_row(variant: str, backend: str, seq_len: Any, mems: list[dict], size: int | None) -> str:
    """One breakdown row: medians of each part over ``mems``, the ratios over the file's ``size``."""
    def med(key: str) -> float | None:
        values = [m[key] for m in mems if m.get(key) is not None]
        return float(np.median(values)) if values else None

    def times(mb: float | None) -> float | None:
        return mb * 2**20 / size if mb is not None and size else None

    model, own = med("model_after_first_mb"), med("model_own_after_first_mb")
    cells = [_fmt(med("part_file_mapped_mb"), ".1f"), _fmt(med("weights_packed_per_use_mb"), ".1f"),
             _fmt(med("part_arena_rest_mb"), ".1f"), _fmt(own, ".1f"), _fmt(times(own), ".2f", "x"),
             _fmt(med("part_library_code_mb"), ".1f"), _fmt(model, ".1f"), _fmt(times(model), ".2f", "x"),
             _fmt(med("part_interpreter_mb"), ".1f"), _fmt(med("part_first_call_mb"), ".1f"),
             _fmt(med("weights_packed_once_mb"), ".1f")]
    return f"| {variant} | {backend} | {seq_len} | " + " | ".join(cells) + " |"


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
