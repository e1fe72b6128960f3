"""convert and quantize write the default batch-one graph ([1, seq], constant reshapes), calibrated int8_fc included.

TensorFlow's calibrator resizes the inputs one at a time and allocates after each, so calibration texts of
different lengths broke the batch-one graph's allocation until the samples were padded to one length
(record 0291). int8_full and int16x8 keep the dynamic-batch graph.
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from albert_edge.convert.census import census_tflite
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.quantize.calibration import CalibrationSet
from albert_edge.quantize.census import census_tflite_variant
from albert_edge.quantize.tflite_quant import tflite_variant, variant_graph

CONFIG = AlbertConfig(vocab_size=300, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                      num_attention_heads=4, intermediate_size=128, max_position_embeddings=64)


def _inputs(rng: np.random.Generator, seq: int) -> dict[str, np.ndarray]:
    return {"input_ids": rng.integers(1, CONFIG.vocab_size, (1, seq)).astype(np.int32),
            "attention_mask": np.ones((1, seq), np.int32), "token_type_ids": np.zeros((1, seq), np.int32)}


def _logits(model: bytes, feed: dict[str, np.ndarray]) -> np.ndarray:
    return Interpreter(model_content=model, num_threads=1).get_signature_runner("serving_default")(**feed)["logits"]


def test_int8_fc_is_calibrated_on_texts_of_many_lengths_into_a_batch_one_graph():
    weights = random_weights(CONFIG, num_labels=2, seed=5)
    rng = np.random.default_rng(0)
    calibration = CalibrationSet(tuple(_inputs(rng, int(n)) for n in rng.integers(8, 33, 24)), "<generated>")
    fp32 = tflite_variant(weights, "fp32")
    int8_fc = tflite_variant(weights, "int8_fc", calibration, float_model=fp32)
    for model in (fp32, int8_fc):
        ops = census_tflite(model)
        assert ops.get("CUMSUM") == 1 and not any(ops.get(op) for op in ("SHAPE", "PACK", "STRIDED_SLICE")), ops
    for seq in (5, 20, 40):
        feed = _inputs(np.random.default_rng(seq), seq)
        assert np.max(np.abs(_logits(int8_fc, feed) - _logits(fp32, feed))) < 0.05


def test_int8_fc_keeps_denylisted_ops_float_through_the_debuggers_route_on_the_batch_one_graph():
    """The accuracy search's route for int8_fc (QuantizationDebugger with denylisted ops or nodes) converts the
    batch-one graph too, from the padded calibration texts, and keeps what it is told in float."""
    weights = random_weights(CONFIG, num_labels=2, seed=5)
    rng = np.random.default_rng(1)
    calibration = CalibrationSet(tuple(_inputs(rng, int(n)) for n in rng.integers(8, 33, 12)), "<generated>")
    fp32 = tflite_variant(weights, "fp32")
    plain = census_tflite_variant(tflite_variant(weights, "int8_fc", calibration, float_model=fp32)).ops
    kept = tflite_variant(weights, "int8_fc", calibration, float_model=fp32, denylisted_ops=["FULLY_CONNECTED"])
    ops = census_tflite_variant(kept).ops
    assert ops.get("CUMSUM:i32") == 1 and not any(k.startswith("SHAPE") for k in ops), ops
    assert ops.get("FULLY_CONNECTED:f32", 0) > plain.get("FULLY_CONNECTED:f32", 0), (ops, plain)
    feed = _inputs(np.random.default_rng(3), 20)
    assert np.max(np.abs(_logits(kept, feed) - _logits(fp32, feed))) < 0.05


def test_only_int8_full_and_int16x8_convert_the_dynamic_batch_graph():
    assert not variant_graph("int8_full").batch_one and not variant_graph("int16x8").batch_one
    assert all(variant_graph(v).batch_one for v in ("fp32", "fp16", "dynamic_int8", "dynamic_int8_col", "int8_fc"))


def test_convert_writes_batch_one_unless_dynamic_batch_is_asked_and_refuses_both(capsys):
    import pytest

    from albert_edge.cli import build_parser

    parser = build_parser()
    parse = lambda *flags: parser.parse_args(["convert", "ckpt", "--out", "o", *flags])   # noqa: E731
    assert parse().batch_one and parse("--batch-one").batch_one and not parse("--dynamic-batch").batch_one
    with pytest.raises(SystemExit) as exit_info:
        parse("--batch-one", "--dynamic-batch")
    assert exit_info.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_a_batch_one_calibration_runs_the_longest_texts_padded_as_many_as_hold_the_real_tokens():
    """Padding every text to the longest doubled int8_fc's conversion on the sample (record 0295): the padded set
    keeps the real tokens' worth of samples, longest first, in the set's order, all at one width."""
    rng = np.random.default_rng(2)
    lengths = [10, 40, 12, 40, 8, 20]   # 130 real tokens: ceil(130 / 40) = 4 padded samples of 40
    calibration = CalibrationSet(tuple(_inputs(rng, n) for n in lengths), "<generated>")
    assert calibration.padded_indices() == (40, [1, 2, 3, 5])
    padded = calibration.padded_samples()
    assert [s["input_ids"].shape for s in padded] == [(1, 40)] * 4
    assert np.array_equal(padded[1]["input_ids"][:, :12], calibration.samples[2]["input_ids"])
    assert not padded[1]["attention_mask"][:, 12:].any() and padded[1]["attention_mask"][:, :12].all()
    assert [s["input_ids"].shape for s in calibration.padded_dataset()] == [(1, 40)] * 4
    # The debugger's error tables take the same samples, as lists in the converter's input order.
    order = ["token_type_ids", "input_ids", "attention_mask"]
    listed = list(calibration.ordered_dataset(order)())
    assert len(listed) == 4 and all(np.array_equal(a, p[n]) for got, p in zip(listed, padded) for a, n in zip(got, order))
    assert CalibrationSet((), "<none>").padded_indices() == (0, [])
