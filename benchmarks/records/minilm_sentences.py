"""The real all-MiniLM-L6-v2 (registry wheel, tests/support/registry_cache.py) with the English test sentences
encoded as judge samples, and the two measurements the int8-embedding record scripts (onnx_int8_blocks.py,
tflite_int8_smoothing.py) take of every file: cosine to fp32 per sentence, and time as a ratio of fp32's."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

SENTENCES = Path(__file__).parents[2] / "tests" / "data" / "english_sentences.txt"


def record_args(description: str) -> argparse.Namespace:
    """``--rounds``, ``--seq-len`` and ``--threads``, as both record scripts take them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--seq-len", type=int, nargs="+", default=[128, 32])
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args()


def minilm_and_sentences(max_seq_len: int = 128) -> tuple[Any, Any, list[Any]]:
    """(weights, task, encoded samples of every non-empty line of tests/data/english_sentences.txt)."""
    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.model import load_checkpoint
    from albert_edge.quantize.calibration import encode_calibration
    from albert_edge.tasks import detect_task
    from albert_edge.tokenizer import Preprocessor, load_tokenizer
    from tests.support.registry_cache import unpacked_minilm

    folder = unpacked_minilm()
    weights = load_checkpoint(folder)
    task = detect_task(weights, folder)
    asset = find_tokenizer_asset(folder, None, None)
    tokenizer = load_tokenizer(asset.kind, asset.data, asset.do_lower_case, str(asset.path))
    texts = [line.strip() for line in SENTENCES.read_text(encoding="utf-8").splitlines() if line.strip()]
    encoded = encode_calibration(texts, Preprocessor(tokenizer, max_seq_len), str(SENTENCES), max_texts=len(texts))
    return weights, task, list(encoded.samples)


def embedding_cosines(files: dict[str, bytes], samples: list[Any], task: Any, threads: int) -> dict[str, dict]:
    """Each file's size and worst / mean cosine to ``files["fp32"]``'s embedding over ``samples``."""
    from albert_edge.quantize.measure import variant_values

    reference = variant_values(files["fp32"], samples, task, threads)
    reference = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    rows = {}
    for name, data in files.items():
        got = variant_values(data, samples, task, threads)
        cos = np.sum(got / np.linalg.norm(got, axis=1, keepdims=True) * reference, axis=1)
        rows[name] = {"mb": round(len(data) / 1e6, 2), "min_cosine": round(float(cos.min()), 5),
                      "mean_cosine": round(float(cos.mean()), 5)}
    return rows


def add_latency_ratios(rows: dict[str, dict], files: dict[str, bytes], seq_lens: list[int], vocab_size: int,
                       threads: int, rounds: int) -> None:
    """Time ``files`` interleaved at each length and add ``x_fp32_seqN`` (median / fp32's) and ``ms_seqN``."""
    from albert_edge.quantize.measure import interleaved_latency, latency_inputs

    for seq in seq_lens:
        latency = interleaved_latency(files, latency_inputs(seq, vocab_size), threads, rounds)
        base = latency["fp32"]["median_ms"]
        for name, row in latency.items():
            rows[name][f"x_fp32_seq{seq}"] = round(row["median_ms"] / base, 3)
            rows[name][f"ms_seq{seq}"] = round(row["median_ms"], 2)
