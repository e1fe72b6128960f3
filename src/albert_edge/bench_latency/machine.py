"""What the numbers were measured on: CPU model, cores, SIMD flags, interpreter versions.

Latency without the machine is meaningless; a 2-core AVX-512 server and a Snapdragon differ by
an order of magnitude, and int8 speed-ups depend on VNNI/dot-product support. Versions are read
from package metadata so that describing the machine never imports TensorFlow.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from pathlib import Path

from albert_edge.neighbours import usable_cpus

# /proc/cpuinfo flag (x86 "flags", ARM "Features") -> the name users search for.
SIMD_FLAGS: dict[str, str] = {
    "sse4_2": "SSE4.2",
    "avx": "AVX",
    "avx2": "AVX2",
    "fma": "FMA",
    "avx512f": "AVX-512F",
    "avx512bw": "AVX-512BW",
    "avx512_vnni": "AVX-512-VNNI",
    "avx_vnni": "AVX-VNNI",
    "avx512_bf16": "AVX-512-BF16",
    "avx512_fp16": "AVX-512-FP16",
    "amx_tile": "AMX-TILE",
    "amx_int8": "AMX-INT8",
    "amx_bf16": "AMX-BF16",
    "neon": "NEON",     # 32-bit ARM
    "asimd": "NEON",    # AArch64 name for NEON
    "asimddp": "DOTPROD",
    "i8mm": "I8MM",
    "sve": "SVE",
    "fphp": "FP16",
}

PACKAGES = ("numpy", "ai-edge-litert", "tflite-runtime", "onnxruntime", "tensorflow-cpu", "tensorflow", "onnx")


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> tuple[str, set[str]]:
    """Return (CPU model name, set of raw flags) from /proc/cpuinfo, or ("", set()) elsewhere."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "", set()
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "processor") and not model and not value.strip().isdigit():
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    return model, flags


def simd_flags(raw_flags: set[str]) -> list[str]:
    """Map raw cpuinfo flags to the sorted, de-duplicated SIMD names of ``SIMD_FLAGS``."""
    return sorted({name for flag, name in SIMD_FLAGS.items() if flag in raw_flags})


def physical_cores() -> int:
    """Physical cores (not hyper-threads); falls back to the logical count when unknown."""
    try:
        import psutil

        count = psutil.cpu_count(logical=False)
    except ImportError:
        count = None
    return int(count or os.cpu_count() or 1)


def default_thread_counts(cores: int | None = None) -> list[int]:
    """The sweep's default: 1, 2, 4, ... up to the physical cores, and the core count itself.

    More threads than physical cores measure contention, not the model (the host's own
    oversubscription warning says so), so the default never asks for them; pass --threads to.
    """
    cores = max(1, physical_cores() if cores is None else cores)
    counts, n = [], 1
    while n < cores:
        counts.append(n)
        n *= 2
    return [*counts, cores]


def package_versions() -> dict[str, str]:
    """Installed versions of the interpreters and numeric libraries that shape the numbers."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def describe_machine() -> dict:
    """A JSON-ready description of this host (the ``machine`` section of report.json)."""
    model, raw = _cpuinfo()
    return {
        "kind": "host",
        "cpu_model": model or platform.processor() or platform.machine(),
        "architecture": platform.machine(),
        "logical_cores": os.cpu_count() or 1,
        "physical_cores": physical_cores(),
        "usable_cpus": usable_cpus(),
        "simd": simd_flags(raw),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "packages": package_versions(),
        "load_average": load_average(),
    }


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: a load above the core count means the numbers include waiting."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None
