"""The real-length tax: latency at the test set's real lengths as a share of pad-to-128. Prints JSON.

Builds the trained sample (examples/albert_tiny_zh_sentiment) as fp32 and dynamic-range int8
TFLite (int8 as the quantize pipeline ships it: int8 weights and int8 lookup tables), each twice:
the dynamic-batch graph (``GraphOptions(batch_one=False)``, the default until record 0291: dynamic batch x
dynamic length; its reshapes take their shapes from
SHAPE/STRIDED_SLICE/PACK ops that XNNPACK does not take, so the graph splits into several delegate
partitions with builtin kernels between them) and ``GraphOptions(batch_one=True)`` (today's default: a
[1, seq] signature whose reshapes are constants with a single -1). The names keep "default" for the first.

Timing is interleaved call by call, in one process, through ``albert_edge.runtime.open_backend``
(the app's path; 2 threads, batch 1): for every model, each round alternates a call at the next
real length (256 lengths at evenly spaced quantiles of the tokenized test set, shuffled, so the
shape changes on every call as in an app) with a call padded to 128, and the models take turns
in a rotating order. A loaded machine then slows both sides of every ratio alike, which separate
processes seconds apart (``albert-edge bench``) cannot promise. Reported per file: real / 128
(the issue's goal: <= 0.40 for int8), batch_one / default at both, the XNNPACK partition census,
and the logits' agreement between the two graphs.

Usage: python -m benchmarks.suites.real_length_tax [--rounds 30] [--calls 16] [--threads 1,2] [--only int8]
Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "albert_tiny_zh_sentiment"


def build(out: Path) -> dict[str, Path]:
    """The four files, packed with the sample's tokenizer (real lengths come from it); reused if all exist."""
    names = [f"{p}_{g}" for g in ("default", "batch_one") for p in ("fp32", "int8")]
    if all((out / f"{n}.tflite").is_file() for n in names):
        return {n: out / f"{n}.tflite" for n in names}
    import tensorflow as tf

    from albert_edge.convert import GraphOptions, convert_to_tflite_bytes
    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.convert.pipeline import build_pack
    from albert_edge.model import load_checkpoint
    from albert_edge.quantize.tflite_edit import int8_lookup_tables
    from albert_edge.runtime.pack import attach_tflite_pack

    weights = load_checkpoint(SAMPLE)
    asset = find_tokenizer_asset(SAMPLE)
    labels = [x.strip() for x in (SAMPLE / "labels.txt").read_text(encoding="utf-8").splitlines() if x.strip()]

    def dynamic_int8(converter) -> None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]

    paths = {}
    for graph, options in (("default", GraphOptions(batch_one=False)), ("batch_one", GraphOptions(batch_one=True))):
        for precision, hook in (("fp32", None), ("int8", dynamic_int8)):
            name = f"{precision}_{graph}"
            data = convert_to_tflite_bytes(weights, options=options, converter_hook=hook)
            if hook is not None:
                data, _ = int8_lookup_tables(data)   # as the quantize pipeline ships dynamic_int8
            pack = build_pack(weights, asset, "sequence_classification", labels, 128, name)
            paths[name] = out / f"{name}.tflite"
            paths[name].write_bytes(attach_tflite_pack(data, pack))
    return paths


def census(path: Path, threads: int) -> dict:
    from albert_edge.quantize.census import census_tflite_variant

    c = census_tflite_variant(path.read_bytes(), threads)
    return {"xnnpack_partitions": c.partitions, "delegated_nodes": c.delegated_nodes, "nodes": c.total_nodes,
            "not_delegated": c.not_delegated}


def agreement(a: Path, b: Path, texts: list[str]) -> float:
    """Max |logit difference| between two files on the same texts, one text per call (batch 1)."""
    import numpy as np

    from albert_edge.runtime import TextClassifier

    ca, cb = TextClassifier.from_file(a, num_threads=1), TextClassifier.from_file(b, num_threads=1)
    return float(max(np.abs(ca.logits_batch([t])[0] - cb.logits_batch([t])[0]).max() for t in texts))


def timings(paths: dict[str, Path], lengths: list[int], threads: list[int], rounds: int, calls: int) -> dict:
    """(name, threads) -> {"real": [ms], "46": [ms], "128": [ms]}, interleaved call by call and model by model.

    "46" is the second of two calls with the set's median length (no shape change): real minus it
    estimates what a new shape costs per call.
    """
    import numpy as np

    from albert_edge.runtime.backends import open_backend

    models = {(name, n): open_backend(path.read_bytes(), str(path), "litert", n, True)
              for name, path in paths.items() for n in threads}
    rng = np.random.default_rng(0)

    def feed(length: int) -> dict:
        ids = rng.integers(1, 100, size=(1, length), dtype=np.int32)
        return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}

    real = [feed(n) for n in lengths]
    full, median = feed(128), feed(46)
    for model in models.values():   # warm-up: first allocations, delegate preparation
        for f in (full, *real[:8]):
            model.run(f)
    out = {key: {"real": [], "46": [], "128": []} for key in models}
    names = list(models)
    k = 0
    for r in range(rounds):
        print(f"round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        for name in names[r % len(names):] + names[: r % len(names)]:
            run = models[name].run
            for _ in range(calls):
                # The unrecorded 46 call takes the shape change, so the recorded one repeats a shape.
                for kind, f in (("real", real[k % len(real)]), (None, median), ("46", median), ("128", full)):
                    start = time.perf_counter()
                    run(f)
                    if kind:
                        out[name][kind].append((time.perf_counter() - start) * 1e3)
                k += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=16, help="real/128 call pairs per model per round")
    parser.add_argument("--threads", default="2", help="comma list of thread counts (default 2)")
    parser.add_argument("--out", type=Path, help="keep the four .tflite files here (reused if present)")
    parser.add_argument("--only", choices=("fp32", "int8"), help="time one precision only")
    args = parser.parse_args()

    import statistics

    from albert_edge.bench_latency.machine import describe_machine, load_average
    from albert_edge.bench_latency.runner import describe_variants, length_summary, real_lengths, sample_batch_lengths
    from albert_edge.inputs.data import read_tsv

    started = time.time()
    machine = describe_machine()
    out = args.out or Path(tempfile.mkdtemp(prefix="albert-edge-real-length-"))
    out.mkdir(parents=True, exist_ok=True)
    print("building 4 files (TensorFlow converter)...", file=sys.stderr, flush=True)
    paths = build(out)
    if args.only:
        paths = {k: v for k, v in paths.items() if k.startswith(args.only)}
    test = SAMPLE / "test.tsv"
    population = real_lengths(describe_variants([paths["int8_default"]])[0], test)
    lengths = sample_batch_lengths(population, 1, seed=0)
    thread_counts = [int(n) for n in args.threads.split(",") if n]
    times = timings(paths, lengths, thread_counts, args.rounds, args.calls)
    med = {(key, kind): statistics.median(v) for key, t in times.items() for kind, v in t.items()}
    texts = [ex.text_a for ex in read_tsv(test)[:40]]
    files = {}
    for name, path in paths.items():
        files[name] = {"size_bytes": path.stat().st_size, **census(path, thread_counts[-1])}
        for n in thread_counts:
            key = (name, n)
            files[name][f"threads_{n}"] = {
                "median_ms_128": med[(key, "128")], "median_ms_46": med[(key, "46")],
                "median_ms_real": med[(key, "real")], "ratio_real_vs_128": med[(key, "real")] / med[(key, "128")],
                "ratio_46_vs_128": med[(key, "46")] / med[(key, "128")],
                "new_shape_cost_ms": med[(key, "real")] - med[(key, "46")]}
    for precision in [args.only] if args.only else ["fp32", "int8"]:
        a, b = f"{precision}_default", f"{precision}_batch_one"
        for n in thread_counts:
            files[b][f"threads_{n}"]["ratio_vs_default_128"] = med[((b, n), "128")] / med[((a, n), "128")]
            files[b][f"threads_{n}"]["ratio_vs_default_real"] = med[((b, n), "real")] / med[((a, n), "real")]
        files[b]["max_abs_logit_diff_vs_default"] = agreement(paths[a], paths[b], texts)
    result = {"benchmark": "real_length_tax", "command": " ".join(["python", "-m", "benchmarks.suites.real_length_tax",
                                                                    *sys.argv[1:]]),
              "machine": machine, "load_average_end": load_average(), "threads": thread_counts, "batch": 1,
              "rounds": args.rounds, "calls_per_round": args.calls,
              "lengths": {**length_summary(population), "timed_median": statistics.median(lengths)},
              "goal": "int8 real/128 <= 0.40", "files": files, "elapsed_s": round(time.time() - started, 1)}
    print(json.dumps(result, indent=1))
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
