"""The report.json schema (``schema_version`` 1): one structure for host runs and phone logs.

Every raw number goes in, so a later tool can recompute any table. Top level::

    schema_version   int, 1
    tool             "albert-edge bench"
    albert_edge_version, created_utc (ISO 8601)
    settings         the sweep as asked: threads, seq_lens, batch, runs, warmup, rounds, pin,
                     max_drop (accuracy points), eval, reference, backends, baseline
    machine          describe_machine(): cpu_model, architecture, logical_cores, physical_cores,
                     usable_cpus, simd, os, python, packages
    variants[]       name, path, format ("tflite"|"onnx"), size_bytes, sha256, pack_variant, is_baseline
    results[]        one per variant x backend x threads x seq_len x source:
                     variant, backend, backend_version, threads, seq_len (int or "real"), batch,
                     source ("host"|"device"), device (str|null),
                     latency_ms {count,min,median,mean,p90,p99,std,max} (p90/p99 null for device logs
                     without percentiles), samples_ms [float] (host; [] for device),
                     round_medians_ms [float], init_ms, first_inference_ms, warmup_avg_ms (device),
                     peak_rss_mb, rss_before_load_mb, oversubscribed (threads > physical cores),
                     lengths {min,median,p90,max,examples} | null (real-length runs),
                     op_profile [{node_type,count,avg_ms,percent,cdf_percent,mem_kb,times_called}] | null;
                     host results add affinity [int] and memory {baseline_mb, after_load_mb,
                     after_first_mb, peak_timed_mb, model_after_load_mb, model_after_first_mb,
                     model_peak_mb, method, rounds} (the model's own memory: RSS minus the
                     runtime-only baseline, medians over rounds; see bench_latency/memory.py);
                     device results percentiles_us {p5,median,p95} | null
    accuracy[]       one per variant: variant, examples, accuracy, agreement, max_abs_logit_diff,
                     mean_abs_logit_diff, mean_kl (vs the baseline), labels, reference {checkpoint,
                     agreement, max_abs_logit_diff, mean_abs_logit_diff, accuracy} | null
    thread_scaling[] variant, backend, seq_len, source, points [{threads, median_ms, speedup_vs_1}],
                     warnings [str]
    warnings[]       every warning, as printed
    recommendation   {variant, backend, threads, seq_len, median_ms, accuracy_drop_points, text} | null
    arm_emulated     optional: the arm_check.json last folded in with ``bench --import-arm`` (ARM kernels
                     under qemu: accuracy, drift vs x86, instruction counts; see albert_edge.arm.report)
    peers            optional: the benchmarks/suites/peers.py JSON last folded in with ``bench --import-peers``
                     (other tools' files of the same checkpoint, timed in a run of their own; see
                     albert_edge.bench_latency.peers)

Additions keep ``schema_version``; renames or removals bump it. The same schema, as tables, is in
benchmarks/README.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from albert_edge.errors import DataError

SCHEMA_VERSION = 1

TOP_LEVEL_KEYS = ("schema_version", "tool", "albert_edge_version", "created_utc", "settings", "machine",
                  "variants", "results", "accuracy", "thread_scaling", "warnings", "recommendation")
RESULT_KEYS = ("variant", "backend", "backend_version", "threads", "seq_len", "batch", "source", "device",
               "latency_ms", "samples_ms", "round_medians_ms", "init_ms", "first_inference_ms",
               "warmup_avg_ms", "peak_rss_mb", "rss_before_load_mb", "oversubscribed", "lengths", "op_profile")
LATENCY_KEYS = ("count", "min", "median", "mean", "p90", "p99", "std", "max")
VARIANT_KEYS = ("name", "path", "format", "size_bytes", "sha256", "pack_variant", "is_baseline")
ACCURACY_KEYS = ("variant", "examples", "accuracy", "agreement", "max_abs_logit_diff",
                 "mean_abs_logit_diff", "reference")


@dataclass
class BenchReport:
    """Everything one ``albert-edge bench`` run measured; ``to_dict`` is report.json."""

    settings: dict
    machine: dict
    variants: list[dict] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    accuracy: list[dict] = field(default_factory=list)
    thread_scaling: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recommendation: dict | None = None
    arm_emulated: dict | None = None
    peers: dict | None = None
    created_utc: str = ""
    albert_edge_version: str = ""
    tool: str = "albert-edge bench"
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict, source: str = "<report>") -> BenchReport:
        validate_report(data, source)
        return cls(**{k: data[k] for k in TOP_LEVEL_KEYS}, arm_emulated=data.get("arm_emulated"),
                   peers=data.get("peers"))

    def variant(self, name: str) -> dict | None:
        return next((v for v in self.variants if v["name"] == name), None)

    def accuracy_of(self, name: str) -> dict | None:
        return next((a for a in self.accuracy if a["variant"] == name), None)

    def baseline(self) -> str | None:
        return next((v["name"] for v in self.variants if v.get("is_baseline")), None)


def require_keys(obj: object, keys: tuple[str, ...], where: str) -> None:
    """DataError unless ``obj`` is a JSON object holding ``keys``: one line naming ``where``, not a KeyError later."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise DataError(f"{where}: missing keys {', '.join(missing)}")


def validate_report(data: dict, source: str = "<report>") -> None:
    """Raise DataError naming the first missing or mistyped field of a report.json dict."""
    require_keys(data, TOP_LEVEL_KEYS, source)
    if data["schema_version"] != SCHEMA_VERSION:
        raise DataError(f"{source}: schema_version {data['schema_version']!r}, expected {SCHEMA_VERSION}")
    for i, variant in enumerate(data["variants"]):
        require_keys(variant, VARIANT_KEYS, f"{source}: variants[{i}]")
    names = {v["name"] for v in data["variants"]}
    for i, result in enumerate(data["results"]):
        where = f"{source}: results[{i}]"
        require_keys(result, RESULT_KEYS, where)
        require_keys(result["latency_ms"], LATENCY_KEYS, f"{where}.latency_ms")
        if result["variant"] not in names:
            raise DataError(f"{where}: variant {result['variant']!r} is not listed in variants")
        if result["source"] not in ("host", "device"):
            raise DataError(f"{where}: source {result['source']!r}, expected 'host' or 'device'")
        if not (isinstance(result["seq_len"], int) or result["seq_len"] == "real"):
            raise DataError(f"{where}: seq_len {result['seq_len']!r}, expected an int or 'real'")
    for i, acc in enumerate(data["accuracy"]):
        require_keys(acc, ACCURACY_KEYS, f"{source}: accuracy[{i}]")


def load_report(path: str | Path) -> BenchReport:
    """Read and validate a report.json written by ``albert-edge bench``."""
    path = Path(path)
    return BenchReport.from_dict(read_json_file(path, "report.json"), str(path))


def read_json_file(path: Path, what: str) -> Any:
    """The parsed JSON of ``path``; DataError "<path>: not a readable <what> (...)" on a read or JSON error."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a readable {what} ({exc})") from None
