"""``arm-check``: every model under every emulated CPU model, judged against the x86 run.

Why: accuracy figures come from x86 kernels; a phone runs the ARM ones. Running the aarch64
wheels under qemu exposes ARM-only numerics (different int8 GEMM paths per CPU feature set)
on this machine. Per model and CPU this reports accuracy on the labelled eval set, agreement
and max |Δlogit| against the same model on x86 (same code, ``guest.run_job``), agreement with
the fp32 model's x86 run, and guest instructions per inference (TCG plugin) at the texts' real
lengths and padded to 128 -- a deterministic cost proxy, not a time: qemu's instruction count
says nothing about a phone's clock, caches or pipelines.

Each (model, CPU) pair runs in its own qemu process, one interpreter thread, sequentially
(emulation is CPU-heavy; parallel runs would only compete for cores).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import albert_edge
from albert_edge.arm.cpus import CpuModel, available_models, check_spec, make_root, probe
from albert_edge.arm.guest import run_job
from albert_edge.arm.setup_env import ArmEnv, ensure_environment
from albert_edge.errors import AlbertEdgeError, DataError
from albert_edge.evaluate import compare_logits, read_tsv

# A CPU model is trusted only if fp32 logits match x86 this closely (fp32 kernels differ only
# in summation order, measured 1e-7 on the sample); above it the row is flagged as suspect.
FP32_TOLERANCE = 1e-3


class ArmCheckError(AlbertEdgeError):
    """A model could not be run under emulation (qemu crash, guest error, timeout)."""


@dataclass(frozen=True)
class Variant:
    """One model file and what its pack says it is."""

    name: str
    path: Path
    format: str
    pack_variant: str

    @property
    def is_fp32(self) -> bool:
        return self.pack_variant == "fp32"


def load_variant(path: Path) -> Variant:
    """Read the pack (a bad file fails here with one line naming it, before any emulation)."""
    from albert_edge.runtime.pack import model_kind, read_model_bytes, read_pack_bytes

    data = read_model_bytes(path)
    kind = model_kind(data)
    pack = read_pack_bytes(data, str(path))
    return Variant(name=f"{path.stem} ({kind})", path=path, format=kind, pack_variant=pack.variant)


def parse_counts(path: Path) -> dict[int, int]:
    """Plugin output: tag -> cumulative guest instruction count at that marker."""
    counts: dict[int, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            counts[int(parts[0])] = int(parts[1])
    return counts


def instruction_counts(result: dict, counts: dict[int, int], key: str) -> list[int]:
    """Instructions between each begin/end marker pair, minus the markers' own cost."""
    overhead = min(counts[b2] - counts[b1] for b1, b2 in result["calibration"])
    return [counts[end] - counts[begin] - overhead for begin, end in (c["tags"] for c in result[key])]


def _guest_pythonpath(workdir: Path, env: ArmEnv) -> str:
    """Our package (linked alone, so no host x86 site-packages leak in) after the aarch64 wheels."""
    link = workdir / "src" / "albert_edge"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(Path(albert_edge.__file__).resolve().parent)
    return f"{env.site_packages}:{link.parent}"


def run_emulated(env: ArmEnv, cpu: CpuModel, root: Path, job: dict, workdir: Path, timeout: float) -> tuple[dict, dict[int, int], float]:
    """One guest run: (result of run_job, plugin counts, wall seconds)."""
    job_path, out_path, counts_path = workdir / "job.json", workdir / "result.json", workdir / "counts.txt"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    out_path.unlink(missing_ok=True)
    guest_env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1",
                 "PYTHONPATH": _guest_pythonpath(workdir, env), "HOME": str(workdir)}
    cmd = [str(env.qemu), "-cpu", cpu.spec, "-L", str(root), "-plugin", f"{env.plugin},out={counts_path}",
           str(root / "usr/bin/python3.11"), "-m", "albert_edge.arm.guest", str(job_path), str(out_path)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=guest_env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ArmCheckError(f"{job['model']}: under -cpu {cpu.spec} no result after {timeout:.0f} s") from None
    wall = time.perf_counter() - start
    if proc.returncode != 0 or not out_path.exists():
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise ArmCheckError(f"{job['model']}: under -cpu {cpu.spec} the emulated run failed "
                            f"(exit {proc.returncode}): {lines[-1] if lines else 'no output'}")
    return json.loads(out_path.read_text(encoding="utf-8")), parse_counts(counts_path), wall


def _accuracy(logits: np.ndarray, labels: Sequence[str], model_labels: Sequence[str]) -> float:
    index = {name: i for i, name in enumerate(model_labels)}
    truth = np.array([index.get(label, -1) for label in labels])
    return float(np.mean(logits.argmax(1) == truth))


def _summary(values: list[int]) -> dict | None:
    if not values:
        return None
    return {"median": int(statistics.median(values)), "min": min(values), "max": max(values), "count": len(values)}


def _host_references(variants: Sequence[Variant], texts: list[str], gold: list[str],
                     eval_path: str | os.PathLike[str]) -> dict[str, dict]:
    """Each model's x86 logits on ``texts`` (what every emulated run is compared with); a gold label
    the model does not know is refused before any emulation."""
    host: dict[str, dict] = {}
    for v in variants:
        result = run_job({"model": str(v.path), "texts": texts})
        unknown = sorted(set(gold) - set(result["labels"]))
        if unknown:
            raise DataError(f"{eval_path}: label(s) {unknown} are not among {v.path}'s labels {result['labels']}")
        host[v.name] = {"logits": np.array(result["logits"], np.float32), "labels": result["labels"],
                        "backend": result["backend"], "lengths": result["lengths"]}
    return host


def _emulated_row(v: Variant, cpu: CpuModel, result: dict, counts: dict[int, int], wall: float, host: dict[str, dict],
                  fp32: Variant | None, gold: list[str], log: Callable[[str], None]) -> dict:
    """The report row of one model under one emulated CPU: accuracy, agreement with x86 and fp32,
    instruction counts; an fp32 model that drifts from x86 marks the CPU model suspect (and says so)."""
    logits = np.array(result["logits"], np.float32)
    vs_x86 = compare_logits(logits, host[v.name]["logits"])
    real = instruction_counts(result, counts, "counted")
    padded = instruction_counts(result, counts, "counted_padded")
    counted_lengths = [c["length"] for c in result["counted"]]
    suspect = v.is_fp32 and vs_x86.max_abs_logit_delta > FP32_TOLERANCE
    if suspect:
        log(f"arm-check: warning: {v.name} under -cpu {cpu.spec}: fp32 logits differ from x86 by "
            f"{vs_x86.max_abs_logit_delta:.3g} (> {FP32_TOLERANCE}); this CPU model's results are suspect")
    return {
        "variant": v.name, "cpu": cpu.spec, "source": "arm-emulated", "int8_kernels": cpu.kernel_family,
        "accuracy": _accuracy(logits, gold, result["labels"]),
        "agreement_vs_x86": vs_x86.agreement, "max_abs_logit_diff_vs_x86": vs_x86.max_abs_logit_delta,
        "mean_abs_logit_diff_vs_x86": vs_x86.mean_abs_logit_delta,
        "agreement_vs_fp32": None if fp32 is None else compare_logits(logits, host[fp32.name]["logits"]).agreement,
        "instructions_real": _summary(real),
        "instructions_real_median_length": statistics.median(counted_lengths) if counted_lengths else None,
        "instructions_padded": _summary(padded), "padded_length": result["pad_to"],
        "repeat_mismatch": result["repeat_mismatch"], "suspect": suspect,
        "emulated_wall_s": round(wall, 1), "examples": len(gold), "backend": result["backend"],
    }


def arm_check(
    models: Sequence[str | os.PathLike[str]],
    eval_path: str | os.PathLike[str],
    cpus: Sequence[str],
    limit: int | None = None,
    count_limit: int = 20,
    count_padded: int = 3,
    pad_to: int = 128,
    env: ArmEnv | None = None,
    log: Callable[[str], None] = lambda message: print(message, file=sys.stderr, flush=True),
) -> dict:
    """Run everything and return the report dict (see ``albert_edge.arm.report`` for its shape)."""
    if not models:
        raise DataError("arm-check: expected at least one MODEL file")
    if limit is not None and limit < 1:
        raise DataError(f"arm-check: --limit {limit}: expected >= 1")
    examples = read_tsv(eval_path)
    if any(e.text_b is not None for e in examples):
        raise DataError(f"{eval_path}: arm-check takes single-text rows (label<TAB>text)")
    examples = examples[:limit] if limit else examples
    texts, gold = [e.text_a for e in examples], [e.label for e in examples]
    variants = [load_variant(Path(m)) for m in models]
    env = env or ensure_environment()
    known = available_models(env)
    specs = [check_spec(spec, known) for spec in cpus]
    cpu_models = [probe(env, spec) for spec in specs]

    log(f"arm-check: x86 reference runs of {len(variants)} model(s) on {len(texts)} text(s)")
    host = _host_references(variants, texts, gold, eval_path)
    fp32 = next((v for v in variants if v.is_fp32 and v.format == "tflite"), next((v for v in variants if v.is_fp32), None))

    rows: list[dict] = []
    for v in variants:
        ref = host[v.name]
        rows.append({"variant": v.name, "cpu": "x86 host", "source": "host", "accuracy": _accuracy(ref["logits"], gold, ref["labels"]),
                     "agreement_vs_x86": 1.0, "max_abs_logit_diff_vs_x86": 0.0,
                     "agreement_vs_fp32": None if fp32 is None else compare_logits(ref["logits"], host[fp32.name]["logits"]).agreement,
                     "instructions_real": None, "instructions_padded": None, "examples": len(texts)})
    with tempfile.TemporaryDirectory(prefix="albert-edge-arm-") as tmp:
        workdir = Path(tmp)
        for cpu in cpu_models:
            root = make_root(env, cpu, workdir / "roots" / cpu.spec.replace(",", "_"))
            for v in variants:
                log(f"arm-check: {v.name} under -cpu {cpu.spec} ({cpu.kernel_family} int8 kernels)")
                job = {"model": str(v.path.resolve()), "texts": texts, "count_limit": count_limit,
                       "count_padded": count_padded, "pad_to": pad_to}
                timeout = 300 + 30.0 * (len(texts) + 2 * min(count_limit, len(texts)) + 2 * count_padded)
                try:
                    result, counts, wall = run_emulated(env, cpu, root, job, workdir, timeout)
                except ArmCheckError as exc:
                    # One crashed pair must not throw away an hour of other pairs: record it and go on.
                    log(f"arm-check: error: {exc}")
                    rows.append({"variant": v.name, "cpu": cpu.spec, "source": "arm-emulated",
                                 "int8_kernels": cpu.kernel_family, "error": str(exc),
                                 **{k: None for k in ("accuracy", "agreement_vs_x86", "max_abs_logit_diff_vs_x86",
                                                      "agreement_vs_fp32", "instructions_real", "instructions_padded")}})
                    continue
                rows.append(_emulated_row(v, cpu, result, counts, wall, host, fp32, gold, log))
    from albert_edge.bench_latency.machine import describe_machine

    return {
        "tool": "albert-edge arm-check", "albert_edge_version": albert_edge.__version__,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "eval": str(eval_path), "examples": len(texts), "count_limit": count_limit, "count_padded": count_padded,
        "fp32_reference": None if fp32 is None else fp32.name,
        "host_machine": describe_machine(),
        "emulator": {"qemu": env.qemu_version, "plugin_api": list(env.plugin_api), "packages": env.packages},
        "cpus": [c.to_json() for c in cpu_models],
        "variants": [{"name": v.name, "path": str(v.path), "format": v.format, "pack_variant": v.pack_variant} for v in variants],
        "rows": rows,
    }
