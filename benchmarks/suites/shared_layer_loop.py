"""ALBERT's shared layer unrolled vs. written once in a WHILE body: memory, time, answers. Prints JSON.

XNNPACK without a weight cache packs a constant matmul weight once per op that uses it, so the unrolled
graph packs ALBERT's one shared layer once per layer (record 0160). ``GraphOptions.shared_layer_loop``
writes the layer once, as a WHILE body subgraph; LiteRT applies XNNPACK to every subgraph, so each shared
weight is packed once. This suite builds the sample's fp32 and dynamic int8 files (quantize's
``dynamic_int8`` recipe: the converter's dynamic-range quantizer, then int8 lookup tables) in both shapes,
each with the pack of ``--packed`` (a ``convert`` output of the same checkpoint), and reports

* ``memory``: the bench worker's own columns per file (fresh process each, ``--rounds`` interleaved rounds,
  medians), at ``--seq-len``;
* ``latency``: both files in one fresh process per configuration, calls alternating, at 1 and 2 threads,
  each of ``--lengths`` and a mix of lengths changing every call: median ms each and the ratio loop / unrolled;
* ``answers``: every row of ``--eval`` through ``TextClassifier`` (real lengths, resized on every call):
  accuracy, label flips and the largest |delta probability| of the looped file against the unrolled one.

Usage: python -m benchmarks.suites.shared_layer_loop CKPT --packed model_fp32.tflite --eval dev.tsv --out DIR
       [--batch-one] [--rounds 3] [--lengths 32,128]
Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SHAPES = ("unrolled", "loop")


def build(checkpoint: str, packed: str, out: Path, batch_one: bool = False) -> dict[str, Path]:
    """{variant_shape: path} for fp32 and dynamic_int8, each shape, with ``packed``'s pack attached."""
    from albert_edge.convert.tf_graph import GraphOptions
    from albert_edge.convert.tflite_export import convert_to_tflite_bytes
    from albert_edge.convert.tflite_metadata import attach_standard_metadata
    from albert_edge.model.checkpoint import load_checkpoint
    from albert_edge.outputs.atomic import write_bytes_atomic
    from albert_edge.quantize.tflite_edit import int8_lookup_tables
    from albert_edge.runtime.pack import read_pack

    def dynamic(converter) -> None:
        import tensorflow as tf

        converter.optimizations = [tf.lite.Optimize.DEFAULT]

    weights, pack = load_checkpoint(checkpoint), read_pack(packed)
    paths = {}
    for shape in SHAPES:
        options = GraphOptions(shared_layer_loop=shape == "loop", batch_one=batch_one)
        fp32 = convert_to_tflite_bytes(weights, options=options)
        int8, _ = int8_lookup_tables(convert_to_tflite_bytes(weights, converter_hook=dynamic, options=options))
        for variant, data in (("fp32", fp32), ("dynamic_int8", int8)):
            paths[f"{variant}_{shape}"] = write_bytes_atomic(out / f"{variant}_{shape}.tflite",
                                                             attach_standard_metadata(data, pack))
    return paths


def worker(model: Path, threads: int, length: int, runs: int) -> dict:
    """One bench worker run (fresh process): its JSON line."""
    command = [sys.executable, "-m", "albert_edge.bench_latency.worker", "--model", str(model), "--backend",
               "litert", "--threads", str(threads), "--runs", str(runs), "--warmup", "5", "--seq-len", str(length)]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    return json.loads(lines[-1])


MEMORY_KEYS = ("part_file_mb", "part_interpreter_mb", "part_first_call_mb", "model_after_first_mb",
               "model_peak_mb", "part_library_code_mb", "model_own_after_first_mb", "packed_weight_uses",
               "weights_packed_per_use_mb", "weights_packed_once_mb")


def measure(paths: dict[str, Path], rounds: int, lengths: list[int], seq_len: int, calls: int) -> dict:
    """Memory per file (worker, fresh process each, rounds interleaved) and loop/unrolled time ratios."""
    memory: dict[str, list[dict]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name in paths:
            reading = worker(paths[name], 2, seq_len, 3)["memory"]
            memory[name].append({k: reading[k] for k in MEMORY_KEYS if k in reading})
    ratios = {}
    for variant in ("fp32", "dynamic_int8"):
        for threads in (1, 2):
            for mode in [*map(str, lengths), "mixed"]:
                command = [sys.executable, "-m", "benchmarks.suites.shared_layer_loop", "--pair",
                           str(paths[f"{variant}_unrolled"]), str(paths[f"{variant}_loop"]), "--threads", str(threads),
                           "--calls", str(calls), "--mode", mode]
                line = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()[-1]
                ratios[f"{variant} t{threads} {mode}"] = {**json.loads(line), "load": os.getloadavg()[0]}
    return {"memory": {name: {k: statistics.median(r[k] for r in rows) for k in rows[0]}
                       for name, rows in memory.items()},
            "latency_loop_over_unrolled": ratios}


#: Lengths cycled call by call in ``--mode mixed`` (every call resizes the graph, as real texts do).
MIXED_LENGTHS = (17, 40, 93, 128, 25, 61)


def paired(unrolled: str, loop: str, threads: int, calls: int, mode: str) -> dict:
    """Both files in this process, calls alternating (ABAB, then BABA): median ms each and the ratio loop/unrolled.

    Alternating call by call within one process pairs the two under the same load, which separate processes
    on a shared 2-core machine do not (their ratios spread 0.2-6.5 at load 8-10)."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    runners = [Interpreter(model_path=p, num_threads=threads).get_signature_runner() for p in (unrolled, loop)]
    rng = np.random.default_rng(0)
    widths = MIXED_LENGTHS if mode == "mixed" else (int(mode),)
    feeds = []
    for width in widths:
        ids = rng.integers(100, 20000, size=(1, width)).astype(np.int32)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    for runner in runners:
        for feed in feeds * 3:
            runner(**feed)
    times: list[list[float]] = [[], []]
    for i in range(calls):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            runners[k](**feeds[i % len(feeds)])
            times[k].append(time.perf_counter() - start)
    unrolled_ms, loop_ms = (statistics.median(t) * 1e3 for t in times)
    return {"unrolled_ms": unrolled_ms, "loop_ms": loop_ms, "ratio": loop_ms / unrolled_ms}


def answers(paths: dict[str, Path], eval_tsv: str) -> dict:
    """Accuracy of each file on ``eval_tsv``; flips and max |d prob| of loop against unrolled per variant."""
    from albert_edge.inputs.data import read_tsv
    from albert_edge.runtime.classifier import TextClassifier

    rows = read_tsv(eval_tsv)
    out = {}
    for variant in ("fp32", "dynamic_int8"):
        predictions = {}
        for shape in SHAPES:
            classifier = TextClassifier.from_file(paths[f"{variant}_{shape}"], num_threads=2)
            predictions[shape] = [classifier.predict(row.text_a, row.text_b) for row in rows]
        for shape in SHAPES:
            right = sum(p.label == row.label for p, row in zip(predictions[shape], rows))
            out[f"{variant}_{shape}_accuracy"] = right / len(rows)
        pairs = list(zip(predictions["loop"], predictions["unrolled"]))
        out[f"{variant}_flips"] = sum(a.label != b.label for a, b in pairs)
        out[f"{variant}_max_abs_dprob"] = max(abs(a.scores[k] - b.scores[k]) for a, b in pairs for k in a.scores)
    out["rows"] = len(rows)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", nargs="?")
    parser.add_argument("--packed", help="a convert output of the checkpoint (its pack is reused)")
    parser.add_argument("--eval", help="labelled TSV judged through TextClassifier")
    parser.add_argument("--out", help="folder for the four .tflite files")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seq-len", type=int, default=128, help="the memory columns' length")
    parser.add_argument("--lengths", default="32,128", help="comma-separated latency lengths")
    parser.add_argument("--batch-one", action="store_true", help="both shapes as GraphOptions(batch_one=True)")
    parser.add_argument("--pair", nargs=2, metavar=("UNROLLED", "LOOP"), help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=60, help="timed calls per file and configuration")
    parser.add_argument("--mode", default="128", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pair:   # one paired timing, in a fresh process of its own
        print(json.dumps(paired(*args.pair, args.threads, args.calls, args.mode)))
        return 0
    if not (args.checkpoint and args.packed and args.eval and args.out):
        parser.error("CHECKPOINT, --packed, --eval and --out are required")
    os.makedirs(args.out, exist_ok=True)
    paths = build(args.checkpoint, args.packed, Path(args.out), args.batch_one)
    load = os.getloadavg()
    report = {"files_mb": {name: path.stat().st_size / 2**20 for name, path in paths.items()},
              "answers": answers(paths, args.eval),
              **measure(paths, args.rounds, [int(n) for n in args.lengths.split(",")], args.seq_len, args.calls),
              "load_before": load, "load_after": os.getloadavg()}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
