"""Cold start of a .tflite file: model load + first inference, each in a fresh process. Prints JSON.

What an app pays before its first answer, four ways, interleaved round by round so a neighbour's
burst hits every way alike:

* ``albert_edge``     -- ``albert_edge.runtime.open_backend`` (what the bench worker and the
                         TextClassifier run): read the file, validate the flatbuffer in Python,
                         strip the pack, build a LiteRT ``Interpreter``, apply XNNPACK.
* ``interpreter``     -- ai_edge_litert's ``Interpreter(model_path=...)`` alone (LiteRT mmaps the
                         file; no Python-side validation).
* ``compiled``        -- LiteRT 2.x ``CompiledModel.from_file`` (the newer API), no weight cache.
* ``compiled_cache``  -- the same with ``CpuOptions.xnnpack_weight_cache_path``: XNNPACK's packed
                         weights are written to that file by the first process and mmapped by
                         the next ones instead of being repacked. The Interpreter API of
                         ai-edge-litert 2.3 exposes no weight-cache option (its constructor takes
                         ``experimental_delegates``, ``experimental_default_delegate_latest_features``
                         and friends, none a cache path), so the cache is only reachable here.

Every child prints its logits too, so the JSON shows whether a faster way computes the same
numbers (the weight-cache path can route dynamic-range int8 through different XNNPACK kernels).

Usage: python -m benchmarks.suites.cold_start MODEL.tflite [--rounds 15] [--threads 2] [--seq-len 128]
Run by hand; never timed in CI.
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

MODES = ("albert_edge", "interpreter", "compiled", "compiled_cache")
SIGNATURE = "serving_default"
NAMES = ("input_ids", "attention_mask", "token_type_ids")


def _feeds(seq_len: int):
    import numpy as np

    ids = (np.arange(seq_len, dtype=np.int32) % 97 + 1).reshape(1, seq_len)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def child(mode: str, model: str, threads: int, seq_len: int, cache: str) -> dict:
    """One cold start in this (fresh) process; imports happen before the clock starts."""
    import numpy as np

    feeds = _feeds(seq_len)
    if mode == "albert_edge":
        from albert_edge.runtime.backends import open_backend

        import ai_edge_litert.interpreter  # noqa: F401 - imported before the clock, as in the worker

        start = time.perf_counter()
        with open(model, "rb") as handle:
            backend = open_backend(handle.read(), model, "litert", threads, True)
        loaded = time.perf_counter()
        logits = backend.run(feeds)["logits"]
    elif mode == "interpreter":
        from ai_edge_litert.interpreter import Interpreter

        start = time.perf_counter()
        interpreter = Interpreter(model_path=model, num_threads=threads)
        interpreter.allocate_tensors()
        runner = interpreter.get_signature_runner(SIGNATURE)
        loaded = time.perf_counter()
        logits = runner(**feeds)["logits"]
    else:
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.cpu_options import CpuOptions
        from ai_edge_litert.options import Options

        cpu = CpuOptions(num_threads=threads, xnnpack_weight_cache_path=cache if mode == "compiled_cache" else "")
        start = time.perf_counter()
        compiled = CompiledModel.from_file(model, options=Options(cpu_options=cpu))
        loaded = time.perf_counter()
        index = compiled.get_signature_index(SIGNATURE)
        inputs = compiled.get_signature_list()[SIGNATURE]["inputs"]
        for i, _ in enumerate(inputs):
            compiled.resize_input_tensor(i, [1, seq_len], index)
        in_buffers = compiled.create_input_buffers(index)
        out_buffers = compiled.create_output_buffers(index)
        for name, buffer in zip(inputs, in_buffers):
            buffer.write(feeds[name])
        compiled.run_by_index(index, in_buffers, out_buffers)
        logits = out_buffers[0].read(2, np.float32)
    done = time.perf_counter()
    return {"mode": mode, "load_ms": (loaded - start) * 1e3, "first_inference_ms": (done - loaded) * 1e3,
            "cold_start_ms": (done - start) * 1e3, "logits": [float(x) for x in np.ravel(logits)[:2]]}


def run_child(mode: str, model: str, threads: int, seq_len: int, cache: str) -> dict:
    argv = [sys.executable, __file__, "--child", mode, model, "--threads", str(threads), "--seq-len", str(seq_len),
            "--cache", cache]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{mode}: child failed ({(proc.stderr.strip().splitlines() or ['?'])[-1]})")
    return json.loads(lines[-1])


def summarize(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "min": ordered[0], "n": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--rounds", type=int, default=15, help="fresh processes per way (default 15)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.model, args.threads, args.seq_len, args.cache)), flush=True)
        return

    from albert_edge.bench_latency.machine import describe_machine

    modes = [m for m in args.modes.split(",") if m]
    started = time.time()
    machine = describe_machine()
    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / (Path(args.model).stem + ".xnnpack_cache"))
        warm = run_child("compiled_cache", args.model, args.threads, args.seq_len, cache) \
            if "compiled_cache" in modes else None   # writes the cache; timed separately
        cache_bytes = os.path.getsize(cache) if os.path.exists(cache) else 0
        raws: dict[str, list[dict]] = {m: [] for m in modes}
        for r in range(args.rounds):
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
            for mode in modes if r % 2 == 0 else list(reversed(modes)):
                raws[mode].append(run_child(mode, args.model, args.threads, args.seq_len, cache))
    reference = raws[modes[0]][0]["logits"]
    base = statistics.median(x["cold_start_ms"] for x in raws[modes[0]])
    result = {
        "benchmark": "cold_start", "model": args.model, "size_bytes": os.path.getsize(args.model),
        "threads": args.threads, "seq_len": args.seq_len, "processes_per_way": args.rounds,
        "command": " ".join(["python", "-m", "benchmarks.suites.cold_start", *sys.argv[1:]]),
        "machine": machine, "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "weight_cache": {"bytes": cache_bytes, "first_process_cold_start_ms": warm["cold_start_ms"] if warm else None},
        "ways": {m: {"load_ms": summarize([x["load_ms"] for x in raws[m]]),
                     "first_inference_ms": summarize([x["first_inference_ms"] for x in raws[m]]),
                     "cold_start_ms": summarize([x["cold_start_ms"] for x in raws[m]]),
                     "ratio_to_" + modes[0]: statistics.median(x["cold_start_ms"] for x in raws[m]) / base,
                     "logits": raws[m][0]["logits"],
                     "max_abs_logit_diff_vs_" + modes[0]: max(abs(a - b) for a, b in zip(raws[m][0]["logits"], reference))}
                 for m in modes},
        "elapsed_s": round(time.time() - started, 1),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
