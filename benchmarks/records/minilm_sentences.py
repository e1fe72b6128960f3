"""The real all-MiniLM-L6-v2 (registry wheel, tests/support/registry_cache.py) with the English test sentences
encoded as judge samples: what the int8-embedding record scripts (onnx_int8_blocks.py,
tflite_int8_smoothing.py) measure on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SENTENCES = Path(__file__).parents[2] / "tests" / "data" / "english_sentences.txt"


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
