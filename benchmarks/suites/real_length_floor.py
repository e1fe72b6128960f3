"""Where a batch-1 call's time goes at real lengths, and the floor it puts under issue #29's 0.40 goal. Prints JSON.

The goal: on the sample's dynamic int8 file, batch 1, a call at the test set's real token lengths
takes <= 0.40x the time of a call padded to 128. A call's time is a part that does not shrink with
the length (Python wrapper, input copy, op dispatch, thread wake-ups, and -- when the shape changed
since the last call -- ResizeInputTensor, AllocateTensors and the re-preparation of every op and
XNNPACK partition) plus the work that does (matmuls ~n, attention ~n^2). This script measures each
part in one process, every setting on an interpreter of its own, in rounds (the settings' order
rotates every round; each setting times a burst of ``--calls`` calls), and reports per-round paired
ratios (``stats.paired_ratio``: median over rounds, bootstrap interval):

* ``app_real``     ``open_backend(...).run`` fed the real lengths (256 at evenly spaced quantiles of
                   the tokenized test set, shuffled: the shape changes on almost every call, as an
                   app's does). The goal's numerator.
* ``fixed_N``      ``run`` on an interpreter that only ever sees N tokens (never reshapes), for N in
                   ``--grid``; ``fixed_128`` is the goal's denominator (pad-to-128 never reshapes).
                   Their medians give t(N) = a + b N + c N^2: ``a`` is the fixed cost of a call at
                   a stable shape.
* ``raw_real``     the real lengths through the interpreter's own calls, each step timed apart:
                   resize (3 x ``resize_tensor_input``) + ``allocate_tensors``, ``set_tensor``,
                   ``invoke``, ``get_tensor``. ``invoke`` at a new shape minus t(n) at a stable shape
                   is the re-preparation LiteRT does inside the first invoke of a shape.
* ``raw_N``        the same steps on the fixed-N interpreters: ``run`` minus them is our wrapper.
* ``buckets_real`` ``length_buckets.BucketedBackend`` (one interpreter per padded width) on the
                   real lengths: the runtime's existing way around reshaping.
* ``other_real``, ``other_full``  with ``--compare FILE``: another file of the same model (e.g. the
                   batch-one graph) at real lengths and at the longest, in the same rounds.

Arithmetic floors (no timing): mean(n) / 128 and median(n) / 128, what a perfectly length-proportional
kernel with no fixed cost would give on this length distribution; and, from the fitted t(n), what our
kernels at a stable shape would give (``stable_shape``), i.e. the ratio with reshaping free.

Usage: python -m benchmarks.suites.real_length_floor [MODEL.tflite] [--threads 1,2] [--rounds 30] [--calls 8]
Without MODEL the sample's dynamic int8 file is built as the quantize pipeline ships it
(benchmarks/suites/real_length_tax.py's build). ``--eval`` sets the TSV whose lengths are used.
Run by hand; never timed in CI (tests run it on a tiny model for its shape only).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "albert_tiny_zh_sentiment"
DEFAULT_GRID = (1, 8, 16, 32, 46, 64, 96, 128)
RAW_STEPS = ("resize_alloc", "set", "invoke", "get")   # wall ms; RawCalls adds the CPU ms of two
RAW_CPU_STEPS = ("resize_alloc_cpu", "invoke_cpu")


class RawCalls:
    """One interpreter driven through its wrapper's own calls (what the signature runner calls), each
    step timed apart (ms); resize and allocate only when the shape changed."""

    def __init__(self, backend) -> None:
        runner = backend._runner   # the TfliteBackend's LiteRT signature runner (private: a benchmark)
        self.wrapper, self.subgraph = runner._interpreter_wrapper, runner._subgraph_index
        self.inputs, self.outputs = dict(runner._inputs), dict(runner._outputs)
        self.shape = None

    def __call__(self, feed: dict) -> dict:
        import numpy as np

        w, g, clock, cpu = self.wrapper, self.subgraph, time.perf_counter, time.process_time
        t0, c0 = clock(), cpu()
        shape = feed["input_ids"].shape
        if shape != self.shape:
            for index in self.inputs.values():
                w.ResizeInputTensor(index, np.array(shape, dtype=np.int32), False, g)
            w.AllocateTensors(g)
            self.shape = shape
        t1, c1 = clock(), cpu()
        for name, index in self.inputs.items():
            w.SetTensor(index, feed[name], g)
        t2, c2 = clock(), cpu()
        w.Invoke(g)
        t3, c3 = clock(), cpu()
        for index in self.outputs.values():
            w.GetTensor(index, g)
        t4 = clock()
        return {"resize_alloc": (t1 - t0) * 1e3, "set": (t2 - t1) * 1e3, "invoke": (t3 - t2) * 1e3,
                "get": (t4 - t3) * 1e3, "resize_alloc_cpu": (c1 - c0) * 1e3, "invoke_cpu": (c3 - c2) * 1e3}


def feeds(lengths: list[int], vocab_high: int, seed: int = 0) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        ids = rng.integers(1, vocab_high, size=(1, n), dtype=np.int32)
        out.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    return out


def open_settings(data: bytes, source: str, threads: int, grid: list[int], buckets: bool,
                  other: tuple[bytes, str] | None = None) -> dict:
    """name -> (call, what it is fed: "real" or a fixed length, whether the call returns raw step times)."""
    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.length_buckets import BucketedBackend, checked_buckets

    def one():
        return open_backend(data, source, "litert", threads, True)

    settings = {"app_real": (one().run, "real", False), "raw_real": (RawCalls(one()), "real", True)}
    for n in grid:
        backend = one()
        settings[f"fixed_{n}"] = (backend.run, n, False)
        settings[f"raw_{n}"] = (RawCalls(backend), n, True)   # same interpreter: never reshapes either
    if buckets:
        settings["buckets_real"] = (BucketedBackend(one, checked_buckets(True, max(grid))).run, "real", False)
    if other is not None:   # --compare: another file of the same model (e.g. the batch-one graph)
        settings["other_real"] = (open_backend(other[0], other[1], "litert", threads, True).run, "real", False)
        settings["other_full"] = (open_backend(other[0], other[1], "litert", threads, True).run, max(grid), False)
    return settings


def measure(settings: dict, real: list[dict], fixed: dict[int, dict], rounds: int, calls: int) -> dict:
    """setting -> measure -> one list of values per round.

    Each round gives every setting, in an order that rotates round by round, one burst: an
    unrecorded call (it refills the caches another interpreter's burst evicted: an app calling one
    interpreter keeps them warm) and then ``calls`` recorded calls. Every call records its wall time
    ("run", ms) and the process CPU time it took ("cpu", ms): on a machine other jobs keep busy,
    wall time includes waiting for a CPU and CPU time does not (at 1 thread it is the call's work;
    at 2 it adds the worker thread's spin-wait). Raw settings record their steps' wall times instead
    of "run"; real-length settings add "length".
    """
    times: dict[str, dict[str, list[list[float]]]] = {name: {} for name in settings}
    for call, fed, _ in settings.values():   # warm-up: first allocations, every bucket built, every shape seen
        for f in (real if fed == "real" else [fixed[fed]] * 3):
            call(f)
    names = list(settings)
    positions = {name: 0 for name in names}
    wall, cpu = time.perf_counter, time.process_time

    def next_feed(name: str, fed) -> dict:
        if fed != "real":
            return fixed[fed]
        positions[name] += 1
        return real[(positions[name] - 1) % len(real)]

    for r in range(rounds):
        print(f"round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for name in names[r % len(names):] + names[: r % len(names)]:
            call, fed, raw = settings[name]
            rows = times[name]
            for key in (*(RAW_STEPS + RAW_CPU_STEPS if raw else ("run",)), "cpu",
                        *(("length",) if fed == "real" else ())):
                rows.setdefault(key, []).append([])
            call(next_feed(name, fed))
            for _ in range(calls):
                f = next_feed(name, fed)
                c0, w0 = cpu(), wall()
                got = call(f)
                w1, c1 = wall(), cpu()
                rows["cpu"][r].append((c1 - c0) * 1e3)
                if fed == "real":
                    rows["length"][r].append(float(f["input_ids"].shape[1]))
                if raw:
                    for step, value in got.items():
                        rows[step][r].append(value)
                else:
                    rows["run"][r].append((w1 - w0) * 1e3)
    return times


def fit_curve(grid: list[int], medians: list[float]) -> dict:
    """t(n) = a + b n + c n^2 by least squares on the fixed-shape medians."""
    import numpy as np

    c, b, a = np.polyfit(np.asarray(grid, float), np.asarray(medians, float), 2)
    predicted = np.polyval([c, b, a], np.asarray(grid, float))
    worst = float(np.max(np.abs(predicted - medians) / np.asarray(medians)))
    return {"a_ms": float(a), "b_ms_per_token": float(b), "c_ms_per_token2": float(c),
            "max_relative_residual": worst}


def pooled_ratio(top_rounds: list[list[float]], bottom_rounds: list[list[float]], how=None,
                 resamples: int = 2000, seed: int = 0) -> dict:
    """``how`` (default median) of all calls of one side over the other's, rounds resampled in pairs.

    A round's 8 real-length calls are 8 draws from the length distribution, so a per-round ratio
    varies with the lengths drawn as much as with the machine; pooling every call first estimates the
    distribution's median, and resampling whole rounds (both sides together) keeps the pairing.
    """
    import numpy as np

    how = how or np.median
    top = [np.asarray(v, float) for v in top_rounds]
    bottom = [np.asarray(v, float) for v in bottom_rounds]
    ratio = float(how(np.concatenate(top)) / how(np.concatenate(bottom)))
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        pick = rng.integers(0, len(top), len(top))
        draws.append(how(np.concatenate([top[i] for i in pick])) / how(np.concatenate([bottom[i] for i in pick])))
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"ratio": ratio, "low": float(low), "high": float(high), "rounds": len(top)}


def _at(curve: dict, n: float) -> float:
    return curve["a_ms"] + curve["b_ms_per_token"] * n + curve["c_ms_per_token2"] * n * n


def analyse_clock(times: dict, grid: list[int], real_lengths: list[int], longest: int, clock: str) -> dict:
    """Ratios, the fixed-shape curve, the new-shape cost and the floors, on one clock ("run": wall, "cpu")."""
    import numpy as np

    from albert_edge.bench_latency.stats import paired_ratio

    def per_round(name: str, how=statistics.median) -> list[float]:
        rows = times[name][clock] if clock in times[name] else [
            [sum(v) for v in zip(*(times[name][s][r] for s in RAW_STEPS))] for r in range(len(times[name]["invoke"]))]
        return [how(values) for values in rows]

    full, full_mean = per_round(f"fixed_{longest}"), per_round(f"fixed_{longest}", statistics.fmean)
    ratios = {}
    for name in [n for n in times if n.endswith("_real") and not n.startswith("other")]:
        ratios[f"{name} (median call)"] = paired_ratio(per_round(name), full).to_dict()
        ratios[f"{name} (mean call)"] = paired_ratio(per_round(name, statistics.fmean), full_mean).to_dict()
    for n in grid:
        ratios[f"fixed_{n}"] = paired_ratio(per_round(f"fixed_{n}"), full).to_dict()
    medians = {n: statistics.median(per_round(f"fixed_{n}")) for n in grid}
    curve = fit_curve(grid, [medians[n] for n in grid])
    # What a new shape costs: each real-length call minus the fixed-shape curve at its length.
    extra = [value - _at(curve, n) for r, values in enumerate(times["app_real"][clock])
             for value, n in zip(values, times["app_real"]["length"][r])]
    lengths = np.asarray(real_lengths, float)
    stable = np.asarray([_at(curve, n) for n in lengths])
    t_full = _at(curve, longest)
    pooled = {}
    for name in [n for n in times if n.endswith("_real") and clock in times[n]]:
        den = times["other_full" if name.startswith("other") else f"fixed_{longest}"][clock]
        pooled[f"{name} (median call)"] = pooled_ratio(times[name][clock], den)
        pooled[f"{name} (mean call)"] = pooled_ratio(times[name][clock], den, np.mean)
    if "other_real" in times:
        other_full = per_round("other_full")
        ratios["other_real vs other_full (median call)"] = paired_ratio(per_round("other_real"), other_full).to_dict()
        ratios["other_real vs other_full (mean call)"] = paired_ratio(
            per_round("other_real", statistics.fmean), per_round("other_full", statistics.fmean)).to_dict()
        ratios["other_real vs app_real (median call)"] = paired_ratio(per_round("other_real"),
                                                                      per_round("app_real")).to_dict()
        ratios["other_full vs fixed_full"] = paired_ratio(other_full, full).to_dict()
    return {
        "ratios_vs_full": ratios, "pooled_ratios": pooled,
        "fixed_ms": medians, "fit": curve, "one_token_call_ms": medians[grid[0]],
        "new_shape_extra_ms_median": statistics.median(extra),
        "app_real_ms": {"median": statistics.median(per_round("app_real")),
                        "mean": statistics.median(per_round("app_real", statistics.fmean))},
        "floors": {"stable_shape_median": float(np.median(stable) / t_full),
                   "stable_shape_mean": float(stable.mean() / t_full), "fixed_share_of_full": curve["a_ms"] / t_full},
    }


def analyse(times: dict, grid: list[int], real_lengths: list[int], longest: int) -> dict:
    """Both clocks, the raw steps (wall) and the arithmetic floors."""
    import numpy as np

    def step_medians(name: str) -> dict:
        return {s: statistics.median(statistics.median(v) for v in times[name][s]) for s in RAW_STEPS + RAW_CPU_STEPS}

    raw_fixed = {n: step_medians(f"raw_{n}") for n in grid}
    lengths = np.asarray(real_lengths, float)
    invoke_curve = fit_curve(grid, [raw_fixed[n]["invoke_cpu"] for n in grid])
    rows = times["raw_real"]
    in_invoke = [value - _at(invoke_curve, n) for r, values in enumerate(rows["invoke_cpu"])
                 for value, n in zip(values, rows["length"][r])]
    return {
        # A new shape's CPU cost, split: resize_tensor_input x3 + allocate_tensors (re-preparing every
        # op and XNNPACK partition), and what the first invoke at the shape adds (ops re-prepared
        # after each dynamic tensor is resized) over the fixed interpreters' invoke at that length.
        "new_shape_cpu_ms": {"resize_alloc": statistics.median(v for r in rows["resize_alloc_cpu"] for v in r),
                             "in_invoke": statistics.median(in_invoke)},
        "wall": analyse_clock(times, grid, real_lengths, longest, "run"),
        "cpu": analyse_clock(times, grid, real_lengths, longest, "cpu"),
        "raw_steps_ms": {"real": step_medians("raw_real"), **{str(n): raw_fixed[n] for n in grid}},
        # Our wrapper (Backend.run: checks, contiguous copies, the lean call) over the bare wrapper calls.
        "wrapper_cpu_ms": {n: statistics.median(statistics.median(v) for v in times[f"fixed_{n}"]["cpu"])
                           - statistics.median(statistics.median(v) for v in times[f"raw_{n}"]["cpu"]) for n in grid},
        "floors": {"proportional_mean": float(lengths.mean() / longest),
                   "proportional_median": float(np.median(lengths) / longest)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", type=Path, help="a packed .tflite (default: the sample's int8, built)")
    parser.add_argument("--threads", default="2", help="comma list of thread counts (default 2)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=8, help="calls per setting per round")
    parser.add_argument("--grid", default=",".join(map(str, DEFAULT_GRID)), help="fixed lengths (must include 128)")
    parser.add_argument("--eval", type=Path, default=SAMPLE / "test.tsv", help="TSV whose token lengths are used")
    parser.add_argument("--no-buckets", action="store_true", help="leave out the length-bucket setting")
    parser.add_argument("--compare", type=Path, help="another .tflite of the same model timed in the same rounds "
                        "(other_real, other_full), e.g. the batch-one graph")
    args = parser.parse_args()

    from albert_edge.bench_latency.machine import describe_machine, load_average
    from albert_edge.bench_latency.runner import (
        describe_variants,
        length_summary,
        real_lengths,
        sample_batch_lengths,
    )
    from albert_edge.runtime.pack import read_pack

    started = time.time()
    model = args.model
    if model is None:
        from benchmarks.suites.real_length_tax import build

        out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "albert-edge" / "speed_goals"
        out.mkdir(parents=True, exist_ok=True)
        model = build(out)["int8_default"]
    grid = sorted({int(x) for x in args.grid.split(",") if x})
    pack = read_pack(model)
    longest = pack.max_seq_len
    if longest not in grid or len(grid) < 3:
        sys.exit(f"--grid {args.grid}: needs at least 3 lengths including the model's max_seq_len {longest}")
    population = real_lengths(describe_variants([model])[0], args.eval)
    lengths = sample_batch_lengths(population, 1, seed=0)
    grid = [n for n in grid if n <= longest]
    data = model.read_bytes()
    real, fixed = feeds(lengths, 100), dict(zip(grid, feeds(grid, 100, seed=1)))
    machine = describe_machine()
    result = {"benchmark": "real_length_floor",
              "command": " ".join(["python", "-m", "benchmarks.suites.real_length_floor", *sys.argv[1:]]),
              "model": model.name, "compare": args.compare.name if args.compare else None,
              "size_bytes": model.stat().st_size, "utc": time.strftime("%Y-%m-%d %H:%M"),
              "machine": {k: machine.get(k) for k in ("cpu_model", "physical_cores", "simd", "packages")},
              "load_average_start": load_average(), "rounds": args.rounds, "calls_per_round": args.calls,
              "lengths": {**length_summary(population), "mean": statistics.fmean(population),
                          "timed_mean": statistics.fmean(lengths), "timed_median": statistics.median(lengths)},
              "goal": "app_real (median call) <= 0.40 at 2 threads", "threads": {}}
    for n in [int(x) for x in args.threads.split(",") if x]:
        other = (args.compare.read_bytes(), str(args.compare)) if args.compare else None
        settings = open_settings(data, str(model), n, grid, not args.no_buckets, other)
        times = measure(settings, real, fixed, args.rounds, args.calls)
        result["threads"][str(n)] = analyse(times, grid, lengths, longest)
        del settings
    result["load_average_end"] = load_average()
    result["elapsed_s"] = round(time.time() - started, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
