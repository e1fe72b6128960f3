"""16x8 (int16 activations, int8 weights) must build and run in LiteRT.

LiteRT has no int16 SQUARED_DIFFERENCE kernel, and the converter fuses `square(x - mean)` into that
op; the LayerNorm variance is therefore written as `centred * centred`, which stays a MUL.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from albert_edge.convert.census import census_tflite
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.quantize.calibration import CalibrationSet
from albert_edge.quantize.tflite_quant import tflite_variant


def _inputs(rng: np.random.Generator, seq: int, vocab: int) -> dict[str, np.ndarray]:
    return {"input_ids": rng.integers(1, vocab, (1, seq)).astype(np.int32),
            "attention_mask": np.ones((1, seq), np.int32),
            "token_type_ids": np.zeros((1, seq), np.int32)}


def _logits(model: bytes, feed: dict[str, np.ndarray]) -> np.ndarray:
    runner = Interpreter(model_content=model, num_threads=1).get_signature_runner("serving_default")
    return runner(**feed)["logits"]


def test_int16x8_variant_has_no_squared_difference_and_tracks_fp32_logits() -> None:
    config = AlbertConfig(vocab_size=300, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=64)
    weights = random_weights(config, num_labels=2, seed=5)
    rng = np.random.default_rng(0)
    calibration = CalibrationSet(tuple(_inputs(rng, int(n), config.vocab_size) for n in rng.integers(8, 33, 24)),
                                 "<generated>")
    fp32 = tflite_variant(weights, "fp32")
    int16x8 = tflite_variant(weights, "int16x8", calibration)

    assert "SQUARED_DIFFERENCE" not in census_tflite(fp32)
    feed = _inputs(np.random.default_rng(1), 20, config.vocab_size)
    want, got = _logits(fp32, feed), _logits(int16x8, feed)
    # int16 activations keep ~4 significant digits; random-weight logits are O(1).
    assert np.max(np.abs(got - want)) < 5e-2
