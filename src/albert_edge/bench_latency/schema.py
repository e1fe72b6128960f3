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
                     first_answer_ms (host, optional: the pack's task runtime from_file + its first
                     answer in a fresh process -- what an app waits for; null for a file without a pack),
                     peak_rss_mb, rss_before_load_mb, oversubscribed (threads > physical cores),
                     lengths {min,median,p90,max,examples} | null (real-length runs),
                     op_profile [{node_type,count,avg_ms,percent,cdf_percent,mem_kb,times_called}] | null;
                     host results add affinity [int] and memory {baseline_mb, after_file_mb, after_load_mb,
                     after_first_mb, peak_timed_mb, model_after_load_mb, model_after_first_mb,
                     model_peak_mb, part_file_mb, part_interpreter_mb, part_first_call_mb,
                     packed_weight_uses, packed_weight_buffers, weights_packed_per_use_mb,
                     weights_packed_once_mb (.tflite only), part_library_code_mb,
                     model_own_after_first_mb, part_file_mapped_mb, part_arena_rest_mb (where
                     /proc/self/smaps exists), mapped_baseline_mb, mapped_after_first_mb, method, rounds} (the model's own memory: RSS
                     minus the runtime-only baseline, and where it goes, medians over rounds; see
                     bench_latency/memory.py);
                     device results percentiles_us {p5,median,p95} | null;
                     paired host results add round_group (results of one group were timed in the
                     same rounds: their round_medians_ms pair up by index), latency_cv (of the
                     round medians), contention {run_queue_wait_share, contended_rounds,
                     cpu_per_wall, cpu_share, involuntary_switches_per_call, neighbour_cores (other
                     processes' CPUs during the bursts; null without /proc/stat), settle_ms_median (how
                     long the worker's own pools spun after a burst: waited out before the next), load_average_during,
                     logical_cores, contended} and vs_baseline {ratio (time over the baseline's),
                     low, high (95 % bootstrap over rounds; null under 5 rounds), rounds, cv,
                     relative_half_width, round_ratios, baseline_backend, contended} | null
    accuracy[]       one per variant: variant, examples, accuracy, agreement, max_abs_logit_diff,
                     mean_abs_logit_diff, mean_kl (vs the baseline), labels, reference {checkpoint,
                     agreement, max_abs_logit_diff, mean_abs_logit_diff, accuracy} | null
    thread_scaling[] variant, backend, seq_len, source, points [{threads, median_ms, speedup_vs_1,
                     vs_fewer (paired time ratio over the next fewer threads, as vs_baseline) | null}],
                     warnings [str]
    warnings[]       every warning, as printed
    recommendation   {variant, backend, threads, seq_len, median_ms, accuracy_drop_points, text} | null
    arm_emulated     optional: the arm_check.json last folded in with ``bench --import-arm`` (ARM kernels
                     under qemu: accuracy, drift vs x86, instruction counts; see albert_edge.arm.report)
    stability        optional (host runs of the paired runner): target_precision, unstable [str],
                     impossible [str] (int8 speed-ups above what int8 arithmetic allows), contended
                     [str] (comparisons whose bursts waited for a CPU), groups [{seq_len, rounds,
                     calls_per_round, stopped, seconds, load_average_before, load_average_during
                     {median,max}, logical_cores}]
    peers            optional: the benchmarks/suites/peers.py JSON last folded in with ``bench --import-peers``
                     (other tools' files of the same checkpoint, timed in a run of their own; see
                     albert_edge.bench_latency.peers)

Additions keep ``schema_version``; renames or removals bump it. The same schema, as tables, is in
docs/report_schema.md.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from albert_edge.bench_latency.documents import LATENCY_KEYS, read_json_file, require_keys
from albert_edge.errors import DataError

SCHEMA_VERSION = 1

TOP_LEVEL_KEYS = ("schema_version", "tool", "albert_edge_version", "created_utc", "settings", "machine",
                  "variants", "results", "accuracy", "thread_scaling", "warnings", "recommendation")
RESULT_KEYS = ("variant", "backend", "backend_version", "threads", "seq_len", "batch", "source", "device",
               "latency_ms", "samples_ms", "round_medians_ms", "init_ms", "first_inference_ms",
               "warmup_avg_ms", "peak_rss_mb", "rss_before_load_mb", "oversubscribed", "lengths", "op_profile")
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
    stability: dict | None = None
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
                   peers=data.get("peers"), stability=data.get("stability"))

    def variant(self, name: str) -> dict | None:
        return next((v for v in self.variants if v["name"] == name), None)

    def accuracy_of(self, name: str) -> dict | None:
        return next((a for a in self.accuracy if a["variant"] == name), None)

    def baseline(self) -> str | None:
        return next((v["name"] for v in self.variants if v.get("is_baseline")), None)


def validate_report(data: dict, source: str = "<report>") -> None:
    """Raise DataError naming the first missing or mistyped field of a report.json dict."""
    require_keys(data, TOP_LEVEL_KEYS, source)
    if data["schema_version"] != SCHEMA_VERSION:
        raise DataError(f"{source}: schema_version {data['schema_version']!r}, expected {SCHEMA_VERSION}")
    _check_types(data, source)  # every type and range first: the cross-references below index into them
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


def _report_spec():
    """The type and range of every field the Markdown, the PNG and the imports read."""
    from albert_edge.bench_latency.typed import (
        LATENCY,
        MS,
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
    )

    finite = Num(-1e15, 1e15)
    memory_mb = Optional(Num(0.0, 1e7))
    result = Obj({"variant": TEXT, "backend": TEXT, "backend_version": Optional(TEXT), "threads": Optional(THREADS),
                  "seq_len": Json(), "batch": Optional(Int(1, 1_000_000)), "source": TEXT, "device": Optional(TEXT),
                  "latency_ms": LATENCY, "samples_ms": ListOf(MS, 10**7), "round_medians_ms": ListOf(MS),
                  "init_ms": Optional(MS), "first_inference_ms": Optional(MS), "warmup_avg_ms": Optional(MS),
                  "peak_rss_mb": memory_mb, "rss_before_load_mb": memory_mb, "oversubscribed": Optional(Bool()),
                  "lengths": Optional(Json()), "op_profile": Optional(ListOf(Json()))},
                 {"memory": Optional(Json()), "affinity": Json(), "percentiles_us": Optional(Json()),
                  "first_answer_ms": Optional(MS)})
    variant = Obj({"name": TEXT, "path": TEXT, "format": TEXT, "size_bytes": Optional(Int(0, 10**13)),
                   "sha256": Optional(TEXT), "pack_variant": Json(), "is_baseline": Bool()})
    accuracy = Obj({"variant": TEXT, "examples": Optional(Int(0, 10**9)), "accuracy": Optional(finite),
                    "agreement": Optional(finite), "max_abs_logit_diff": Optional(finite),
                    "mean_abs_logit_diff": Optional(finite), "reference": Optional(Json())})
    settings = Obj({}, {"threads": ListOf(THREADS), "seq_lens": ListOf(SEQ_LEN), "batch": Int(1, 1_000_000),
                        "runs": Int(0, 10**9), "warmup": Int(0, 10**9), "rounds": Int(0, 1_000_000),
                        "max_drop": Optional(finite)})
    machine = Obj({}, {"physical_cores": Optional(Int(1, 100_000)), "cpu_model": Optional(TEXT),
                       "simd": ListOf(Str(100))})
    return Obj({"tool": TEXT, "albert_edge_version": TEXT, "created_utc": TEXT, "settings": settings,
                "machine": machine, "variants": ListOf(variant), "results": ListOf(result),
                "accuracy": ListOf(accuracy), "thread_scaling": ListOf(Json()), "warnings": ListOf(Json()),
                "recommendation": Optional(Json())})


def _check_types(data: dict, source: str) -> None:
    """Types and ranges of the whole report, the folded-in peers and ARM sections with their own rules."""
    from albert_edge.bench_latency.typed import check

    check(data, _report_spec(), source)
    if data.get("peers") is not None:
        from albert_edge.bench_latency.peers import validate_peers

        validate_peers(data["peers"], f"{source}: peers")
    if data.get("arm_emulated") is not None:
        from albert_edge.arm.report import validate

        validate(data["arm_emulated"], f"{source}: arm_emulated")


def load_report(path: str | Path) -> BenchReport:
    """Read and validate a report.json written by ``albert-edge bench``."""
    path = Path(path)
    return BenchReport.from_dict(read_json_file(path, "report.json"), str(path))
