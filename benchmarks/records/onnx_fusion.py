"""Is ONNX Runtime's fused transformer form (Attention / SkipLayerNormalization / FastGelu) worth keeping, fp32 or int8?

Takes a packed fp32 ``.onnx`` written by ``albert-edge convert`` and builds, from that one file:

* ``standard`` (the file itself) and ``standard_dyn_int8`` (``albert_edge.quantize.onnx_quant``, MatMul+Gather);
* ``fused``: ``onnxruntime.transformers.optimizer.optimize_model`` (opt_level 0: the Python fusions only,
  and no torch import), one copy of the shared QKV weight restored (``deduplicate_initializers``), the
  com.microsoft opset declared and ORT's symbolic shapes filled in (quantize_dynamic needs the types of
  the contrib ops' outputs); ``fused_dyn_int8``: quantize_dynamic of it with MatMul, Attention (-> QAttention)
  and Gather;
* ``fused_embed`` / ``fused_embed_dyn_int8``: the same after ``onnx_embed_rewrite.embed_layer_norm_form``,
  so EmbedLayerNormalization fuses too (-> QEmbedLayerNormalization in int8; bigger word table, see there);
* with ``--calib``: ``standard_qdq_int8`` and ``fused_qdq_int8`` (quantize_static, QDQ, MatMul only: ORT's
  QDQ quantizer has no Attention rule, so the fused QKV projection stays float).

The fused forms use the raw 2-D attention mask (``--mask-index`` switches to ORT's default 1-D mask
index, which is only right for right-padded batches). For every form it reports the size, the op
census (file and after ORT's own session-level fusions), how many [H, 3H] QKV weights the file holds,
|logit| deltas against ``standard`` and ``standard_dyn_int8`` (full-length and right-padded inputs),
with ``--eval TSV`` accuracy and label agreement, and the latency of all forms timed interleaved in one
process (order reversed every other round; ``--repeats`` blocks, each with its own medians). Prints JSON.
Run by hand; never a timed test.

    python -m benchmarks.records.onnx_fusion demo_out/models/model_fp32.onnx --threads 2 --seq-len 128 \\
        --eval examples/albert_tiny_zh_sentiment/test.tsv --calib examples/albert_tiny_zh_sentiment/calib.txt
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

FUSED_INT8_OPS = ("MatMul", "Attention", "Gather", "EmbedLayerNormalization")


def _session(data: bytes, threads: int, optimized_path: str | None = None):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    # Spinning workers would steal the other form's time slice in an interleaved run.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if optimized_path:
        options.optimized_model_filepath = optimized_path
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def fused_form(standard: Any, num_heads: int, hidden_size: int, embed: bool, mask_index: bool) -> tuple[Any, dict]:
    """(fused ModelProto, fusion counts) of a copy of ``standard``; metadata_props kept."""
    import onnx
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    from albert_edge.convert.onnx_export import deduplicate_initializers

    model = onnx.ModelProto()
    model.CopyFrom(standard)
    if embed:
        from benchmarks.records.onnx_embed_rewrite import embed_layer_norm_form

        embed_layer_norm_form(model)
    options = FusionOptions("bert")
    options.use_raw_attention_mask(not mask_index)
    optimized = optimize_model(model, model_type="bert", num_heads=num_heads, hidden_size=hidden_size,
                               opt_level=0, optimization_options=options)
    counts = {k: v for k, v in optimized.get_fused_operator_statistics().items() if v}
    fused = optimized.model
    counts["shared_weight_copies_removed"] = deduplicate_initializers(fused)
    if not any(op.domain == "com.microsoft" for op in fused.opset_import):
        fused.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    fused = SymbolicShapeInference.infer_shapes(fused, auto_merge=True)
    del fused.metadata_props[:]
    fused.metadata_props.extend(standard.metadata_props)
    return fused, counts


def _calibration(model_path: str, calib: str):
    from albert_edge.quantize.calibration import (
        encode_calibration,
        read_calibration_texts,
    )
    from albert_edge.runtime import TextClassifier

    clf = TextClassifier.from_file(model_path, num_threads=1, backend="onnxruntime")
    return encode_calibration(read_calibration_texts(calib), clf.preprocessor, calib)


def _census(data: bytes) -> dict[str, int]:
    import onnx

    return dict(Counter(n.op_type for n in onnx.load_from_string(data).graph.node).most_common())


def _qkv_copies(data: bytes, hidden: int) -> int:
    import onnx

    return sum(1 for i in onnx.load_from_string(data).graph.initializer if list(i.dims) == [hidden, 3 * hidden])


def _feeds(vocab: int, seq_len: int) -> tuple[dict, dict]:
    rng = np.random.default_rng(0)
    full = {"input_ids": rng.integers(1, vocab, (1, seq_len)).astype(np.int32),
            "attention_mask": np.ones((1, seq_len), np.int32),
            "token_type_ids": np.zeros((1, seq_len), np.int32)}
    padded = {"input_ids": rng.integers(1, vocab, (2, seq_len)).astype(np.int32),
              "attention_mask": np.ones((2, seq_len), np.int32),
              "token_type_ids": np.zeros((2, seq_len), np.int32)}
    padded["attention_mask"][1, seq_len // 3:] = 0
    return full, padded


def _accuracy(paths: dict[str, Path], tsv: str, threads: int) -> dict[str, dict]:
    """Accuracy and agreement/|dlogit| against standard and standard_dyn_int8 on a labelled TSV."""
    from albert_edge.evaluate import compare_logits, read_tsv
    from albert_edge.runtime import TextClassifier

    logits, truth = {}, None
    for name, path in paths.items():
        clf = TextClassifier.from_file(path, num_threads=threads, backend="onnxruntime")
        examples = read_tsv(tsv, list(clf.labels))
        truth = np.array([list(clf.labels).index(e.label) for e in examples])
        logits[name], _ = clf.logits_batch([e.text_a for e in examples], batch_size=32)
    result = {}
    for name, value in logits.items():
        entry: dict[str, Any] = {"examples": len(truth), "accuracy": float(np.mean(value.argmax(1) == truth))}
        for ref in ("standard", "standard_dyn_int8"):
            d = compare_logits(value, logits[ref])
            entry[f"vs_{ref}"] = {"agreement": d.agreement, "max_abs_logit_delta": d.max_abs_logit_delta,
                                  "mean_abs_logit_delta": d.mean_abs_logit_delta}
        result[name] = entry
    return result


def _time(sessions: dict[str, Any], feed: dict, runs: int, warmup: int = 20) -> dict[str, list[float]]:
    for _ in range(warmup):
        for s in sessions.values():
            s.run(["logits"], feed)
    names = list(sessions)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else names[::-1]:
            started = time.perf_counter()
            sessions[name].run(["logits"], feed)
            times[name].append(1e3 * (time.perf_counter() - started))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="fp32 .onnx written by albert-edge convert")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--runs", type=int, default=300, help="timed runs of each form per repeat")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved timing blocks, each with its own medians")
    parser.add_argument("--num-heads", type=int, default=12, help="attention heads (ALBERT-Tiny: 12)")
    parser.add_argument("--hidden-size", type=int, default=312, help="hidden size (ALBERT-Tiny: 312)")
    parser.add_argument("--mask-index", action="store_true", help="fuse with ORT's 1-D mask index (right padding only)")
    parser.add_argument("--no-embed", action="store_true", help="skip the EmbedLayerNormalization forms")
    parser.add_argument("--eval", help="labelled TSV: accuracy and label agreement of every form")
    parser.add_argument("--calib", help="calibration text: also build the static QDQ int8 forms")
    args = parser.parse_args()

    import onnx

    from albert_edge.quantize.onnx_quant import onnx_variant

    standard = onnx.load(args.model)
    forms: dict[str, bytes] = {"standard": standard.SerializeToString()}
    forms["standard_dyn_int8"] = onnx_variant(forms["standard"], "onnx_dynamic_int8")
    fusions = {}
    for name, embed in (("fused", False), ("fused_embed", True)):
        if embed and args.no_embed:
            continue
        model, fusions[name] = fused_form(standard, args.num_heads, args.hidden_size, embed, args.mask_index)
        forms[name] = model.SerializeToString()
        forms[name + "_dyn_int8"] = onnx_variant(forms[name], "onnx_dynamic_int8", op_types=FUSED_INT8_OPS)
    if args.calib:
        calibration = _calibration(args.model, args.calib)
        forms["standard_qdq_int8"] = onnx_variant(forms["standard"], "onnx_qdq_int8", calibration)
        forms["fused_qdq_int8"] = onnx_variant(forms["fused"], "onnx_qdq_int8", calibration, op_types=("MatMul",))

    vocab = next(i.dims[0] for i in standard.graph.initializer if i.name == "embeddings.word")
    full, padded = _feeds(vocab, args.seq_len)
    with tempfile.TemporaryDirectory(prefix="albert-edge-fusion-") as tmp:
        paths = {name: Path(tmp) / f"{name}.onnx" for name in forms}
        session_ops = {}
        for name, data in forms.items():
            paths[name].write_bytes(data)
            optimized = str(Path(tmp) / f"{name}.session.onnx")
            _session(data, 1, optimized)
            session_ops[name] = dict(Counter(n.op_type for n in onnx.load(optimized).graph.node).most_common())
        sessions = {name: _session(data, args.threads) for name, data in forms.items()}
        logits = {name: s.run(["logits"], full)[0] for name, s in sessions.items()}
        logits_padded = {name: s.run(["logits"], padded)[0] for name, s in sessions.items()}
        accuracy = _accuracy(paths, args.eval, args.threads) if args.eval else None
        blocks = [_time(sessions, full, args.runs) for _ in range(args.repeats)]

    def delta(ref: str) -> dict[str, dict[str, float]]:
        return {name: {"full_max": float(np.max(np.abs(logits[name] - logits[ref]))),
                       "full_mean": float(np.mean(np.abs(logits[name] - logits[ref]))),
                       "padded_max": float(np.max(np.abs(logits_padded[name] - logits_padded[ref])))}
                for name in forms}

    latency = []
    for times in blocks:
        median = {name: float(np.median(t)) for name, t in times.items()}
        latency.append({
            "median_ms": median,
            "p90_ms": {name: float(np.percentile(t, 90)) for name, t in times.items()},
            "over_standard": {name: m / median["standard"] for name, m in median.items()},
            "over_standard_dyn_int8": {name: m / median["standard_dyn_int8"] for name, m in median.items()},
        })
    print(json.dumps({
        "model": args.model, "threads": args.threads, "seq_len": args.seq_len, "runs": args.runs,
        "repeats": args.repeats, "mask": "mask_index" if args.mask_index else "raw_2d",
        "load_average": os.getloadavg(), "fusions": fusions,
        "size_mb": {name: len(data) / 1e6 for name, data in forms.items()},
        "qkv_weight_copies": {name: _qkv_copies(data, args.hidden_size) for name, data in forms.items()},
        "file_ops": {name: _census(data) for name, data in forms.items()},
        "session_ops": session_ops,
        "logit_delta_vs_standard": delta("standard"),
        "logit_delta_vs_standard_dyn_int8": delta("standard_dyn_int8"),
        "accuracy": accuracy, "latency": latency,
    }, indent=1))


if __name__ == "__main__":
    main()
