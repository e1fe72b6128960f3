"""What of a model's memory is the runtime's, and which of the file's pages stay resident. Prints JSON.

Two probes, each in a fresh process per file (records 0290 and 0292):

* ``library``: one process opens FIRST and answers once at ``--seq-len`` tokens, then SECOND; the resident
  pages of shared objects (``*.so`` mappings in /proc/self/smaps) each one added. The first model pays the
  runtime's code (LiteRT, XNNPACK); a second model only the kernels the first did not run.
* ``file_pages``: one file opened the way ``from_file`` opens it (mapped; the interpreter maps it by path);
  the resident pages of the file's mappings after the load, after ``madvise(MADV_DONTNEED)`` of them, and
  after one call: what a call touches again (the kernel may map whole page-cache folios around a touch).

Usage: python -m benchmarks.suites.model_memory_parts FIRST SECOND [--seq-len 128] [--threads 2]
Run by hand; never timed in CI. Linux only (/proc/self/smaps, madvise).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys

MADV_DONTNEED = 4


def _feed(path: str, seq_len: int):
    """Random ids within the file's word table (the bench worker's draw), ``[1, seq_len]``."""
    import numpy as np

    from albert_edge.bench_latency.worker import timing_id_high

    high = timing_id_high(path, 20000)
    ids = np.random.default_rng(0).integers(min(1000, high // 2), high, size=(1, seq_len)).astype(np.int32)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def _open(path: str, threads: int):
    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.pack import map_model_file

    return open_backend(map_model_file(path), path, "litert", threads, True)


def library(first: str, second: str, seq_len: int, threads: int) -> dict:
    """Library code pages (MiB) the first and the second model's load and first call faulted in."""
    from albert_edge.bench_latency.memory import library_rss_mb, release_freed_memory
    from albert_edge.bench_latency.worker import import_runtime

    import_runtime("litert")   # the interpreter module's own pages are the import's, before either model
    feeds = {path: _feed(path, seq_len) for path in (first, second)}
    release_freed_memory()
    out = {}
    for tag, path in (("first", first), ("second", second)):
        before = library_rss_mb()
        _open(path, threads).run(feeds[path])
        out[tag] = {"file": path, "library_code_mb": round(library_rss_mb() - before, 3)}
    return out


def _file_mappings(path: str) -> list[tuple[int, int]]:
    real, spans = os.path.realpath(path), []
    with open("/proc/self/maps") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) > 5 and os.path.realpath(parts[5]) == real:
                start, end = (int(x, 16) for x in parts[0].split("-"))
                spans.append((start, end))
    return spans


def file_pages(path: str, seq_len: int, threads: int) -> dict:
    """Resident MiB of the file's mappings after load, after DONTNEED, after one call."""
    from albert_edge.bench_latency.memory import file_rss_mb

    feed = _feed(path, seq_len)
    backend = _open(path, threads)
    out = {"file": path, "file_mb": round(os.path.getsize(path) / 2**20, 3),
           "after_load_mb": round(file_rss_mb(path), 3)}
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    for start, end in _file_mappings(path):
        libc.madvise(start, end - start, MADV_DONTNEED)
    out["after_dontneed_mb"] = round(file_rss_mb(path), 3)
    backend.run(feed)
    out["after_one_call_mb"] = round(file_rss_mb(path), 3)
    return out


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.model_memory_parts", *args],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first")
    parser.add_argument("second", nargs="?")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--probe", choices=("library", "file_pages"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.probe == "library":
        print(json.dumps(library(args.first, args.second, args.seq_len, args.threads)))
        return 0
    if args.probe == "file_pages":
        print(json.dumps(file_pages(args.first, args.seq_len, args.threads)))
        return 0
    common = ["--seq-len", str(args.seq_len), "--threads", str(args.threads)]
    files = [f for f in (args.first, args.second) if f]
    report = {"file_pages": [_child([f, *common, "--probe", "file_pages"]) for f in files]}
    if args.second:
        report["library"] = [_child([a, b, *common, "--probe", "library"])
                             for a, b in ((args.first, args.second), (args.second, args.first))]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
