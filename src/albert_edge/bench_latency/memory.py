"""The model's own memory, measured the way TFLite's benchmark_model does it.

A worker's peak RSS (Python, numpy, the interpreter's shared libraries) is about the same for
every model, so it says nothing about the model. benchmark_model instead reads the process's
memory at fixed points and subtracts a baseline taken before the model exists. The worker does
the same: a baseline after importing only the runtime (numpy + the interpreter module + the
albert_edge loader), then the resident set after the model load, after the first inference and
the peak during the timed runs. "Model memory" is each of those minus the baseline: weights held
by the interpreter, delegate packing (XNNPACK repacks fp32 weights), the tensor arena.

The peak comes from the kernel's high-water mark (``VmHWM``), reset to the current RSS just before
the timed runs by writing ``5`` to ``/proc/self/clear_refs`` (Linux >= 4.0). Where that write is
not permitted (or there is no /proc), the peak is the largest RSS sampled after each timed run,
which misses transient allocations freed inside a call; the method used is recorded.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
# Modules that must never be loaded by a timing worker of another backend: their memory and
# threads would be charged to the model (TensorFlow alone is ~1 GB of RSS).
FOREIGN_MODULES = ("tensorflow", "torch", "keras", "jax", "onnx", "tokenizers", "sentencepiece", "transformers")

METHOD_HWM = "VmRSS/VmHWM from /proc/self/status; VmHWM reset via /proc/self/clear_refs before the timed runs"
METHOD_SAMPLED = "VmRSS from /proc/self/status; peak = largest RSS sampled after each timed run (clear_refs not permitted)"
METHOD_RUSAGE = "ru_maxrss only (no /proc): baseline and load are peaks so far; peak covers the whole process"


def _status_kb(key: str) -> float | None:
    try:
        for line in STATUS.read_text().splitlines():
            name, _, value = line.partition(":")
            if name == key:
                return float(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_usage() -> Any:
    """``resource.getrusage(RUSAGE_SELF)``; where there is no ``resource`` module (Windows), the same fields
    from ``os.times()`` (CPU) and psutil (peak working set, if installed), with context switches 0.

    ``resource`` is imported here, not at the top, so that ``bench`` and ``demo`` import on Windows.
    """
    try:
        import resource
    except ImportError:
        times = os.times()
        return SimpleNamespace(ru_utime=times.user, ru_stime=times.system, ru_nivcsw=0, ru_nvcsw=0,
                               ru_maxrss=_peak_working_set_kb())
    return resource.getrusage(resource.RUSAGE_SELF)


def _peak_working_set_kb() -> int:
    try:
        import psutil
    except ImportError:
        return 0
    info = psutil.Process().memory_info()
    return int(getattr(info, "peak_wset", getattr(info, "rss", 0)) // 1024)


def max_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (ru_maxrss is bytes on macOS, KiB elsewhere)."""
    peak = process_usage().ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def rss_mb() -> float:
    """Current resident set size in MiB (the peak so far where /proc is missing)."""
    kb = _status_kb("VmRSS")
    return kb / 1024.0 if kb is not None else max_rss_mb()


def hwm_mb() -> float:
    """High-water mark of the resident set in MiB since the last reset (or process start)."""
    kb = _status_kb("VmHWM")
    return kb / 1024.0 if kb is not None else max_rss_mb()


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel or sandbox does not allow it."""
    try:
        with CLEAR_REFS.open("w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def foreign_modules(allowed: tuple[str, ...] = ()) -> list[str]:
    """Top-level packages from FOREIGN_MODULES already imported (the worker must import none)."""
    loaded = {name.split(".")[0] for name in list(sys.modules)}
    return sorted(m for m in FOREIGN_MODULES if m in loaded and m not in allowed)


@dataclass
class MemoryProbe:
    """Resident-set readings at benchmark_model's points, in MiB; ``model()`` subtracts the baseline."""

    baseline_mb: float = 0.0
    after_load_mb: float = 0.0
    after_first_mb: float = 0.0
    peak_timed_mb: float = 0.0
    method: str = METHOD_HWM
    imported_before_baseline: list[str] = field(default_factory=list)
    _sampled_peak: float = 0.0
    _hwm_reset: bool = False

    def baseline(self) -> None:
        self.baseline_mb = rss_mb()
        self.imported_before_baseline = foreign_modules()
        if not STATUS.exists():
            self.method = METHOD_RUSAGE

    def loaded(self) -> None:
        self.after_load_mb = rss_mb()

    def first_inference(self) -> None:
        self.after_first_mb = rss_mb()

    def start_timed(self) -> None:
        """Call right before the timed loop: resets the high-water mark (or starts sampling)."""
        self._hwm_reset = self.method != METHOD_RUSAGE and reset_peak()
        if not self._hwm_reset and self.method != METHOD_RUSAGE:
            self.method = METHOD_SAMPLED
        self._sampled_peak = rss_mb()

    def sample(self) -> None:
        """Call after each timed run (outside the timed window); a no-op when VmHWM does the job."""
        if not self._hwm_reset:
            self._sampled_peak = max(self._sampled_peak, rss_mb())

    def end_timed(self) -> None:
        self.peak_timed_mb = hwm_mb() if self._hwm_reset or self.method == METHOD_RUSAGE else self._sampled_peak

    def to_dict(self) -> dict:
        raw = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        return {**raw, "model_after_load_mb": self.after_load_mb - self.baseline_mb,
                "model_after_first_mb": self.after_first_mb - self.baseline_mb,
                "model_peak_mb": self.peak_timed_mb - self.baseline_mb}


MODEL_KEYS = ("model_after_load_mb", "model_after_first_mb", "model_peak_mb")


def aggregate_memory(readings: list[dict | None]) -> dict | None:
    """One configuration's memory over its rounds: the median of each figure, and how it was measured.

    Medians, because a round's reading can catch a neighbour-triggered page reclaim; the
    per-round values stay in ``rounds`` for anyone who wants the spread.
    """
    import numpy as np

    rows = [r for r in readings if r]
    if not rows:
        return None
    numeric = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out: dict = {k: float(np.median([r[k] for r in rows])) for k in numeric}
    out["method"] = rows[0].get("method")
    out["rounds"] = [{k: r[k] for k in MODEL_KEYS if k in r} for r in rows]
    return out
