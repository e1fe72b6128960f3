"""The peers comparison (``benchmarks/suites/peers.py``'s JSON) as a part of the bench report.

``benchmarks/suites/peers.py`` times albert-edge's files beside other tools' (Optimum's TFLite export,
optimum-onnx + ONNX Runtime, ExecuTorch, litert-torch + litert-quantizer) in one interleaved run of its own
and prints a JSON
document; ``albert-edge bench --import-peers peers.json --out DIR`` stores it under the report's
optional ``peers`` key, and report.md / report.png show it in a section of their own. It is kept
apart from ``results`` on purpose: its ratios are to albert-edge's fp32 TFLite file *of the peers
run* (same harness, same checkpoint, same minutes), and a ratio across two runs would measure the
machine's load as much as the files.

Schema (``schema_version`` 1)::

    tool "benchmarks/peers.py", schema_version, created_utc, machine (describe_machine()),
    settings   {threads, rounds, runs, warmup, seq_lens [128, "real"], eval, examples, baseline,
                load_average_end, command (optional: the command line of the run)}
    checkpoint {path, note}
    variants[] {name, tool, format, runtime, file, size_bytes, static_shape, steps, limits, versions,
                notes (optional: what the builder found in the file)}
    results[]  {variant, seq_len (int | "real"), threads, latency_ms {count,min,median,mean,p90,p99,std,max},
                round_medians_ms, init_ms, first_inference_ms, ratio_vs_baseline}
    accuracy[] {variant, examples, accuracy, agreement, max_abs_logit_diff, seq_len}
    skipped[]  {variant, seq_len, reason}      (a static-shape file at real lengths, say)
    failed[]   {variant, stage, error}         (a peer that did not build or run: said, not hidden)
"""

from __future__ import annotations

from pathlib import Path

from albert_edge.bench_latency.documents import LATENCY_KEYS, read_json_file, require_keys
from albert_edge.bench_latency.typed import (
    LATENCY,
    MS,
    RATIO,
    SEQ_LEN,
    TEXT,
    THREADS,
    Bool,
    Int,
    Json,
    ListOf,
    Num,
    Obj,
    Optional,
    Str,
    check,
)
from albert_edge.errors import DataError

PEERS_SCHEMA_VERSION = 1
PEERS_TOOL = "benchmarks/peers.py"
TOP_KEYS = ("tool", "schema_version", "created_utc", "machine", "settings", "checkpoint", "variants",
            "results", "accuracy", "skipped", "failed")
VARIANT_KEYS = ("name", "tool", "format", "runtime", "file", "size_bytes", "static_shape", "steps", "limits")
RESULT_KEYS = ("variant", "seq_len", "threads", "latency_ms", "round_medians_ms", "init_ms",
               "first_inference_ms", "ratio_vs_baseline")
ACCURACY_KEYS = ("variant", "examples", "accuracy", "agreement", "max_abs_logit_diff", "seq_len")

# The types of every field the Markdown section and the PNG panel read (other keys pass as JSON).
PEERS_SPEC = Obj({
    "tool": TEXT, "schema_version": Int(1, 1), "created_utc": TEXT,
    "machine": Obj({}, {"cpu_model": Optional(TEXT), "physical_cores": Optional(Int(1, 100_000)),
                        "simd": ListOf(Str(100)), "load_average": Json()}),
    "settings": Obj({"threads": THREADS, "rounds": Int(1, 1_000_000), "runs": Int(1, 10**9),
                     "warmup": Int(0, 10**9), "baseline": TEXT},
                    {"seq_lens": ListOf(SEQ_LEN), "eval": Optional(TEXT), "examples": Optional(Int(0, 10**9)),
                     "load_average_end": Json(), "command": Optional(TEXT)}),
    "checkpoint": Obj({}, {"path": Optional(TEXT), "note": Optional(TEXT)}),
    "variants": ListOf(Obj({"name": TEXT, "tool": TEXT, "format": TEXT, "runtime": TEXT, "file": Optional(TEXT),
                            "size_bytes": Optional(Int(0, 10**13)), "static_shape": Bool(), "steps": TEXT,
                            "limits": TEXT}, {"sha256": Optional(TEXT), "versions": Json(), "notes": Json()})),
    "results": ListOf(Obj({"variant": TEXT, "seq_len": SEQ_LEN, "threads": THREADS, "latency_ms": LATENCY,
                           "round_medians_ms": ListOf(MS), "init_ms": Optional(MS),
                           "first_inference_ms": Optional(MS), "ratio_vs_baseline": Optional(Num(0.0, 1e6))})),
    "accuracy": ListOf(Obj({"variant": TEXT, "examples": Optional(Int(0, 10**9)), "accuracy": Optional(RATIO),
                            "agreement": Optional(RATIO), "max_abs_logit_diff": Optional(Num(0.0, 1e12)),
                            "seq_len": SEQ_LEN})),
    "skipped": ListOf(Obj({"variant": TEXT, "seq_len": Optional(SEQ_LEN), "reason": TEXT})),
    "failed": ListOf(Obj({"variant": TEXT, "stage": TEXT, "error": TEXT})),
})


def validate_peers(data: object, source: str = "<peers>") -> None:
    """Raise DataError naming the first missing or wrong field of a peers JSON document."""
    require_keys(data, TOP_KEYS, source)
    assert isinstance(data, dict)
    if data["tool"] != PEERS_TOOL:
        raise DataError(f"{source}: tool {data['tool']!r}, expected {PEERS_TOOL!r} (is this a peers.py output?)")
    if data["schema_version"] != PEERS_SCHEMA_VERSION:
        raise DataError(f"{source}: schema_version {data['schema_version']!r}, expected {PEERS_SCHEMA_VERSION}")
    check(data, PEERS_SPEC, source)  # every type and range, before the cross-references below
    for i, variant in enumerate(data["variants"]):
        require_keys(variant, VARIANT_KEYS, f"{source}: variants[{i}]")
    names = {v["name"] for v in data["variants"]}
    baseline = data["settings"].get("baseline")
    if baseline not in names:
        raise DataError(f"{source}: settings.baseline {baseline!r} is not one of the variants")
    for section, keys in (("results", RESULT_KEYS), ("accuracy", ACCURACY_KEYS)):
        for i, row in enumerate(data[section]):
            where = f"{source}: {section}[{i}]"
            require_keys(row, keys, where)
            if row["variant"] not in names:
                raise DataError(f"{where}: variant {row['variant']!r} is not listed in variants")
            if not (isinstance(row["seq_len"], int) or row["seq_len"] == "real"):
                raise DataError(f"{where}: seq_len {row['seq_len']!r}, expected an int or 'real'")
            if section == "results":
                require_keys(row["latency_ms"], LATENCY_KEYS, f"{where}.latency_ms")


def load_peers(path: str | Path) -> dict:
    """Read and validate a peers JSON file (the stdout of ``benchmarks/suites/peers.py``, or its peers.json)."""
    path = Path(path)
    data = read_json_file(path, "peers JSON file")
    validate_peers(data, str(path))
    return data


def _fmt(value: float | None, spec: str = ".3g", suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def _seq_key(seq_len: int | str) -> tuple:
    return (1, 0) if seq_len == "real" else (0, seq_len)


def markdown_section(peers: dict) -> str:
    """report.md's "Peers" section: one table per sequence length, ratios to the run's own baseline."""
    settings, machine = peers["settings"], peers["machine"]
    variants = {v["name"]: v for v in peers["variants"]}
    accuracy = {a["variant"]: a for a in peers["accuracy"]}
    lines = ["## Peers: the same checkpoint through other tools", "",
             (f"From `{PEERS_TOOL}` ({peers['created_utc']}): {machine.get('cpu_model', '?')}, "
             f"{machine.get('physical_cores', '?')} physical cores, SIMD {', '.join(machine.get('simd', [])) or '–'}; "
             f"load average {machine.get('load_average')} at start, {settings.get('load_average_end')} at end. "
             f"{settings['threads']} threads, batch 1, {settings['runs']} timed runs per round after "
             f"{settings['warmup']} warm-up, {settings['rounds']} interleaved rounds, one process per configuration; "
             f"accuracy on {settings.get('eval')} ({settings.get('examples')} examples). Ratios are to "
             f"**{settings['baseline']}** timed in the same run. Checkpoint: {peers['checkpoint'].get('note', '')}"), ""]
    for seq_len in sorted({r["seq_len"] for r in peers["results"]}, key=_seq_key):
        title = "real token lengths of the eval set" if seq_len == "real" else f"{seq_len} tokens"
        lines += [f"### {title}", "",
                  "| variant | tool | runtime | shape | size | p50 ms | p90 ms | ratio | accuracy | agreement |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
        rows = sorted((r for r in peers["results"] if r["seq_len"] == seq_len), key=lambda r: r["latency_ms"]["median"])
        for r in rows:
            v, acc = variants[r["variant"]], accuracy.get(r["variant"]) or {}
            shape = "static [1,128]" if v["static_shape"] else "dynamic"
            size = f"{v['size_bytes'] / 1e6:.2f} MB" if v.get("size_bytes") else "–"
            lines.append(f"| {r['variant']} | {v['tool']} | {v['runtime']} | {shape} | {size} | "
                         f"{_fmt(r['latency_ms']['median'])} | {_fmt(r['latency_ms']['p90'])} | "
                         f"{_fmt(r['ratio_vs_baseline'], '.2f', 'x')} | "
                         f"{_fmt(acc['accuracy'] * 100 if acc.get('accuracy') is not None else None, '.2f', '%')} | "
                         f"{_fmt(acc['agreement'] * 100 if acc.get('agreement') is not None else None, '.2f', '%')} |")
        lines.append("")
    for s in peers["skipped"]:
        lines.append(f"- not timed: {s['variant']} at {s['seq_len']}: {s['reason']}")
    for f in peers["failed"]:
        lines.append(f"- **failed**: {f['variant']} ({f['stage']}): {f['error']}")
    lines += ["", "How each peer's file was made, and its limits:", ""]
    for v in peers["variants"]:
        lines.append(f"- **{v['name']}**: {v['steps']} Limits: {v['limits']}")
    return "\n".join(lines) + "\n"


def plot_panel(ax, peers: dict) -> None:
    """Horizontal bars of each variant's ratio to the run's baseline at 128 tokens (and real lengths)."""
    seq_lens = sorted({r["seq_len"] for r in peers["results"]}, key=_seq_key)
    names = [v["name"] for v in peers["variants"] if any(r["variant"] == v["name"] for r in peers["results"])]
    height = 0.8 / max(len(seq_lens), 1)
    for k, seq_len in enumerate(seq_lens):
        ratio = {r["variant"]: r["ratio_vs_baseline"] for r in peers["results"] if r["seq_len"] == seq_len}
        ys = [i + k * height for i, n in enumerate(names) if ratio.get(n) is not None]
        xs = [ratio[n] for n in names if ratio.get(n) is not None]
        ax.barh(ys, xs, height=height, label=f"seq {seq_len}", color=("tab:blue", "tab:orange", "tab:green")[k % 3])
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_yticks([i + height * (len(seq_lens) - 1) / 2 for i in range(len(names))], names, fontsize=10)
    ax.invert_yaxis()
    ax.set_xlabel(f"p50 time / {peers['settings']['baseline']} (same run)")
    ax.set_title(f"peers, {peers['settings']['threads']} threads")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=9)
