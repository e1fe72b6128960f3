"""Where a call of a .tflite encoder spends its time, op by op, by timing prefixes of its graph. Prints JSON.

LiteRT 2.3's Python API has no op profiler (the Interpreter takes no profiler, CompiledModel exposes
none, and ``litert-benchmark`` is a Python wrapper without per-op timing), so the profile is measured
from outside: for each cut point k the graph is truncated after op k (ops after it dropped, op k's
output made the signature's output) and run whole. The time an op adds is T(k) - T(k-1), medians
over interleaved rounds: every truncated interpreter of every model is timed in every round, in a
rotating order, so a neighbour's burst hits them alike. XNNPACK partitions a truncated graph the same
way up to the cut, so its ops are the full graph's ops.

The cuts cover one encoder layer (op by op: the layers of an unrolled ALBERT are the same ops on the
same shared weights), the embeddings before it (one cut) and the whole graph; the report scales the
layer by the layer count, so it names where a call's time goes:
``embeddings`` + ``layers`` x per-op-type costs of one layer + ``rest`` (the other layers' spread and
the head) = the whole call. With two files (e.g. fp32 and dynamic int8 of one model) the per-type
ratio says which ops int8 speeds up and which it leaves at fp32 cost (dynamic-range int8 quantizes
FULLY_CONNECTED weights only: attention's BATCH_MATMULs, LayerNorm, GELU, softmax stay fp32).

On a loaded machine the wall-clock differences of small ops drown in noise (a 2-core run at load 15
gave negative costs); ``--clock cpu --threads 1`` times each call by the calling thread's CPU time,
which is all of the work at one thread and barely moves with the neighbours.

Usage: python -m benchmarks.suites.op_profile MODEL.tflite [MODEL2.tflite ...] [--seq-len 128]
       [--threads 2] [--rounds 15] [--calls 5] [--clock wall|cpu] [--layer FIRST:LAST]
``--layer``: op indices of one layer (default: from the second FULLY_CONNECTED, the first after an
embedding projection, to the op before the eighth). Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SIGNATURE = "serving_default"


def op_names(model) -> list[str]:
    """Builtin op name of every op of subgraph 0."""
    from ai_edge_litert import schema_py_generated as schema

    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    codes = model.operatorCodes
    return [names.get(max(codes[op.opcodeIndex].builtinCode, codes[op.opcodeIndex].deprecatedBuiltinCode), "?")
            for op in model.subgraphs[0].operators]


def default_layer(names: list[str]) -> tuple[int, int]:
    """(first, last) op index of the first encoder layer: six FULLY_CONNECTED ops (q, k, v, out, up, down)."""
    fcs = [i for i, n in enumerate(names) if n == "FULLY_CONNECTED"]
    # An ALBERT graph starts with the embedding projection (one FC before the first layer); BERT does not.
    start = 1 if (len(fcs) - 3) % 6 == 0 else 0
    if len(fcs) < start + 7:
        raise SystemExit("cannot find one encoder layer (fewer than 7 FULLY_CONNECTED ops); pass --layer FIRST:LAST")
    return fcs[start] - 0, fcs[start + 6] - 1


def layer_count(names: list[str]) -> int:
    fcs = names.count("FULLY_CONNECTED")
    return (fcs - 3) // 6 if (fcs - 3) % 6 == 0 else (fcs - 2) // 6


def truncated(path: Path, cut: int | None, out_dir: Path) -> Path:
    """The model with every op after ``cut`` dropped and op ``cut``'s first output as the only output."""
    from ai_edge_litert.tools import flatbuffer_utils as fu

    if cut is None:
        return path
    model = fu.read_model(str(path))
    graph = model.subgraphs[0]
    graph.operators = graph.operators[: cut + 1]
    tensor = int(graph.operators[cut].outputs[0])
    graph.outputs = [tensor]
    for signature in model.signatureDefs or []:
        signature.outputs = signature.outputs[:1]
        signature.outputs[0].tensorIndex = tensor
    target = out_dir / f"{path.stem}_cut{cut}.tflite"
    fu.write_model(model, str(target))
    return target


class Timed:
    """One interpreter of one (truncated) file, fed one fixed input."""

    def __init__(self, path: Path, threads: int, seq_len: int, clock=time.perf_counter) -> None:
        import numpy as np
        from ai_edge_litert.interpreter import Interpreter

        self.interpreter = Interpreter(model_path=str(path), num_threads=threads)
        self.interpreter.allocate_tensors()
        self.runner = self.interpreter.get_signature_runner(SIGNATURE)
        ids = (np.arange(seq_len, dtype=np.int32) % 97 + 1).reshape(1, seq_len)
        self.feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        self.runner(**self.feeds)   # resize and prepare at this length: later calls only run
        self.medians: list[float] = []
        self.clock = clock

    def burst(self, calls: int) -> None:
        samples = []
        clock = self.clock
        for _ in range(calls):
            start = clock()
            self.runner(**self.feeds)
            samples.append((clock() - start) * 1e3)
        self.medians.append(statistics.median(samples))


def profile(paths: list[Path], args: argparse.Namespace) -> dict:
    """Time every cut of every model in interleaved rounds; return per-op and per-type costs."""
    from ai_edge_litert.tools import flatbuffer_utils as fu

    work = Path(tempfile.mkdtemp(prefix="albert-edge-op-profile-"))
    setups = {}
    for path in paths:
        names = op_names(fu.read_model(str(path)))
        first, last = tuple(int(x) for x in args.layer.split(":")) if args.layer else default_layer(names)
        cuts: list[int | None] = [first - 1, *range(first, last + 1), None]
        clock = time.thread_time if args.clock == "cpu" else time.perf_counter
        timed = {cut: Timed(truncated(path, cut, work), args.threads, args.seq_len, clock) for cut in cuts}
        setups[str(path)] = (names, first, last, timed)
    everyone = [t for _, _, _, timed in setups.values() for t in timed.values()]
    load_start = os.getloadavg()
    for round_index in range(args.rounds):
        shift = round_index % len(everyone)
        for timed_one in everyone[shift:] + everyone[:shift]:
            timed_one.burst(args.calls)
    return {"load_average_start": load_start, "load_average_end": os.getloadavg(),
            "models": {p: summarize(*setup) for p, setup in setups.items()}}


def summarize(names: list[str], first: int, last: int, timed: dict) -> dict:
    """Per-op costs of the layer (T(k) - T(k-1) of round medians' medians), grouped by op type."""
    median = {cut: statistics.median(t.medians) for cut, t in timed.items()}
    ops = [{"index": k, "op": names[k], "ms": median[k] - median[k - 1]} for k in range(first, last + 1)]
    by_type: dict[str, float] = {}
    for op in ops:
        by_type[op["op"]] = by_type.get(op["op"], 0.0) + op["ms"]
    layers = layer_count(names)
    layer_ms = median[last] - median[first - 1]
    whole = median[None]
    return {"whole_ms": whole, "embeddings_ms": median[first - 1], "layer_ms": layer_ms, "layers": layers,
            "rest_ms": whole - median[first - 1] - layers * layer_ms, "layer_ops": ops,
            "layer_by_type_ms": dict(sorted(by_type.items(), key=lambda kv: -kv[1])),
            "share_of_whole_by_type": {k: layers * v / whole for k, v in by_type.items()},
            "rounds": len(next(iter(timed.values())).medians)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the calling thread's CPU time, which a loaded machine barely moves; "
                             "with --threads 1 it is all of the kernels' work")
    parser.add_argument("--layer", default="", help="FIRST:LAST op indices of one encoder layer")
    args = parser.parse_args(argv)
    result = profile(args.models, args)
    result["command"] = "python -m benchmarks.suites.op_profile " + " ".join(sys.argv[1:] if argv is None else argv)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
