"""Pool in the graph or in the runtime? Times both forms of one embedding model in LiteRT. Prints JSON.

Builds the checkpoint's feature-extraction TFLite twice with the same pooling and normalisation:
``pooling_in_graph=True`` (the graph's output is ``sentence_embedding`` [batch, H]) and ``False``
(the graph returns ``last_hidden_state`` [batch, seq, H] and TextEmbedder pools with numpy). Both
run through ``TextEmbedder.embed`` / ``embed_batch`` on the same texts, interleaved round by round
in alternating order, so the ratio (runtime / graph) is measured in one run on the same load.

    python -m benchmarks.records.embedding_pooling CHECKPOINT --texts tests/data/english_sentences.txt \\
        [--rounds 15] [--threads 2] [--variant fp32|dynamic_int8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from albert_edge.convert.assets import find_tokenizer_asset
from albert_edge.convert.pipeline import build_pack
from albert_edge.model import load_checkpoint
from albert_edge.quantize.tflite_quant import tflite_variant
from albert_edge.runtime import TextEmbedder
from albert_edge.runtime.pack import attach_tflite_pack
from albert_edge.tasks import FeatureExtraction, detect_task


def build(weights, checkpoint: str, task: FeatureExtraction, variant: str, max_seq_len: int) -> bytes:
    pack = build_pack(weights, find_tokenizer_asset(checkpoint, None, None), task, None, max_seq_len, variant)
    return attach_tflite_pack(tflite_variant(weights, variant, task=task), pack)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--texts", required=True)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variant", default="fp32", choices=("fp32", "dynamic_int8"))
    parser.add_argument("--max-seq-len", type=int, default=128)
    args = parser.parse_args()

    weights = load_checkpoint(args.checkpoint)
    found = detect_task(weights, args.checkpoint)
    pooling = found.pooling if isinstance(found, FeatureExtraction) and found.pooling != "none" else "mean"
    normalize = bool(getattr(found, "normalize", False))
    texts = [line.strip() for line in open(args.texts, encoding="utf-8") if line.strip()]
    forms = {name: TextEmbedder.from_bytes(
                 build(weights, args.checkpoint, FeatureExtraction(pooling, normalize, in_graph), args.variant,
                       args.max_seq_len), name, num_threads=args.threads)
             for name, in_graph in (("graph", True), ("runtime", False))}
    drift = float(np.max(np.abs(forms["graph"].embed_batch(texts) - forms["runtime"].embed_batch(texts))))
    single: dict[str, list[float]] = {name: [] for name in forms}
    batched: dict[str, list[float]] = {name: [] for name in forms}
    for form in forms.values():  # warm-up
        form.embed_batch(texts[:4])
    for r in range(args.rounds):
        order = list(forms) if r % 2 == 0 else list(reversed(forms))
        for name in order:
            start = time.perf_counter()
            for text in texts:
                forms[name].embed(text)
            single[name].append((time.perf_counter() - start) * 1e3 / len(texts))
            start = time.perf_counter()
            forms[name].embed_batch(texts, batch_size=16)
            batched[name].append((time.perf_counter() - start) * 1e3 / len(texts))
    med = {kind: {name: statistics.median(v) for name, v in times.items()}
           for kind, times in (("batch1_ms_per_text", single), ("batch16_ms_per_text", batched))}
    print(json.dumps({
        "checkpoint": args.checkpoint, "variant": args.variant, "pooling": pooling, "normalize": normalize,
        "texts": len(texts), "rounds": args.rounds, "threads": args.threads,
        "cpu": platform.processor() or platform.machine(), "load_average": os.getloadavg(),
        "median": med,
        "ratio_runtime_over_graph": {kind: m["runtime"] / m["graph"] for kind, m in med.items()},
        "max_abs_embedding_difference": drift,
    }, indent=1))


if __name__ == "__main__":
    main()
