"""One benchmark configuration in its own process: ``python -m albert_edge.bench_latency.worker``.

Interpreters keep thread pools, arenas and caches for the life of the process, so a second model
timed in the same process inherits the first one's warm state. Each configuration therefore gets
a process of its own; it loads one model with one thread count, warms up and times calls (inputs
set + invoke + outputs read, which is what an app pays per call). Run plainly it times ``--runs``
calls and prints exactly one JSON line; with ``--serve`` it stays alive and times a burst per
``run N`` line on stdin, so that the runner can pair configurations round by round (``serve``).
Failures are a JSON line with ``"ok": false`` and a non-zero exit code.

The model is opened through ``albert_edge.runtime.open_backend``, the code path an app runs, so
only the interpreter that is asked for is imported (never TensorFlow unless ``--backend tf``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from albert_edge.bench_latency.memory import (
    PAGE_CACHE_AS_IS,
    MemoryProbe,
    foreign_modules,
    max_rss_mb,
    process_usage,
    read_from_storage,
    weight_sharing,
)
from albert_edge.errors import AlbertEdgeError
from albert_edge.neighbours import machine_busy_s, settle_own_threads, usable_cpus

# "litert_buckets" is LiteRT behind the runtime's length buckets (runtime/length_buckets.py): one
# interpreter per padded width, so a real-length run never reshapes a graph.
BACKENDS = ("litert", "litert_buckets", "tflite_runtime", "tf", "onnxruntime")

Runner = Callable[[dict[str, np.ndarray]], object]


class WorkerError(Exception):
    """A configuration that cannot run (missing interpreter, unreadable model, bad arguments)."""


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports ru_maxrss in KiB)."""
    return max_rss_mb()


# Imported before the clock starts: init time is the model load, not the Python import.
_INTERPRETER_MODULES = {"litert": "ai_edge_litert.interpreter", "litert_buckets": "ai_edge_litert.interpreter",
                        "tflite_runtime": "tflite_runtime.interpreter",
                        "tf": "tensorflow", "onnxruntime": "onnxruntime"}


def import_runtime(backend: str) -> None:
    """Import the interpreter module and the albert_edge loader, and nothing else.

    Done before the memory baseline and before the clock starts: neither the model's memory nor
    its init time should include Python imports.
    """
    import importlib

    import albert_edge.runtime.backends  # noqa: F401 - the loader the app runs

    if backend == "litert_buckets":
        import albert_edge.runtime.length_buckets  # noqa: F401

    try:
        importlib.import_module(_INTERPRETER_MODULES[backend])
    except ImportError as exc:
        raise WorkerError(f"backend {backend!r}: interpreter not installed ({exc})") from None


def load(path: str, backend: str, threads: int, xnnpack: bool, max_length: int = 128,
         on_read: Callable[[], None] | None = None) -> tuple[Runner, str, float]:
    """Open the model through albert_edge.runtime (what an app runs).

    Returns (run, interpreter version, init ms): init covers mapping the file, building the
    interpreter or session and, for TFLite, applying the XNNPACK delegate. ``max_length`` (the
    longest input of this run) caps the bucket widths of ``litert_buckets``. ``on_read`` is called
    once the file is mapped (the memory probe's split point; it adds its /proc read to init).
    """
    from albert_edge.errors import AlbertEdgeError
    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.pack import map_model_file

    import_runtime(backend)
    start = time.perf_counter()
    try:
        # Mapped, as ``from_file`` does: the interpreter maps the file by its path and only the pages it
        # touches are resident (the breakdown's mapped-file part); a read would charge a heap copy instead.
        data = map_model_file(path)
        if on_read is not None:
            on_read()
        if backend == "litert_buckets":
            from albert_edge.runtime.length_buckets import BucketedBackend, checked_buckets

            model = BucketedBackend(lambda: open_backend(data, path, "litert", threads, xnnpack),
                                    checked_buckets(True, max_length))
        else:
            model = open_backend(data, path, backend, threads, xnnpack)
    except AlbertEdgeError as exc:
        raise WorkerError(str(exc)) from None
    init_ms = (time.perf_counter() - start) * 1e3
    return model.run, _version(model.name), init_ms


# What an app asks on its first call, per task (any other task: TaskModel.predict on SAMPLE_TEXT).
SAMPLE_TEXT = "这家店的菜很好吃，服务也很周到，下次还会再来。"
SAMPLE_QUESTION = "服务怎么样？"


def open_task_runtime(path: str, backend: str = "auto", threads: int | None = None,
                      xnnpack: bool = True, task: str | None = None) -> tuple[Callable[[], object], str]:
    """(first call, task name) after opening ``path`` with its task's runtime, as an app does.

    The runtime is the one an app uses for the pack's task (TextClassifier, TextEmbedder,
    TokenClassifier, QuestionAnswerer, else TaskModel), so the clock around this call and the first
    answer covers everything between a model file and an answer: pack, metadata, tokenizer, checks,
    interpreter. ``litert_buckets`` opens LiteRT with the classifier's length buckets. ``task``: the
    pack's task when the caller read it already (an app knows its task; reading the pack here again
    put a second file read and pack parse inside a clock that should time what an app pays).
    """
    if task is None:
        from albert_edge.runtime.pack import read_pack

        task = read_pack(path).task
    chosen = "litert" if backend == "litert_buckets" else backend
    if task == "sequence_classification":
        from albert_edge.runtime.classifier import TextClassifier

        clf = TextClassifier.from_file(path, threads, chosen, xnnpack=xnnpack,
                                       length_buckets=True if backend == "litert_buckets" else None)
        return (lambda: clf.predict(SAMPLE_TEXT)), task
    if task == "feature_extraction":
        from albert_edge.runtime.embedder import TextEmbedder

        embedder = TextEmbedder.from_file(path, threads, chosen, xnnpack=xnnpack)
        return (lambda: embedder.embed(SAMPLE_TEXT)), task
    if task == "token_classification":
        from albert_edge.runtime.token_classifier import TokenClassifier

        ner = TokenClassifier.from_file(path, threads, chosen, xnnpack=xnnpack)
        return (lambda: ner.predict(SAMPLE_TEXT)), task
    if task == "question_answering":
        from albert_edge.runtime.question_answerer import QuestionAnswerer

        qa = QuestionAnswerer.from_file(path, threads, chosen, xnnpack=xnnpack)
        return (lambda: qa.answer(SAMPLE_QUESTION, SAMPLE_TEXT)), task
    from albert_edge.runtime.task_model import TaskModel

    model = TaskModel.from_file(path, threads, chosen, xnnpack=xnnpack)
    return (lambda: model.predict(SAMPLE_TEXT)), task


def import_task_runtimes() -> None:
    """Import every task runtime before a clock starts: the app's figure is its load, not Python's imports."""
    import importlib

    for name in ("classifier", "embedder", "token_classifier", "question_answerer", "task_model"):
        importlib.import_module(f"albert_edge.runtime.{name}")


def first_answer(path: str, backend: str, threads: int, xnnpack: bool = True) -> dict:
    """This process's time from a model file to its task's first answer (call it in a fresh process).

    ``read_pack`` for the task name runs before the clock (an app knows its task); the clock then
    covers ``from_file`` and the first call, each reported.
    """
    import_runtime(backend)
    import_task_runtimes()
    from albert_edge.runtime.pack import read_pack

    task = read_pack(path).task
    start = time.perf_counter()
    call, task = open_task_runtime(path, backend, threads, xnnpack, task)
    opened = time.perf_counter()
    call()
    done = time.perf_counter()
    return {"ok": True, "task": task, "open_ms": (opened - start) * 1e3, "first_call_ms": (done - opened) * 1e3,
            "first_answer_ms": (done - start) * 1e3}


def first_answer_in_child(path: str, backend: str, threads: int, xnnpack: bool = True) -> float | None:
    """``first_answer_ms`` measured in a fresh child process; None for a file no task runtime opens.

    A child, because this worker's own load must stay the first in its process (init_ms and the
    memory baseline), and a second load here would find warm caches.
    """
    import subprocess

    argv = [sys.executable, "-m", "albert_edge.bench_latency.worker", "--first-answer", "--model", path,
            "--backend", backend, "--threads", str(threads), *([] if xnnpack else ["--no-xnnpack"])]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        reply = json.loads(lines[-1]) if lines else {}
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return reply.get("first_answer_ms") if reply.get("ok") else None


def _version(backend: str) -> str:
    from importlib import metadata

    dists = {"litert": ("ai-edge-litert",), "litert_buckets": ("ai-edge-litert",), "tflite_runtime": ("tflite-runtime",),
             "tf": ("tensorflow-cpu", "tensorflow"), "onnxruntime": ("onnxruntime",)}[backend]
    for name in dists:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def timing_id_high(model: str, wanted: int) -> int:
    """The random ids' exclusive upper bound: ``wanted``, or the word table's row count when smaller.

    A model with a vocabulary under ``wanted`` tokens would otherwise be fed ids past its table, and
    LiteRT's GATHER / ONNX Runtime's Gather fail on them. A file whose table cannot be found keeps ``wanted``.
    """
    from albert_edge.runtime.consistency import graph_facts

    try:
        facts, _ = graph_facts(Path(model).read_bytes(), model)
    except Exception:  # noqa: BLE001 - the load below reports an unreadable file in its own words
        return wanted
    rows = facts.embedding_rows
    return min(wanted, rows) if rows else wanted


def graph_weight_sharing(model: str) -> dict[str, float]:
    """``memory.weight_sharing`` of a .tflite file's serving graph; empty for other files or a bad read
    (the load reports an unreadable file in its own words)."""
    from albert_edge.runtime.flatbuffer import read_tflite_subgraphs
    from albert_edge.runtime.pack import model_kind, tflite_flatbuffer_view

    try:
        data = Path(model).read_bytes()
        if model_kind(data) != "tflite":
            return {}
        return weight_sharing(read_tflite_subgraphs(tflite_flatbuffer_view(data), model))
    except Exception:  # noqa: BLE001 - a figure for the report, never a reason to fail the bench
        return {}


def make_inputs(batch: int, length: int, id_low: int, id_high: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random token ids ``[batch, length]`` int32 in [id_low, id_high), a full mask, segment 0.

    Latency does not depend on the id values; the range only has to be inside every vocab.
    """
    ids = rng.integers(id_low, id_high, size=(batch, length), dtype=np.int32)
    return {
        "input_ids": ids,
        "attention_mask": np.ones((batch, length), dtype=np.int32),
        "token_type_ids": np.zeros((batch, length), dtype=np.int32),
    }


def _run_delay_ns() -> int | None:
    """Nanoseconds this process's threads have waited on a run queue (``/proc/self/task/*/schedstat``).

    The kernel's own count of time spent ready to run but without a CPU: contention, measured
    directly. None where there is no schedstat (not Linux, or a kernel without it).
    """
    total, found = 0, False
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/schedstat") as handle:
                total += int(handle.read().split()[1])
                found = True
        except (OSError, ValueError, IndexError):
            continue   # a thread that exited between listdir and open
    return total if found else None


class Session:
    """One loaded configuration, timed in bursts: the long-lived worker's state between rounds.

    Construction loads the model, runs the first inference and the warm-up; ``burst(n)`` times ``n``
    calls and measures what the neighbours cost them; ``finish()`` closes the memory probe.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        if args.pin:
            cpus = sorted({int(c) for c in args.pin.split(",")})
            os.sched_setaffinity(0, cpus)
        # The file as an app reads it from storage, before anything maps it (memory.read_from_storage).
        page_cache = read_from_storage(args.model) if args.page_cache == "read" else PAGE_CACHE_AS_IS
        # The app's figure first, in a child of its own (see first_answer_in_child).
        self.first_answer_ms = (first_answer_in_child(args.model, args.backend, args.threads, not args.no_xnnpack)
                                if args.backend != "tf" else None)
        import_runtime(args.backend)
        id_high = timing_id_high(args.model, args.id_high)  # before the memory baseline: it reads the file once
        self.args = args
        self.lengths = [int(x) for x in args.lengths.split(",")] if args.lengths else [args.seq_len]
        # The inputs are drawn before the memory baseline: numpy.random is imported lazily, and its
        # 7.7 MB were charged to the model when the pool was drawn after the load.
        rng = np.random.default_rng(args.seed)
        # A small pool of distinct inputs, cycled, so the timed loop does no allocation of its own.
        pool_size = len(self.lengths) if len(self.lengths) > 1 else 4
        self.pool = [make_inputs(args.batch, self.lengths[i % len(self.lengths)], args.id_low, id_high, rng)
                     for i in range(pool_size)]
        self.calls = 0   # where the pool cycle continues, so real-length bursts walk the whole pool
        self.probe = MemoryProbe(weights=graph_weight_sharing(args.model), model_path=args.model, page_cache=page_cache)
        self.version = _version(args.backend)   # importlib.metadata pulls in email.*: before the baseline too
        self.rss_start = peak_rss_mb()   # before the baseline: its first call imports ``resource``
        self.probe.baseline()
        self.run, _, self.init_ms = load(args.model, args.backend, args.threads, not args.no_xnnpack,
                                                    max(self.lengths), on_read=self.probe.file_read)
        self.probe.loaded()
        self.rss_loaded = peak_rss_mb()
        try:
            start = time.perf_counter()
            self.run(self.pool[0])
            self.first_ms = (time.perf_counter() - start) * 1e3
            self.probe.first_inference()
            for i in range(args.warmup):
                self.run(self.pool[(i + 1) % len(self.pool)])
        except Exception as exc:  # noqa: BLE001 - interpreters raise RuntimeError/ValueError with long texts
            raise WorkerError(f"{args.model}: inference failed ({str(exc).splitlines()[0]})") from None
        self.probe.start_timed()

    def burst(self, runs: int) -> dict:
        """Time ``runs`` calls; with them, CPU time, wall time, context switches and run-queue wait.

        CPU over wall below the thread count, involuntary switches and run-queue wait are how
        much of the burst the process spent waiting for a CPU; ``others_cpu_s`` over ``window_s``
        is how many of its CPUs the neighbours held meanwhile (the runner's contention test).
        """
        samples = []
        usage, delay, busy = process_usage(), _run_delay_ns(), machine_busy_s()
        opened = time.perf_counter()
        try:
            for _ in range(runs):
                feeds = self.pool[self.calls % len(self.pool)]
                self.calls += 1
                start = time.perf_counter()
                self.run(feeds)
                samples.append((time.perf_counter() - start) * 1e3)
                self.probe.sample()
        except Exception as exc:  # noqa: BLE001
            raise WorkerError(f"{self.args.model}: inference failed ({str(exc).splitlines()[0]})") from None
        after, delay_after, busy_after = process_usage(), _run_delay_ns(), machine_busy_s()
        window_s = time.perf_counter() - opened
        cpu_s = (after.ru_utime + after.ru_stime) - (usage.ru_utime + usage.ru_stime)
        burst = {
            "ok": True, "samples_ms": samples, "wall_s": sum(samples) / 1e3, "cpu_s": cpu_s,
            "others_cpu_s": None if busy is None or busy_after is None else busy_after - busy - cpu_s,
            "window_s": window_s,
            "cpus": len(usable_cpus()),
            "involuntary_switches": after.ru_nivcsw - usage.ru_nivcsw,
            "voluntary_switches": after.ru_nvcsw - usage.ru_nvcsw,
            "run_delay_s": None if delay is None or delay_after is None else (delay_after - delay) / 1e9,
        }
        # Measured: now let this process's pools stop spinning before the next configuration's burst.
        burst["settle_s"] = settle_own_threads()
        return burst

    def ready(self) -> dict:
        """What is known once loaded and warm: the cold-start figures."""
        args = self.args
        return {"ok": True, "ready": True, "model": args.model, "backend": args.backend,
                "backend_version": self.version, "threads": args.threads, "batch": args.batch,
                "lengths": self.lengths, "init_ms": self.init_ms, "first_inference_ms": self.first_ms,
                "first_answer_ms": self.first_answer_ms,
                "rss_before_load_mb": self.rss_start, "rss_after_load_mb": self.rss_loaded,
                "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                "pid": os.getpid()}

    def finish(self) -> dict:
        self.probe.end_timed()
        return {"ok": True, "peak_rss_mb": peak_rss_mb(), "memory": self.probe.to_dict(),
                "foreign_modules": foreign_modules(allowed=("tensorflow", "keras") if self.args.backend == "tf" else ())}


def measure(args: argparse.Namespace) -> dict:
    """Load, warm up and time one configuration in one burst; return the JSON-ready result."""
    session = Session(args)
    burst = session.burst(args.runs)
    ready = {k: v for k, v in session.ready().items() if k != "ready"}
    return {**ready, **burst, **session.finish()}


def serve(args: argparse.Namespace, requests=None, reply=None) -> int:
    """The runner's long-lived worker: load once, then answer one JSON line per request line.

    Protocol (one line each way): after loading and warming up, the worker prints the ``ready``
    line; then ``run N`` -> a burst of N timed calls; ``stop`` -> the memory figures, and exit.
    Keeping the process alive across rounds is what lets the runner time every configuration
    within seconds of the others, round after round, and pair their rounds.
    """
    requests = requests if requests is not None else sys.stdin
    reply = reply or (lambda obj: print(json.dumps(obj), flush=True))
    session = Session(args)
    reply(session.ready())
    for line in requests:
        command, _, value = line.strip().partition(" ")
        if command == "run":
            reply(session.burst(max(1, int(value))))
        elif command == "stop":
            reply(session.finish())
            return 0
        elif command:
            reply({"ok": False, "error": f"unknown request {line.strip()!r}: expected 'run N' or 'stop'"})
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m albert_edge.bench_latency.worker",
                                     description="Time one model configuration; print one JSON line.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--backend", required=True, choices=BACKENDS)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--lengths", default="", help="comma-separated sequence lengths cycled over runs")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--pin", default="", help="comma-separated CPU ids for os.sched_setaffinity")
    parser.add_argument("--no-xnnpack", action="store_true", help="TFLite builtin kernels only")
    parser.add_argument("--id-low", type=int, default=1)
    parser.add_argument("--id-high", type=int, default=100, help="exclusive upper bound of random token ids")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first-answer", action="store_true",
                        help="time only from_file + the first answer of the pack's task runtime, in this process")
    parser.add_argument("--page-cache", choices=("read", "as-is"), default="read",
                        help="the model file's page-cache state when memory is measured: 'read' (default) drops its "
                             "written pages and reads it back, as an app reads a file from storage; 'as-is' keeps "
                             "what the file's history left (a file just written: whole folios resident)")
    parser.add_argument("--serve", action="store_true",
                        help="stay alive: print a ready line, then answer 'run N' / 'stop' lines on stdin")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.threads < 1 or args.runs < 1 or args.batch < 1 or args.warmup < 0:
            raise WorkerError("threads, runs and batch must be >= 1 and warmup >= 0")
        if args.first_answer:
            print(json.dumps(first_answer(args.model, args.backend, args.threads, not args.no_xnnpack)), flush=True)
            return 0
        if args.serve:
            return serve(args)
        result = measure(args)
    except (WorkerError, OSError, ValueError, AlbertEdgeError) as exc:
        print(json.dumps({"ok": False, "error": str(exc)}), flush=True)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
