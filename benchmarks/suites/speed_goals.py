"""Issue #18's two goals, measured as figures of one run. Prints JSON.

* **Real-length ratio** (goal: <= 0.40 at batch 1, 2 threads): the sample test set's real token
  lengths (256 lengths at evenly spaced quantiles, shuffled, so consecutive calls change shape as
  an app's do) against the same file padded to 128, in one process, interleaved call by call (a
  real call, then a 128 call, per setting in a rotating order), so a neighbour's burst hits both
  sides of every ratio. Two runtime settings: ``resize`` (one interpreter resized to every length,
  the default) and ``buckets`` (``TextClassifier(length_buckets=True)``: one interpreter per padded
  width). The buckets' logits are compared with ``resize``'s on the same inputs.
* **Cold start** (goal: <= 20 ms for the sample's int8 file): each repetition a fresh process,
  ways interleaved round by round, imports done before the clock:
  ``open_backend`` -- what the bench reports as init + first inference: ``open_backend`` on the
  file's bytes, then one call at seq 128; ``classifier`` -- what an app waits for:
  ``TextClassifier.from_file`` (pack, tokenizer, load-time check, interpreter) then ``predict`` of
  a test-set text (module imports, ``albert_edge.tasks`` included, happen before the clock in
  every way: they are paid once per process, not per model); ``compiled_cache`` -- LiteRT's ``CompiledModel`` with XNNPACK's weight cache
  (benchmarks/suites/cold_start.py; not wired into the runtime, its logits are compared with
  ``open_backend``'s). ``--before-src DIR`` adds ``open_backend`` and ``classifier`` run from another
  source tree (e.g. the main branch) in the same rounds, for before/after ratios. The load also
  reports its thread CPU time (``load_thread_cpu_ms``): it runs on one thread, so that figure is its
  work, which a loaded machine cannot inflate the way it inflates wall time.

Usage: python -m benchmarks.suites.speed_goals [MODEL.tflite] [--rounds 20] [--processes 15] [--before-src DIR]
Without MODEL the sample's dynamic int8 file is built as the quantize pipeline ships it
(benchmarks/suites/real_length_tax.py's build). Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SAMPLE = REPO / "examples" / "albert_tiny_zh_sentiment"
TEST = SAMPLE / "test.tsv"
COLD_WAYS = ("open_backend", "classifier", "compiled_cache")


def summarize(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 3),
            "p90": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
            "min": round(ordered[0], 3), "n": len(ordered)}


# ---------------------------------------------------------------- real-length ratio (one process)

def real_length_ratio(model: Path, threads: int, rounds: int, calls: int) -> dict:
    import numpy as np

    from albert_edge.bench_latency.runner import (
        describe_variants,
        length_summary,
        real_lengths,
        sample_batch_lengths,
    )
    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.length_buckets import DEFAULT_BUCKETS, BucketedBackend

    data = model.read_bytes()
    population = real_lengths(describe_variants([model])[0], TEST)
    lengths = sample_batch_lengths(population, 1, seed=0)
    rng = np.random.default_rng(0)

    def feed(length: int) -> dict:
        ids = rng.integers(1, 100, size=(1, length), dtype=np.int32)
        return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}

    real, full = [feed(n) for n in lengths], feed(128)
    settings = {
        "resize": open_backend(data, str(model), "litert", threads, True),
        "buckets": BucketedBackend(lambda: open_backend(data, str(model), "litert", threads, True), DEFAULT_BUCKETS),
    }
    for backend in settings.values():   # warm-up: every bucket built, arenas at their largest
        for f in (full, *real):
            backend.run(f)
    times = {name: {"real": [], "128": []} for name in settings}
    names, k = list(settings), 0
    for r in range(rounds):
        print(f"real lengths: round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for name in names[r % len(names):] + names[: r % len(names)]:
            run = settings[name].run
            for j in range(calls):
                for kind, f in (("real", real[(k + j) % len(real)]), ("128", full)):
                    start = time.perf_counter()
                    run(f)
                    times[name][kind].append((time.perf_counter() - start) * 1e3)
        k += calls
    drift = max(float(np.abs(settings["buckets"].run(f)["logits"] - settings["resize"].run(f)["logits"]).max())
                for f in real)
    out = {"lengths": {**length_summary(population), "timed_median": statistics.median(lengths)},
           "threads": threads, "batch": 1, "rounds": rounds, "calls_per_round": calls, "settings": {}}
    for name, t in times.items():
        real_ms, full_ms = statistics.median(t["real"]), statistics.median(t["128"])
        out["settings"][name] = {"real_ms": summarize(t["real"]), "pad128_ms": summarize(t["128"]),
                                 "ratio_real_vs_128": round(real_ms / full_ms, 3)}
    out["settings"]["buckets"].update({"widths": list(DEFAULT_BUCKETS),
                                       "interpreters": settings["buckets"].interpreters(),
                                       "max_abs_logit_diff_vs_resize": drift})
    out["ratio_buckets_vs_resize_at_real"] = round(
        statistics.median(times["buckets"]["real"]) / statistics.median(times["resize"]["real"]), 3)
    return out


# ---------------------------------------------------------------- cold start (fresh processes)

def child(way: str, model: str, threads: int, cache: str) -> dict:
    """One cold start in this fresh process; imports happen before the clock starts."""
    import numpy as np

    if way == "compiled_cache":
        from benchmarks.suites.cold_start import child as cold_child

        got = cold_child("compiled_cache", model, threads, 128, cache)
        return {"load_ms": got["load_ms"], "first_ms": got["first_inference_ms"], "logits": got["logits"],
                "load_cpu_ms": None}
    import ai_edge_litert.interpreter  # noqa: F401 - module imports are once per process, not per model

    import albert_edge.tasks  # noqa: F401 - imported lazily by the pack reader: also once per process
    from albert_edge.runtime import TextClassifier
    from albert_edge.runtime.backends import open_backend

    if way == "open_backend":
        ids = (np.arange(128, dtype=np.int32) % 97 + 1).reshape(1, 128)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        start, cpu = time.perf_counter(), time.thread_time()
        with open(model, "rb") as handle:
            backend = open_backend(handle.read(), model, "litert", threads, True)
        loaded, cpu = time.perf_counter(), time.thread_time() - cpu
        logits = backend.run(feeds)["logits"]
    else:
        text = TEST.read_text(encoding="utf-8").splitlines()[1].split("\t")[-1]
        start, cpu = time.perf_counter(), time.thread_time()
        classifier = TextClassifier.from_file(model, num_threads=threads)
        loaded, cpu = time.perf_counter(), time.thread_time() - cpu
        logits = np.asarray(classifier.predict(text).logits)
    done = time.perf_counter()
    # The load runs on this one thread: its CPU time is the load's work, whatever the machine's load.
    return {"load_ms": (loaded - start) * 1e3, "first_ms": (done - loaded) * 1e3, "load_cpu_ms": cpu * 1e3,
            "logits": [float(x) for x in np.ravel(logits)[:2]]}


def run_child(way: str, model: Path, threads: int, cache: str, src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    argv = [sys.executable, "-m", "benchmarks.suites.speed_goals", str(model), "--child", way.split(":")[-1],
            "--threads", str(threads), "--cache", cache]
    # cwd=REPO: ``-m`` puts the repository root first on sys.path, so the child imports ``benchmarks``;
    # albert_edge still comes from ``src`` (PYTHONPATH), the tree being timed.
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=REPO)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{way}: child failed ({(proc.stderr.strip().splitlines() or ['?'])[-1]})")
    return json.loads(lines[-1])


def cold_start(model: Path, threads: int, processes: int, before_src: str | None) -> dict:
    src = str(REPO / "src")
    ways = {w: src for w in COLD_WAYS}
    if before_src:
        ways.update({f"before:{w}": before_src for w in ("open_backend", "classifier")})
    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / (model.stem + ".xnnpack_cache"))
        first_cache = run_child("compiled_cache", model, threads, cache, src)   # writes the cache
        raws: dict[str, list[dict]] = {w: [] for w in ways}
        names = list(ways)
        for r in range(processes):
            print(f"cold start: round {r + 1}/{processes}", file=sys.stderr, flush=True)
            for way in names if r % 2 == 0 else names[::-1]:
                raws[way].append(run_child(way, model, threads, cache, ways[way]))
    base = statistics.median(x["load_ms"] + x["first_ms"] for x in raws["open_backend"])
    reference = raws["open_backend"][0]["logits"]
    out = {"processes_per_way": processes, "threads": threads,
           "weight_cache_first_process_ms": round(first_cache["load_ms"] + first_cache["first_ms"], 3), "ways": {}}
    for way, rows in raws.items():
        total = [x["load_ms"] + x["first_ms"] for x in rows]
        out["ways"][way] = {"cold_start_ms": summarize(total), "load_ms": summarize([x["load_ms"] for x in rows]),
                            "first_inference_ms": summarize([x["first_ms"] for x in rows]),
                            "load_thread_cpu_ms": (summarize([x["load_cpu_ms"] for x in rows])
                                                   if rows[0].get("load_cpu_ms") is not None else None),
                            "ratio_to_open_backend": round(statistics.median(total) / base, 3),
                            "src": ways[way]}
        if way.endswith("open_backend") or way == "compiled_cache":
            out["ways"][way]["max_abs_logit_diff_vs_open_backend"] = max(
                abs(a - b) for a, b in zip(rows[0]["logits"], reference))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, help="a packed .tflite (default: the sample's int8, built)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=20, help="real-length rounds (default 20)")
    parser.add_argument("--calls", type=int, default=16, help="real/128 call pairs per setting per round")
    parser.add_argument("--processes", type=int, default=15, help="fresh processes per cold-start way (default 15)")
    parser.add_argument("--before-src", help="another source tree's src/ to time in the same cold-start rounds")
    parser.add_argument("--only", choices=("real_length", "cold_start"))
    parser.add_argument("--child", choices=COLD_WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, str(args.model), args.threads, args.cache)), flush=True)
        return

    from albert_edge.bench_latency.machine import describe_machine, load_average

    started = time.time()
    model = args.model
    if model is None:
        from benchmarks.suites.real_length_tax import build

        out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "albert-edge" / "speed_goals"
        out.mkdir(parents=True, exist_ok=True)
        print(f"building the sample's files in {out} (TensorFlow converter, reused if present)...", file=sys.stderr)
        model = build(out)["int8_default"]
    machine = describe_machine()
    result = {"benchmark": "speed_goals", "command": " ".join(["python", "-m", "benchmarks.suites.speed_goals", *sys.argv[1:]]),
              "model": str(model), "size_bytes": model.stat().st_size,
              "machine": {k: machine.get(k) for k in ("cpu_model", "architecture", "physical_cores", "logical_cores",
                                                      "usable_cpus", "simd", "packages")},
              "load_average_start": load_average(),
              "goals": {"real_length_ratio": "<= 0.40 (int8, batch 1, 2 threads)", "cold_start_ms": "<= 20 (int8)"}}
    if args.only != "cold_start":
        result["real_length"] = real_length_ratio(model, args.threads, args.rounds, args.calls)
    if args.only != "real_length":
        result["cold_start"] = cold_start(model, args.threads, args.processes, args.before_src)
    result["load_average_end"] = load_average()
    result["elapsed_s"] = round(time.time() - started, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
