"""The sweep: every variant x backend x threads x sequence length, each in its own process.

Fairness on a noisy, shared machine comes from the schedule, not from luck: configurations run in
``rounds`` passes, and within a pass the variants of one (threads, seq_len) cell run back to back,
in an order that alternates between passes, so a neighbour's burst hits every variant alike and
the ratios in one report are comparable. The reported statistics pool the timed runs of all rounds;
the per-round medians are kept to show the noise.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge import __version__
from albert_edge.bench_latency.analysis import thread_scaling
from albert_edge.bench_latency.machine import (
    default_thread_counts,
    describe_machine,
    load_average,
    physical_cores,
    usable_cpus,
)
from albert_edge.bench_latency.memory import aggregate_memory
from albert_edge.bench_latency.options import BenchOptions
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.bench_latency.stats import summarize
from albert_edge.errors import BackendError, DataError, MissingPackError, ModelFileError

DEFAULT_BACKENDS = {"tflite": ("litert",), "onnx": ("onnxruntime",)}
FORMAT_BACKENDS = {"tflite": ("litert", "litert_buckets", "tflite_runtime", "tf"), "onnx": ("onnxruntime",)}
# How many eval-set lengths a real-length run cycles through: enough to follow the distribution.
MAX_REAL_LENGTHS = 256
WORKER_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Variant:
    """One model file under test."""

    name: str
    path: Path
    format: str
    size_bytes: int
    sha256: str
    pack_variant: str | None

    def to_dict(self, is_baseline: bool) -> dict:
        return {"name": self.name, "path": str(self.path), "format": self.format, "size_bytes": self.size_bytes,
                "sha256": self.sha256, "pack_variant": self.pack_variant, "is_baseline": is_baseline}


def _check_lengths_fit(variants: Sequence[Variant], lengths: Sequence[int]) -> None:
    """Refuse a --seq-len longer than a model's position table before any worker fails on it mid-run."""
    from albert_edge.runtime.consistency import graph_facts

    if not lengths:
        return
    for v in variants:
        rows = graph_facts(v.path.read_bytes(), str(v.path))[0].position_rows
        if rows is not None and max(lengths) > rows:
            raise DataError(f"--seq-len {max(lengths)} exceeds the {rows} positions of {v.path}")


def describe_variants(models: Sequence[str | os.PathLike[str]]) -> list[Variant]:
    """Name each model by its pack's ``variant`` tag, else its file stem; names are made unique."""
    from albert_edge.runtime.consistency import checked_pack
    from albert_edge.runtime.pack import model_kind, read_pack_bytes

    loaded = []
    for model in models:
        path = Path(model)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ModelFileError(f"{path}: cannot read model file ({exc.strerror or exc})") from None
        kind = model_kind(data)
        if kind == "unknown":
            raise ModelFileError(f"{path}: not a .tflite flatbuffer or .onnx protobuf")
        try:
            pack = read_pack_bytes(data, str(path))
        except MissingPackError:
            pack = None
        if pack is not None:
            # A packed model whose pack disagrees with its graph is refused here, not in a worker.
            checked_pack(data, str(path), pack)
        pack_variant = None if pack is None else pack.variant
        loaded.append((path, data, kind, pack_variant))
    tags = [p for _, _, _, p in loaded]
    variants: list[Variant] = []
    seen: set[str] = set()
    for path, data, kind, pack_variant in loaded:
        # Packs written before quantization keep "fp32"; only a tag no other file shares names a variant.
        stems = [p.stem for p, _, _, _ in loaded]
        if pack_variant and tags.count(pack_variant) == 1:
            name = pack_variant
        elif pack_variant and [(t, k) for _, _, k, t in loaded].count((pack_variant, kind)) == 1:
            name = f"{pack_variant}-{kind}"   # the same export as .tflite and .onnx
        else:
            name = path.stem if stems.count(path.stem) == 1 else f"{path.stem}-{kind}"
        unique, k = name, 2
        while unique in seen:
            unique, k = f"{name}-{k}", k + 1
        seen.add(unique)
        variants.append(Variant(unique, path, kind, len(data), hashlib.sha256(data).hexdigest(), pack_variant))
    return variants


def choose_baseline(variants: Sequence[Variant], requested: str | None = None) -> str:
    """The variant everything is compared with: ``requested``, else the fp32 one, else the first."""
    names = [v.name for v in variants]
    if requested is not None:
        match = [v.name for v in variants if requested in (v.name, str(v.path), v.path.name)]
        if not match:
            raise DataError(f"--baseline {requested!r}: not one of the variants {names}")
        return match[0]
    for v in variants:
        if v.pack_variant == "fp32" or "fp32" in v.name:
            return v.name
    return names[0]


def backends_for(variant: Variant, requested: Sequence[str] | None) -> list[str]:
    """The requested backends that can run this file format (the default one if none was asked)."""
    if not requested:
        return list(DEFAULT_BACKENDS[variant.format])
    usable = [b for b in requested if b in FORMAT_BACKENDS[variant.format]]
    unknown = [b for b in requested if not any(b in names for names in FORMAT_BACKENDS.values())]
    if unknown:
        raise BackendError(f"--backend {','.join(unknown)}: unknown; expected litert, litert_buckets, tflite_runtime, tf, onnxruntime")
    return usable


def real_lengths(variant: Variant, eval_path: str | os.PathLike[str]) -> list[int]:
    """Token lengths of the eval set as the model runs it, with specials (``drift.eval_samples``)."""
    from albert_edge.bench_latency.drift import eval_samples
    from albert_edge.runtime.pack import read_pack
    from albert_edge.tokenizer import load_tokenizer

    try:
        pack = read_pack(variant.path)
    except ModelFileError as exc:
        raise DataError(f"--seq-len real needs the tokenizer packed in the model: {exc}") from None
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, str(variant.path))
    task = pack.task_object(str(variant.path)).bind_labels(pack.labels)
    samples, _ = eval_samples(task, eval_path, tokenizer, pack.max_seq_len, min_texts=1)
    return [int(np.asarray(sample["attention_mask"]).sum()) for sample in samples]


def sample_batch_lengths(lengths: Sequence[int], batch: int, seed: int = 0) -> list[int]:
    """Padded widths of ``batch``-sized batches drawn from ``lengths`` (each batch pads to its longest).

    Batch 1 takes the lengths at evenly spaced quantiles instead of random draws: 256 random draws
    from the sample test set came out with median 54 for a set whose median is 46, which charged the
    model for tokens the users never send. The quantiles are shuffled (seeded) so that consecutive
    calls change shape, as an app's do.
    """
    rng = np.random.default_rng(seed)
    values = np.asarray(lengths)
    if batch == 1:
        quantiles = (np.arange(MAX_REAL_LENGTHS) + 0.5) / MAX_REAL_LENGTHS
        widths = np.quantile(values, quantiles, method="inverted_cdf")
        return [int(w) for w in rng.permutation(widths)]
    draws = rng.choice(values, size=(MAX_REAL_LENGTHS, batch), replace=True)
    return [int(w) for w in draws.max(axis=1)]


def length_summary(lengths: Sequence[int]) -> dict:
    values = np.asarray(lengths)
    return {"min": int(values.min()), "median": float(np.median(values)),
            "p90": float(np.percentile(values, 90)), "max": int(values.max()), "examples": int(values.size)}


def pin_cpus(threads: int) -> list[int]:
    """The CPUs a pinned worker with ``threads`` threads gets: the first ``threads`` usable ones."""
    cpus = usable_cpus()
    return cpus[: max(1, min(threads, len(cpus)))]


def worker_command(model: Path, backend: str, threads: int, seq_len: int, lengths: Sequence[int] | None,
                   batch: int, runs: int, warmup: int, pin: bool, seed: int) -> list[str]:
    argv = [sys.executable, "-m", "albert_edge.bench_latency.worker", "--model", str(model), "--backend", backend,
            "--threads", str(threads), "--seq-len", str(seq_len), "--batch", str(batch), "--runs", str(runs),
            "--warmup", str(warmup), "--seed", str(seed)]
    if lengths:
        argv += ["--lengths", ",".join(str(n) for n in lengths)]
    if pin:
        argv += ["--pin", ",".join(str(c) for c in pin_cpus(threads))]
    return argv


def run_worker(argv: list[str]) -> dict:
    """Run one worker process and return its JSON line; a failure becomes a BackendError."""
    env = dict(os.environ)
    # The worker's own thread count is the only one that should matter.
    env.setdefault("OMP_NUM_THREADS", "1")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise BackendError(f"benchmark worker timed out after {WORKER_TIMEOUT_S}s: {' '.join(argv[3:])}") from None
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise BackendError(f"benchmark worker exited {proc.returncode} without a result ({tail}): {' '.join(argv[3:])}")
    result = json.loads(lines[-1])
    if not result.get("ok"):
        raise BackendError(f"benchmark worker failed: {result.get('error')}")
    return result


@dataclass(frozen=True)
class _Cell:
    variant: Variant
    backend: str
    threads: int
    seq_len: int | str
    lengths: tuple[int, ...] | None


def schedule(cells: Sequence[_Cell], rounds: int) -> list[tuple[int, _Cell]]:
    """(round, cell) in run order: cells grouped by (threads, seq_len), variant order reversed on odd rounds."""
    groups: dict[tuple, list[_Cell]] = {}
    for cell in cells:
        groups.setdefault((cell.threads, str(cell.seq_len)), []).append(cell)
    order = []
    for r in range(rounds):
        for group in groups.values():
            order.extend((r, c) for c in (group if r % 2 == 0 else list(reversed(group))))
    return order


def _aggregate(cell: _Cell, raws: list[dict], batch: int, cores: int, length_info: dict | None) -> dict:
    samples = [s for raw in raws for s in raw["samples_ms"]]
    return {
        "variant": cell.variant.name, "backend": cell.backend, "backend_version": raws[0]["backend_version"],
        "threads": cell.threads, "seq_len": cell.seq_len, "batch": batch, "source": "host", "device": None,
        "latency_ms": summarize(samples).to_dict(), "samples_ms": samples,
        "round_medians_ms": [float(np.median(raw["samples_ms"])) for raw in raws],
        "init_ms": float(np.median([raw["init_ms"] for raw in raws])),
        "first_inference_ms": float(np.median([raw["first_inference_ms"] for raw in raws])),
        "warmup_avg_ms": None,
        "peak_rss_mb": max(raw["peak_rss_mb"] for raw in raws),
        "rss_before_load_mb": min(raw["rss_before_load_mb"] for raw in raws),
        "memory": aggregate_memory([raw.get("memory") for raw in raws]),
        "oversubscribed": cell.threads > cores,
        "lengths": length_info, "op_profile": None,
        "affinity": raws[0].get("affinity"),
    }


def run_benchmark(
    models: Sequence[str | os.PathLike[str]],
    options: BenchOptions | None = None,
    *,
    out_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_result: Callable[[dict], None] | None = None,
    **overrides: Any,
) -> BenchReport:
    """Measure every configuration, the accuracy drift on ``options.eval_path``, and write the report files.

    ``options`` (a BenchOptions; keyword ``overrides`` replace single fields, e.g. ``runs=50``) says
    what to sweep and judge by. With ``out_dir`` set, report.json, report.md, report.png and
    device_commands.sh are written there. ``on_result`` is called with each aggregated result (a
    report.json ``results`` entry) once all rounds have run.
    """
    o = replace(options or BenchOptions(), **overrides)
    if not models:
        raise DataError("bench: expected at least one model file")
    threads = list(o.threads) if o.threads else default_thread_counts()
    seq_lens, batch, runs, warmup, rounds, seed = list(o.seq_lens), o.batch, o.runs, o.warmup, o.rounds, o.seed
    eval_path, reference, backends, pin = o.eval_path, o.reference, o.backends, o.pin
    variants = describe_variants(models)
    _check_lengths_fit(variants, [s for s in seq_lens if s != "real"])
    base = choose_baseline(variants, o.baseline)
    machine = describe_machine()
    cores = physical_cores()

    lengths_by_variant: dict[str, list[int]] = {}
    if "real" in seq_lens:
        for v in variants:
            lengths_by_variant[v.name] = real_lengths(v, eval_path)
    cells: list[_Cell] = []
    for n in threads:
        for s in seq_lens:
            for v in variants:
                for b in backends_for(v, backends):
                    lengths = tuple(sample_batch_lengths(lengths_by_variant[v.name], batch, seed)) if s == "real" else None
                    cells.append(_Cell(v, b, n, s, lengths))
    if not cells:
        raise BackendError(f"--backend {','.join(backends or [])}: runs none of the model formats given")
    per_round = max(1, -(-runs // rounds))
    order = schedule(cells, rounds)
    raws: dict[_Cell, list[dict]] = {c: [] for c in cells}
    bar = _progress(len(order), progress)
    started = time.time()
    try:
        for r, cell in order:
            bar.set_description(f"{cell.variant.name} {cell.backend} {cell.threads}T seq {cell.seq_len}")
            argv = worker_command(cell.variant.path, cell.backend, cell.threads,
                                  cell.seq_len if isinstance(cell.seq_len, int) else max(cell.lengths or (1,)),
                                  cell.lengths, batch, per_round, warmup, pin, seed + r)
            raws[cell].append(run_worker(argv))
            bar.update(1)
    finally:
        # Closed on failure too, so that the error line starts on a line of its own.
        bar.close()
    results = []
    for cell in cells:
        info = length_summary(lengths_by_variant[cell.variant.name]) if cell.seq_len == "real" else None
        results.append(_aggregate(cell, raws[cell], batch, cores, info))
        if on_result:
            on_result(results[-1])

    accuracy: list[dict] = []
    if eval_path is not None and o.drift:
        from albert_edge.bench_latency.drift import measure_drift

        accuracy = measure_drift([(v.name, v.path) for v in variants], base, eval_path, reference,
                                 threads=max(threads))
    scaling, warnings = thread_scaling(results, cores)
    report = BenchReport(
        settings={"threads": list(threads), "seq_lens": list(seq_lens), "batch": batch, "runs": runs,
                  "runs_per_round": per_round, "warmup": warmup, "rounds": rounds, "pin": pin,
                  "max_drop": o.max_drop, "eval": str(eval_path) if eval_path else None,
                  "reference": str(reference) if reference else None, "backends": list(backends or []),
                  "baseline": base, "seed": seed, "elapsed_s": round(time.time() - started, 1),
                  "load_average_end": load_average()},
        machine=machine,
        variants=[v.to_dict(v.name == base) for v in variants],
        results=results, accuracy=accuracy, thread_scaling=scaling, warnings=warnings,
        created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), albert_edge_version=__version__,
    )
    from albert_edge.bench_latency.report_md import overall_recommendation

    report.recommendation = overall_recommendation(report)
    if out_dir is not None:
        from albert_edge.bench_latency.output import write_report

        write_report(report, out_dir, device_seq_lens=device_lengths(seq_lens, lengths_by_variant))
    return report


def device_lengths(seq_lens: Sequence[int | str], real: dict[str, list[int]]) -> list[int]:
    """Fixed lengths for the phone commands: the swept ints, plus the eval set's p90 for "real".

    benchmark_model takes one input shape per run, so a real-length sweep is approximated on the
    phone by its 90th-percentile length (a conservative single number for a latency budget).
    """
    lengths = [s for s in seq_lens if isinstance(s, int)]
    if "real" in seq_lens and real:
        p90 = int(np.ceil(length_summary(next(iter(real.values())))["p90"]))
        if p90 not in lengths:
            lengths.append(p90)
    return lengths


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True, disable=not enabled)
