"""Is ONNX Runtime's fused transformer form (Attention / SkipLayerNormalization / FastGelu) worth keeping?

Takes a packed fp32 ``.onnx`` written by ``albert-edge convert``, fuses it with
``onnxruntime.transformers.optimizer.optimize_model`` (opt_level 0: the fusions only, and no torch
import), restores one copy of the shared QKV weight, checks the logits agree, and times both forms
interleaved in one process. Prints JSON. Run by hand; never a timed test.

    python benchmarks/onnx_fusion.py demo_out/models/model_fp32.onnx --threads 2 --seq-len 128
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np


def _session(data: bytes, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    # Spinning workers would steal the other form's time slice in an interleaved run.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="fp32 .onnx written by albert-edge convert")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--num-heads", type=int, default=12, help="attention heads (ALBERT-Tiny: 12)")
    parser.add_argument("--hidden-size", type=int, default=312, help="hidden size (ALBERT-Tiny: 312)")
    args = parser.parse_args()

    import onnx
    from onnxruntime.transformers.optimizer import optimize_model

    from albert_edge.convert.onnx_export import deduplicate_initializers

    standard = onnx.load(args.model)
    optimized = optimize_model(args.model, model_type="bert", num_heads=args.num_heads,
                               hidden_size=args.hidden_size, opt_level=0)
    fused = optimized.model
    copies_removed = deduplicate_initializers(fused)
    forms = {"standard": standard.SerializeToString(), "fused": fused.SerializeToString()}
    sessions = {name: _session(data, args.threads) for name, data in forms.items()}

    rng = np.random.default_rng(0)
    vocab = next(i.dims[0] for i in standard.graph.initializer if len(i.dims) == 2)
    feed = {"input_ids": rng.integers(1, vocab, (1, args.seq_len)).astype(np.int32),
            "attention_mask": np.ones((1, args.seq_len), np.int32),
            "token_type_ids": np.zeros((1, args.seq_len), np.int32)}
    logits = {name: s.run(["logits"], feed)[0] for name, s in sessions.items()}
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(20):
        for s in sessions.values():
            s.run(["logits"], feed)
    for _ in range(args.runs):
        for name, s in sessions.items():
            started = time.perf_counter()
            s.run(["logits"], feed)
            times[name].append(time.perf_counter() - started)
    median = {name: 1e3 * float(np.median(t)) for name, t in times.items()}
    print(json.dumps({
        "model": args.model, "threads": args.threads, "seq_len": args.seq_len, "runs": args.runs,
        "ops_fused": dict(Counter(n.op_type for n in fused.graph.node).most_common()),
        "shared_weight_copies_removed": copies_removed,
        "size_bytes": {name: len(data) for name, data in forms.items()},
        "max_abs_logit_delta": float(np.max(np.abs(logits["standard"] - logits["fused"]))),
        "median_ms": median, "fused_over_standard": median["fused"] / median["standard"],
    }, indent=1))


if __name__ == "__main__":
    main()
