"""The model's own memory, measured the way TFLite's benchmark_model does it.

A worker's peak RSS (Python, numpy, the interpreter's shared libraries) is about the same for
every model, so it says nothing about the model. benchmark_model instead reads the process's
memory at fixed points and subtracts a baseline taken before the model exists. The worker does
the same: a baseline after importing only the runtime (numpy + the interpreter module + the
albert_edge loader), then the resident set after the model load, after the first inference and
the peak during the timed runs. "Model memory" is each of those minus the baseline: weights held
by the interpreter, delegate packing (XNNPACK repacks fp32 weights), the tensor arena.

The breakdown splits it where the worker's load can be split from outside the interpreter: the file
as read (``part_file_mb``), the interpreter built with its delegate applied and its arena allocated
at the graph's default shape (``part_interpreter_mb``: XNNPACK's packed weights are most of it), and
what the first call at the timed length adds (``part_first_call_mb``: the arena resized, kernels'
scratch). ``weight_sharing`` adds what the graph says about the packed part: XNNPACK without a
weight cache packs a constant matmul weight once per op that uses it, so ALBERT's shared layer is
packed once per layer; the figures per use and per distinct buffer bound what a cache could save.
``part_library_code_mb`` is the part of the interpreter and first call that is shared objects' pages (LiteRT's
and XNNPACK's code, faulted in by a process's first interpreter whatever the model); ``model_own_after_first_mb``
is the model's memory after its first call without them: the figure issue #39's "x the file" is judged on
(record 0290), the total staying beside it. The worker maps the file as an app's ``from_file`` does, so the own
memory splits further by smaps mapping: ``part_file_mapped_mb``, the model file's resident pages; the graph's
packed weights (``weights_packed_per_use_mb``, counted from the graph); and ``part_arena_rest_mb``, the heap's
rest (arena, activations, kernels' scratch, the interpreter's structures). Nothing the worker imports after the baseline may be charged to the model: the modules that appear
between the baseline and the first inference are listed (``imported_after_baseline``); numpy.random,
loaded lazily by the worker's random ids, was 7.7 MB of the sample's "model" memory until the ids
were drawn before the baseline.

The file's resident pages depend on how it entered the page cache, not only on what the load touches: on a
kernel whose buffered writes make large page-cache folios (this project's 6.18 with ext4), a file written
minutes ago by ``quantize`` is mapped whole folio by folio at the first touch (the sample's int8 file: 4.1 of 4.2
MiB resident, own memory 11.07 MiB), while the same bytes read from storage keep the pages touched (1.6 MiB,
own 8.51; record 0307). So the worker first puts the file in the page cache as an app finds a file it reads
from storage (``read_from_storage``: its written pages dropped, then read back), and says so
(``page_cache``); ``--page-cache as-is`` measures the state the file's history left.

The peak comes from the kernel's high-water mark (``VmHWM``), reset to the current RSS just before
the timed runs by writing ``5`` to ``/proc/self/clear_refs`` (Linux >= 4.0). Where that write is
not permitted (or there is no /proc), the peak is the largest RSS sampled after each timed run,
which misses transient allocations freed inside a call; the method used is recorded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from albert_edge.neighbours.freed_memory import release_freed_memory  # noqa: F401 - also this module's, for the suites

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
# Modules that must never be loaded by a timing worker of another backend: their memory and
# threads would be charged to the model (TensorFlow alone is ~1 GB of RSS).
FOREIGN_MODULES = ("tensorflow", "torch", "keras", "jax", "onnx", "tokenizers", "sentencepiece", "transformers")

METHOD_HWM = "VmRSS/VmHWM from /proc/self/status; VmHWM reset via /proc/self/clear_refs before the timed runs"
METHOD_SAMPLED = "VmRSS from /proc/self/status; peak = largest RSS sampled after each timed run (clear_refs not permitted)"
METHOD_RUSAGE = "ru_maxrss only (no /proc): baseline and load are peaks so far; peak covers the whole process"
#: The model file's page-cache state when the worker measured (``read_from_storage``).
PAGE_CACHE_READ = "as read from storage (written pages dropped, the file read back)"
PAGE_CACHE_AS_IS = "as the file's history left it"


def read_from_storage(path: str | os.PathLike[str]) -> str:
    """Put the file at ``path`` in the page cache as an app finds a file it reads from storage; return the state
    left (``PAGE_CACHE_READ``, or ``PAGE_CACHE_AS_IS`` where the platform or the file does not allow it).

    Why: the model's memory counts the file's resident pages, and those depended on the file's history (see the
    module docstring: 2.65x the file just after ``quantize`` wrote it, 2.04x read back). ``fsync`` first, because
    ``POSIX_FADV_DONTNEED`` drops clean pages only (nothing is lost either way), then one read through a small
    buffer (``read_through``), so the load that follows finds the file cached, as the timing assumes.
    """
    if not hasattr(os, "posix_fadvise"):
        return PAGE_CACHE_AS_IS
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return PAGE_CACHE_AS_IS   # the load names what is wrong with the path
    try:
        try:
            os.fsync(fd)
        except OSError:
            pass   # a file system that refuses fsync on a read-only descriptor: its clean pages still go
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        _read_through(fd)
        return PAGE_CACHE_READ
    except OSError:
        return PAGE_CACHE_AS_IS
    finally:
        os.close(fd)


def read_through(path: str | os.PathLike[str]) -> None:
    """Read the whole file through one buffer: it is then in the page cache, with nothing parsed, and the buffer
    (1 MiB: its own mapping, not the C heap) leaves no heap behind for whatever runs next to reuse."""
    fd = os.open(path, os.O_RDONLY)
    try:
        _read_through(fd)
    finally:
        os.close(fd)


def _read_through(fd: int) -> None:
    buffer = bytearray(1 << 20)
    while os.readv(fd, [buffer]):
        pass


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


SMAPS = Path("/proc/self/smaps")


def _smaps_text(smaps: str | None) -> str | None:
    if smaps is not None:
        return smaps
    try:
        return SMAPS.read_text()
    except OSError:
        return None


def _resident_mb(smaps: str, wanted: Callable[[str], bool]) -> float:
    """Summed ``Rss`` of the mappings whose path (empty for anonymous ones) ``wanted`` accepts, in MiB."""
    total_kb, inside = 0.0, False
    for line in smaps.splitlines():
        head = line.split(None, 6)
        if head and not head[0].endswith(":"):   # a mapping's header: address perms offset dev inode [path]
            inside = wanted(head[5].strip() if len(head) > 5 else "")
        elif inside and head and head[0] == "Rss:":
            total_kb += float(head[1])
    return total_kb / 1024.0


def file_rss_mb(path: str | os.PathLike[str], smaps: str | None = None) -> float | None:
    """Resident pages of every mapping of the file ``path`` (the interpreter's, and any the runtime holds), in
    MiB; None without /proc/self/smaps.

    Why: an app's runtime maps the model file (``from_file``) and the interpreter reads its weights from the
    mapping, so the file's resident part is the model's, but it is clean page cache rather than heap: only
    the pages something touched count, and the kernel may map whole folios around each touch.
    """
    text = _smaps_text(smaps)
    if text is None:
        return None
    real = os.path.realpath(path)
    return _resident_mb(text, lambda mapped: mapped.startswith("/") and os.path.realpath(mapped) == real)


def library_rss_mb(smaps: str | None = None) -> float | None:
    """Resident pages of shared objects' mappings (``*.so*``: code and read-only data), in MiB; None without
    /proc/self/smaps.

    Why: a process's first interpreter faults in the pages of LiteRT's and XNNPACK's code it runs (3.5 MiB
    for the sample, 2.4 of them at construction), whatever the model; a second model in the same process
    pays none of it. Charged to the model, it was a fifth of the sample's int8 "model memory". The heap,
    the file's bytes and a mapped model file are not shared objects and stay the model's.
    """
    text = _smaps_text(smaps)
    if text is None:
        return None
    return _resident_mb(text, lambda mapped: ".so" in mapped.rsplit("/", 1)[-1])


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


# Ops whose constant weight input XNNPACK repacks into its own layout, and that input's position.
PACKED_WEIGHT_INPUT = {"FULLY_CONNECTED": 1, "BATCH_MATMUL": 1, "CONV_2D": 1, "DEPTHWISE_CONV_2D": 1}
# Bytes per element of a weight as the delegate packs it when a DEQUANTIZE op feeds it (fp16 -> fp32).
_FLOAT_BYTES = 4
_DTYPE_BYTES = {"float16": 2, "int8": 1, "uint8": 1, "float32": 4, "int4": 0.5}


def weight_sharing(graphs: Any) -> dict[str, float]:
    """Matmul weights a delegate packs, summed once per use and once per distinct buffer, in MiB.

    ``graphs``: ``albert_edge.runtime.flatbuffer.read_tflite_subgraphs``' list (or one graph of
    ``read_tflite_graph``). Each subgraph is delegated and packed once, however often it runs: an op in
    a WHILE body (ALBERT's shared layer, ``GraphOptions.shared_layer_loop``) is one use. A weight fed
    through a DEQUANTIZE of a constant (fp16 files) counts as the float32 copy the delegate packs.
    """
    per_use, distinct = 0.0, {}
    uses = 0
    for number, graph in enumerate(graphs if isinstance(graphs, list) else [graphs]):
        producers = {out: op for op in graph.ops for out in op.outputs}
        for op in graph.ops:
            position = PACKED_WEIGHT_INPUT.get(op.name)
            if position is None or len(op.inputs) <= position or op.inputs[position] < 0:
                continue
            tensor = graph.tensors[op.inputs[position]]
            size = float(tensor.nbytes)
            source = producers.get(tensor.index)
            if not tensor.constant and source is not None and source.name == "DEQUANTIZE" and source.inputs:
                tensor = graph.tensors[source.inputs[0]]
                size = tensor.nbytes * _FLOAT_BYTES / _DTYPE_BYTES.get(tensor.dtype, _FLOAT_BYTES)
            if not tensor.constant:
                continue
            uses += 1
            per_use += size
            distinct[tensor.buffer or (number, tensor.index)] = size
    mib = float(2**20)
    return {"packed_weight_uses": float(uses), "packed_weight_buffers": float(len(distinct)),
            "weights_packed_per_use_mb": per_use / mib, "weights_packed_once_mb": sum(distinct.values()) / mib}


def new_modules(before: set[str], limit: int = 20) -> list[str]:
    """Modules imported since ``before`` was taken (sorted, at most ``limit``)."""
    return sorted(set(sys.modules) - before)[:limit]


@dataclass
class MemoryProbe:
    """Resident-set readings at benchmark_model's points, in MiB; ``model()`` subtracts the baseline."""

    baseline_mb: float = 0.0
    after_file_mb: float = 0.0
    after_load_mb: float = 0.0
    after_first_mb: float = 0.0
    peak_timed_mb: float = 0.0
    method: str = METHOD_HWM
    imported_before_baseline: list[str] = field(default_factory=list)
    imported_after_baseline: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    library_baseline_mb: float | None = None
    library_after_first_mb: float | None = None
    model_path: str | None = None
    mapped_baseline_mb: float | None = None
    mapped_after_first_mb: float | None = None
    page_cache: str = PAGE_CACHE_AS_IS
    _modules_at_baseline: set[str] = field(default_factory=set)
    _sampled_peak: float = 0.0
    _hwm_reset: bool = False

    def baseline(self) -> None:
        release_freed_memory()
        self.library_baseline_mb = library_rss_mb()
        self.mapped_baseline_mb = file_rss_mb(self.model_path) if self.model_path else None
        self.baseline_mb = rss_mb()
        self.imported_before_baseline = foreign_modules()
        self._modules_at_baseline = set(sys.modules)
        if not STATUS.exists():
            self.method = METHOD_RUSAGE

    def file_read(self) -> None:
        """Call once the model file's bytes are in memory, before the interpreter is built."""
        self.after_file_mb = rss_mb()

    def loaded(self) -> None:
        self.after_load_mb = rss_mb()
        if not self.after_file_mb:
            self.after_file_mb = self.after_load_mb   # no split: all of the load counts as the interpreter's

    def first_inference(self) -> None:
        self.after_first_mb = rss_mb()
        self.library_after_first_mb = library_rss_mb()
        self.mapped_after_first_mb = file_rss_mb(self.model_path) if self.model_path else None
        self.imported_after_baseline = new_modules(self._modules_at_baseline)

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
        raw = {k: v for k, v in asdict(self).items() if not k.startswith("_") and k != "weights"}
        return {**raw, **self.weights, "model_after_load_mb": self.after_load_mb - self.baseline_mb,
                "model_after_first_mb": self.after_first_mb - self.baseline_mb,
                "model_peak_mb": self.peak_timed_mb - self.baseline_mb,
                "part_file_mb": self.after_file_mb - self.baseline_mb,
                "part_interpreter_mb": self.after_load_mb - self.after_file_mb,
                "part_first_call_mb": self.after_first_mb - self.after_load_mb, **self._library_split()}

    def _library_split(self) -> dict:
        """The runtime's library pages faulted in by the load and first call, and the model's memory without them."""
        if self.library_baseline_mb is None or self.library_after_first_mb is None:
            return {}
        code = self.library_after_first_mb - self.library_baseline_mb
        own = self.after_first_mb - self.baseline_mb - code
        split = {"part_library_code_mb": code, "model_own_after_first_mb": own}
        if self.mapped_baseline_mb is None or self.mapped_after_first_mb is None:
            return split
        mapped = self.mapped_after_first_mb - self.mapped_baseline_mb
        packed = self.weights.get("weights_packed_per_use_mb", 0.0)
        # The heap's rest once the file's pages and the graph's packed weights are named: the tensor arena,
        # activations, kernels' scratch and the interpreter's own structures.
        return {**split, "part_file_mapped_mb": mapped, "part_arena_rest_mb": own - mapped - packed}


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
    out["page_cache"] = rows[0].get("page_cache", PAGE_CACHE_AS_IS)
    out["rounds"] = [{k: r[k] for k in MODEL_KEYS if k in r} for r in rows]
    return out
