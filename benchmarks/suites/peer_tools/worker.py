"""Time or evaluate one model file in a fresh process; print one JSON line. Standalone on purpose.

``benchmarks/suites/peers.py`` runs this file with the Python of whichever environment holds the runtime:
albert-edge's venv for ``.tflite`` (LiteRT) and ``.onnx`` (ONNX Runtime), the ExecuTorch peer venv for
``.pte``. It therefore imports only numpy and the one runtime (never albert_edge, which the peer
venvs do not have), and feeds each file the dtype and shape its own inputs declare, so foreign files
(Optimum's int64 [1, 128] TFLite inputs, ExecuTorch's torch tensors) run unchanged.

Same protocol as ``albert_edge.bench_latency.worker``: a first inference, ``--warmup`` untimed runs,
then each timed run is inputs set + invoke + outputs read. Inputs are real tokenized texts from
``--inputs`` (an .npz written by peers.py: ``ids``/``mask``/``types`` padded to 128 and ``lengths``):
at ``--seq-len 128`` each text padded to 128, at ``--seq-len real`` each text at its own length
(only for files whose inputs accept that length). ``--mode eval`` runs every text once and writes
the logits to ``--logits-out`` (.npy) instead of timing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

import numpy as np

Runner = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
INPUT_ORDER = ("input_ids", "attention_mask", "token_type_ids")


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def input_roles(names: list[str]) -> dict[str, str]:
    """Signature input name -> the input it takes: by name, or by position for litert-torch's ``args_0..args_2``."""
    roles = {}
    for name in names:
        if name in INPUT_ORDER:
            roles[name] = name
        elif name.startswith("args_") and name[5:].isdigit() and int(name[5:]) < len(INPUT_ORDER):
            roles[name] = INPUT_ORDER[int(name[5:])]
        else:
            raise ValueError(f"input {name!r}: expected one of {', '.join(INPUT_ORDER)} or args_0..args_2")
    return roles


def open_tflite(path: str, threads: int) -> tuple[Runner, str, bool]:
    """LiteRT with its default XNNPACK delegate; inputs bound by signature name, cast to their dtype."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=threads)
    signatures = interpreter.get_signature_list()
    key = "serving_default" if "serving_default" in signatures else next(iter(signatures))
    runner = interpreter.get_signature_runner(key)
    details = runner.get_input_details()
    dtypes = {name: details[name]["dtype"] for name in details}
    roles = input_roles(list(dtypes))
    outputs = list(runner.get_output_details())
    logits_name = "logits" if "logits" in outputs else outputs[0]

    def run(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feeds = dict(zip(INPUT_ORDER, (ids, mask, types)))
        result = runner(**{name: feeds[roles[name]].astype(dtypes[name]) for name in dtypes})
        return np.asarray(result[logits_name])

    # The declared shape does not say it: albert-edge declares [1, 128] (what MediaPipe reads) over
    # dynamic ops, Optimum's [1, 128] graph has 128 baked into its reshapes. A short input decides.
    try:
        probe = np.ones((1, 16), dtype=np.int64)
        static = run(probe, probe, np.zeros_like(probe)).shape[0] != 1
    except (RuntimeError, ValueError):
        static = True
    return run, f"ai-edge-litert {_version('ai-edge-litert')}", static


def open_onnx(path: str, threads: int) -> tuple[Runner, str, bool]:
    """ONNX Runtime CPU, ``threads`` intra-op threads, one inter-op thread, default graph optimisation."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    inputs = {i.name: (np.int64 if i.type == "tensor(int64)" else np.int32) for i in session.get_inputs()}
    static = all(isinstance(d, int) for i in session.get_inputs() for d in i.shape)
    out_names = [o.name for o in session.get_outputs()]
    logits_name = "logits" if "logits" in out_names else out_names[0]

    def run(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feeds = dict(zip(INPUT_ORDER, (ids, mask, types)))
        return session.run([logits_name], {n: feeds[n].astype(t) for n, t in inputs.items()})[0]

    return run, f"onnxruntime {ort.__version__}", static


def open_pte(path: str, threads: int) -> tuple[Runner, str, bool]:
    """ExecuTorch's Python runtime (XNNPACK delegate inside the .pte), its threadpool set to ``threads``.

    The .pte records whether its sequence dimension is dynamic in a sidecar ``.json`` written by the
    builder (``dynamic_seq``); the program itself is not asked.
    """
    import torch
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    if hasattr(portable_lib, "_unsafe_reset_threadpool"):
        portable_lib._unsafe_reset_threadpool(threads)
    torch.set_num_threads(threads)
    program = Runtime.get().load_program(path)
    method = program.load_method("forward")
    sidecar = os.path.splitext(path)[0] + ".json"
    dynamic = False
    if os.path.exists(sidecar):
        with open(sidecar, encoding="utf-8") as handle:
            dynamic = bool(json.load(handle).get("dynamic_seq"))

    def run(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        out = method.execute([torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)) for a in (ids, mask, types)])
        return out[0].numpy()

    return run, f"executorch {_version('executorch')}", not dynamic


OPENERS = {".tflite": open_tflite, ".onnx": open_onnx, ".pte": open_pte}
# Imported before the clock starts: init is the model load, not Python importing the runtime.
RUNTIME_MODULES = {".tflite": ("ai_edge_litert.interpreter",), ".onnx": ("onnxruntime",),
                   ".pte": ("torch", "executorch.runtime", "executorch.extension.pybindings.portable_lib")}


def text_inputs(data: dict[str, np.ndarray], index: int, seq_len: int | str) -> tuple[np.ndarray, ...]:
    """Text ``index`` as [1, L] arrays: L = its own length (``real``) or 128 (padded)."""
    length = int(data["lengths"][index]) if seq_len == "real" else int(seq_len)
    return tuple(np.ascontiguousarray(data[key][index:index + 1, :length]) for key in ("ids", "mask", "types"))


def measure(args: argparse.Namespace) -> dict:
    """Open, warm up and time (``--mode time``) or evaluate (``--mode eval``) one file."""
    opener = OPENERS.get(os.path.splitext(args.model)[1])
    if opener is None:
        raise ValueError(f"{args.model}: unknown model suffix (expected {', '.join(OPENERS)})")
    data = dict(np.load(args.inputs))
    import importlib

    for module in RUNTIME_MODULES[os.path.splitext(args.model)[1]]:
        importlib.import_module(module)
    start = time.perf_counter()
    run, runtime, static = opener(args.model, args.threads)
    init_ms = (time.perf_counter() - start) * 1e3
    seq_len: int | str = "real" if args.seq_len == "real" else int(args.seq_len)
    if seq_len == "real" and static:
        raise ValueError(f"{args.model}: static input shape, cannot run texts at their real lengths")
    count = len(data["lengths"])
    if args.mode == "eval":
        logits = np.concatenate([run(*text_inputs(data, i, seq_len)) for i in range(count)], axis=0)
        np.save(args.logits_out, logits.astype(np.float32))
        return {"ok": True, "model": args.model, "runtime": runtime, "static_shape": static,
                "examples": int(count), "init_ms": init_ms}
    pool = [text_inputs(data, i % count, seq_len) for i in range(min(args.pool, count))]
    start = time.perf_counter()
    run(*pool[0])
    first_ms = (time.perf_counter() - start) * 1e3
    for i in range(args.warmup):
        run(*pool[(i + 1) % len(pool)])
    samples = []
    for i in range(args.runs):
        feeds = pool[i % len(pool)]
        start = time.perf_counter()
        run(*feeds)
        samples.append((time.perf_counter() - start) * 1e3)
    lengths = [int(p[0].shape[1]) for p in pool]
    return {"ok": True, "model": args.model, "runtime": runtime, "static_shape": static, "threads": args.threads,
            "seq_len": seq_len, "init_ms": init_ms, "first_inference_ms": first_ms, "samples_ms": samples,
            "lengths": lengths, "pid": os.getpid()}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Time or evaluate one .tflite/.onnx/.pte file; print one JSON line.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--inputs", required=True, help=".npz of tokenized texts written by benchmarks/suites/peers.py")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", default="128", help="128 (padded) or real")
    parser.add_argument("--mode", choices=("time", "eval"), default="time")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--pool", type=int, default=256, help="distinct texts cycled through the timed runs")
    parser.add_argument("--logits-out", default="")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = measure(args)
    except Exception as exc:  # noqa: BLE001 - one JSON line whatever a foreign runtime raises
        print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}), flush=True)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
