"""Phone numbers: adb commands for TFLite's ``benchmark_model`` and a parser for what it prints.

The host is not the target. ``device_commands.sh`` runs the official benchmark tool on a phone for
every .tflite variant with the same thread counts and sequence lengths as the host sweep; its log is
parsed back into report.json results (``source: "device"``) so phone and host sit in one table.

Parsed lines (TFLite benchmark_model, 2.x; see tensorflow/lite/tools/benchmark/README.md)::

    Graph: [/data/local/tmp/albert_edge/fp32.tflite]        Num threads: [4]
    Input shapes: [1,128:1,128:1,128]                        Use xnnpack: [1]
    count=50 first=2990275 curr=2913402 min=2727568 max=3189954 avg=2.95034e+06 std=109798
        (newer tools append " p5=... median=... p95=..."; all values in microseconds)
    Inference timings in us: Init: 17187, First inference: 3512391, Warmup (avg): 3.51239e+06, Inference (avg): 2.95034e+06
    Peak memory footprint (MB): init=4.92969 overall=138.809
        (older tools: "Memory footprint delta from the start of the tool (MB): init=... overall=...")
    Operator-wise Profiling Info for Regular Benchmark Runs:  ... "Summary by node type" table
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from albert_edge.errors import DataError

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
DEVICE_DIR = "/data/local/tmp/albert_edge"
NIGHTLY_BINARY = ("https://storage.googleapis.com/tensorflow-nightly-public/prod/tensorflow/release/lite/"
                  "tools/nightly/latest/android_aarch64_benchmark_model")
#: The longest time a log may report, in microseconds (a day): 1e308 is a garbled log, not a slow phone.
MAX_MICROSECONDS = 86_400e6
# Random ids for timing only; the same range as the host worker, valid for any vocab >= 100.
ID_RANGE = (1, 99)

_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_STAT = re.compile(r"^(?:Timings \(microseconds\): )?count=(\d+)(.*)$")
_STAT_FIELD = re.compile(rf"(first|curr|min|max|avg|std|p5|median|p95)=({_NUMBER})")
_TIMINGS = re.compile(
    rf"Inference timings in us: Init: ({_NUMBER}), First inference: ({_NUMBER}), "
    rf"Warmup \(avg\): ({_NUMBER}), Inference \(avg\): ({_NUMBER})")
_MEMORY = re.compile(rf"(Peak memory footprint|Memory footprint delta from the start of the tool) "
                     rf"\(MB\): init=({_NUMBER}) overall=({_NUMBER})")
_PARAM = re.compile(r"^(Graph|Num threads|#threads used for CPU inference|Input layers|Input shapes|Use xnnpack"
                    r"|Min num runs|Num runs|Min warmup runs): \[(.*)\]$")
# Newer builds prefix every log line with its severity ("INFO: Num threads: [4]").
_SEVERITY = re.compile(r"^(?:INFO|WARNING|ERROR|VERBOSE): ")
_TYPE_ROW = re.compile(rf"^\s*([A-Za-z_][\w ]*?)\s+(\d+)\s+({_NUMBER})\s+({_NUMBER})%\s+({_NUMBER})%"
                       rf"\s+({_NUMBER})\s+(\d+)\s*$")


@dataclass(frozen=True)
class DeviceRun:
    """One benchmark_model invocation parsed from its log; times in milliseconds."""

    graph: str
    threads: int | None
    batch: int | None
    seq_len: int | None
    use_xnnpack: bool | None
    init_ms: float
    first_inference_ms: float
    warmup_avg_ms: float
    inference_avg_ms: float
    stats_us: dict[str, float]
    peak_memory_mb: float | None
    op_profile: list[dict] | None


def _parse_stat(rest: str, count: str) -> dict[str, float]:
    stats = {k: float(v) for k, v in _STAT_FIELD.findall(rest)}
    stats["count"] = float(count)
    return stats


def _parse_type_summary(lines: list[str]) -> list[dict] | None:
    """Rows of the last 'Summary by node type' table of the regular (not init) profiling section."""
    marker = next((i for i in range(len(lines) - 1, -1, -1)
                   if "Operator-wise Profiling Info for Regular Benchmark Runs" in lines[i]), None)
    if marker is None:
        return None
    rows, in_table = [], False
    for line in lines[marker:]:
        if "Summary by node type" in line:
            in_table, rows = True, []
            continue
        if in_table:
            match = _TYPE_ROW.match(line)
            if match:
                rows.append({"node_type": match.group(1).strip(), "count": int(match.group(2)),
                             "avg_ms": float(match.group(3)), "percent": float(match.group(4)),
                             "cdf_percent": float(match.group(5)), "mem_kb": float(match.group(6)),
                             "times_called": int(match.group(7))})
            elif rows and not line.strip().startswith("["):
                in_table = False
    return rows or None


def _parse_one(text: str, source: str, first_line: int = 1) -> DeviceRun:
    lines = [_SEVERITY.sub("", line.rstrip("\r")) for line in text.splitlines()]
    params: dict[str, str] = {}
    stats: list[dict[str, float]] = []
    timings = memory = None
    for number, raw in enumerate(lines, start=first_line):
        line = raw.strip()
        if timings is None and "Inference timings in us" in line and not _TIMINGS.search(line):
            raise DataError(f"{source}:{number}: garbled timings line {line[:80]!r}: expected 'Inference timings "
                            "in us: Init: N, First inference: N, Warmup (avg): N, Inference (avg): N'")
        param = _PARAM.match(line)
        if param and param.group(1) not in params:
            params[param.group(1)] = param.group(2)
        stat = _STAT.match(line)
        if stat and timings is None and not line.startswith("Timings"):
            stats.append(_parse_stat(stat.group(2), stat.group(1)))
        if timings is None and (found := _TIMINGS.search(line)):
            timings = [float(x) for x in found.groups()]
        if memory is None and (found := _MEMORY.search(line)):
            memory = float(found.group(3))
    if timings is None:
        raise DataError(f"{source}: no 'Inference timings in us: Init: ..., First inference: ..., "
                        f"Warmup (avg): ..., Inference (avg): ...' line; is this benchmark_model output?")
    if not stats:
        raise DataError(f"{source}: no 'count=... min=... max=... avg=...' line before the timings")
    if not all(0 <= t <= MAX_MICROSECONDS for t in timings):
        raise DataError(f"{source}: 'Inference timings in us' {', '.join(f'{t:g}' for t in timings)}: expected "
                        f"microseconds between 0 and {MAX_MICROSECONDS:g}")
    threads = params.get("Num threads") or params.get("#threads used for CPU inference")
    batch = seq_len = None
    if params.get("Input shapes"):
        dims = [d for d in params["Input shapes"].split(":")[0].split(",") if d]
        if len(dims) == 2 and all(d.lstrip("-").isdigit() for d in dims):
            batch, seq_len = int(dims[0]), int(dims[1])
        else:  # named here, with the log, not later as a report row whose seq_len is None
            raise DataError(f"{source}: Input shapes [{params['Input shapes'][:40]}]: expected batch,seq_len per "
                            "input as benchmark_model prints it (e.g. [1,128:1,128:1,128])")
    xnnpack = params.get("Use xnnpack")
    _check_counts(stats[-1], threads, batch, seq_len, source)
    return DeviceRun(
        graph=params.get("Graph", ""),
        threads=int(threads) if threads and threads.lstrip("-").isdigit() else None,
        batch=batch, seq_len=seq_len,
        use_xnnpack=None if xnnpack is None else xnnpack in ("1", "true"),
        init_ms=timings[0] / 1e3, first_inference_ms=timings[1] / 1e3,
        warmup_avg_ms=timings[2] / 1e3, inference_avg_ms=timings[3] / 1e3,
        stats_us=stats[-1], peak_memory_mb=memory,
        op_profile=_parse_type_summary(lines),
    )


def _check_counts(stats: dict[str, float], threads: str | None, batch: int | None, seq_len: int | None,
                  source: str) -> None:
    """Refuse what no real benchmark_model run prints, before it becomes a report row: ``count=0``
    (no timed run, so no statistics), a thread count or input shape out of all proportion."""
    if not 1 <= stats["count"] <= 10**9:
        raise DataError(f"{source}: count={stats['count']:g}: a benchmark_model run times at least one inference")
    needed = ("min", "max", "avg") if "min" in stats else ("curr",)
    missing = [k for k in needed if k not in stats]
    if missing or not all(0 <= v <= MAX_MICROSECONDS for k, v in stats.items() if k != "count"):
        raise DataError(f"{source}: count={stats['count']:g} line lacks {'='.join(missing) or 'sane values'}: "
                        "is this benchmark_model output?")
    if threads and threads.lstrip("-").isdigit() and not 1 <= int(threads) <= 4096:
        raise DataError(f"{source}: Num threads [{threads[:20]}]: expected 1 to 4096")
    for name, value in (("batch", batch), ("sequence length", seq_len)):
        if value is not None and not 1 <= value <= 1_000_000:
            raise DataError(f"{source}: Input shapes: {name} {str(value)[:20]}: expected 1 to 1000000")


def parse_benchmark_log(text: str, source: str = "<log>") -> list[DeviceRun]:
    """Parse one or more concatenated benchmark_model outputs (split at their 'STARTING!' line)."""
    chunks = re.split(r"^\s*(?:INFO: )?STARTING!\s*$", text, flags=re.MULTILINE)
    runs, first_line = [], 1
    for chunk in chunks:
        if "Inference timings in us" in chunk:
            runs.append(_parse_one(chunk, source, first_line))
        first_line += chunk.count("\n")  # the STARTING! line's own newline starts the next chunk
    if not runs:
        _parse_one(text, source)  # raises the precise error
    return runs


def device_result(run: DeviceRun, variant: str, device: str | None) -> dict:
    """A report.json ``results`` entry (source "device") from one parsed run."""
    s = run.stats_us
    all_same = "min" not in s
    latency = {
        "count": int(s["count"]),
        "min": (s["curr"] if all_same else s["min"]) / 1e3,
        "median": s["median"] / 1e3 if "median" in s else None,
        "mean": (s["curr"] if all_same else s["avg"]) / 1e3,
        "p90": None,
        "p99": None,
        "std": s.get("std", 0.0) / 1e3,
        "max": (s["curr"] if all_same else s["max"]) / 1e3,
    }
    return {
        "variant": variant, "backend": "benchmark_model" + ("+xnnpack" if run.use_xnnpack else ""),
        "backend_version": None, "threads": run.threads, "seq_len": run.seq_len, "batch": run.batch,
        "source": "device", "device": device, "latency_ms": latency, "samples_ms": [],
        "round_medians_ms": [], "init_ms": run.init_ms, "first_inference_ms": run.first_inference_ms,
        "warmup_avg_ms": run.warmup_avg_ms, "peak_rss_mb": run.peak_memory_mb, "rss_before_load_mb": None,
        "oversubscribed": None, "lengths": None, "op_profile": run.op_profile,
        "percentiles_us": {k: s[k] for k in ("p5", "median", "p95") if k in s} or None,
    }


def tflite_input_order(path: str | Path) -> list[str]:
    """Signature input names in the interpreter's input order, which --input_layer must follow."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    signatures = interpreter.get_signature_list()
    key = "serving_default" if "serving_default" in signatures else next(iter(signatures))
    details = interpreter.get_signature_runner(key).get_input_details()
    by_index = {d["index"]: name for name, d in details.items()}
    order = [by_index[d["index"]] for d in interpreter.get_input_details() if d["index"] in by_index]
    return order or list(INPUT_NAMES)


def benchmark_command(device_graph: str, inputs: Sequence[str], threads: int, seq_len: int, batch: int,
                      warmup: int, runs: int, xnnpack: bool = True, profile: bool = True) -> list[str]:
    """The benchmark_model argv (without adb) for one configuration."""
    low, high = ID_RANGE
    ranges = {"input_ids": f"{low},{high}", "attention_mask": "1,1", "token_type_ids": "0,0"}
    value_ranges = ":".join(f"{name},{ranges.get(name, f'{low},{high}')}" for name in inputs)
    return [
        "$BENCH", f"--graph={device_graph}", f"--num_threads={threads}",
        f"--use_xnnpack={'true' if xnnpack else 'false'}", f"--warmup_runs={warmup}", f"--num_runs={runs}",
        f"--enable_op_profiling={'true' if profile else 'false'}", "--report_peak_memory_footprint=true",
        f"--input_layer={','.join(inputs)}",
        f"--input_layer_shape={':'.join(f'{batch},{seq_len}' for _ in inputs)}",
        f"--input_layer_value_range={value_ranges}",
    ]


def device_commands_script(variants: Sequence[tuple[str, Path]], threads: Sequence[int],
                           seq_lens: Sequence[int], batch: int, warmup: int, runs: int) -> str:
    """A POSIX sh script: push benchmark_model and every .tflite, run the sweep, import the logs."""
    lines = [
        "#!/bin/sh",
        "# Generated by `albert-edge bench`: time every .tflite variant on an Android phone with TFLite's",
        "# official benchmark_model (docs: https://ai.google.dev/edge/litert/models/measurement). Nightly",
        "# native binary: " + NIGHTLY_BINARY,
        "# Set BENCH_BINARY to its local path.",
        "# Op profiling adds a small per-op overhead; run with PROFILE=false for the cleanest timings.",
        "# Phone tip: pin to the big cores with `adb shell taskset f0 ...` (the mask differs per SoC).",
        "set -eu",
        'BENCH_BINARY="${BENCH_BINARY:-android_aarch64_benchmark_model}"',
        'BENCH="${BENCH:-/data/local/tmp/benchmark_model}"',
        'LOGS="${LOGS:-device_logs}"',
        'PROFILE="${PROFILE:-true}"',
        f"adb shell mkdir -p {DEVICE_DIR}",
        'adb push "$BENCH_BINARY" "$BENCH"',
        'adb shell chmod +x "$BENCH"',
        'mkdir -p "$LOGS"',
    ]
    for name, path in variants:
        device_graph = f"{DEVICE_DIR}/{name}.tflite"
        inputs = tflite_input_order(path)
        lines.append("")
        lines.append(f"# {name}: inputs in interpreter order {','.join(inputs)}")
        lines.append(f"adb push {shlex.quote(str(Path(path).resolve()))} {device_graph}")
        for seq_len in seq_lens:
            for n in threads:
                argv = benchmark_command(device_graph, inputs, n, seq_len, batch, warmup, runs)
                argv = [a.replace("--enable_op_profiling=true", "--enable_op_profiling=$PROFILE") for a in argv]
                log = f'"$LOGS/{name}_t{n}_s{seq_len}.log"'
                lines.append(f'adb shell "{" ".join(argv)}" > {log} 2>&1')
    lines += ["", "# Back on the host: phone and host numbers in one report.",
              'for f in "$LOGS"/*.log; do',
              '  v=$(basename "$f" .log); v=${v%_t*}',
              '  albert-edge bench --import-device-log "$f" --variant "$v" --device "${DEVICE:-android}" --out .',
              "done", ""]
    return "\n".join(lines)
