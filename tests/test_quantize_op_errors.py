"""The per-op error table and the hybrid float fallback, on a small random ALBERT (one shared layer, used twice)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("tensorflow")
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.quantize.tflite_quant import tflite_variant

    config = AlbertConfig(vocab_size=600, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=64)
    weights = random_weights(config, num_labels=2, seed=1)
    rng = np.random.default_rng(0)
    samples = [{"input_ids": rng.integers(5, 600, (1, n)).astype(np.int32), "attention_mask": np.ones((1, n), np.int32),
                "token_type_ids": np.zeros((1, n), np.int32)} for n in (7, 19, 33)]
    fp32 = tflite_variant(weights, "fp32")
    return weights, samples, fp32, tflite_variant(weights, "dynamic_int8")


def test_table_names_each_use_of_albert_shared_layer(tiny):
    from albert_edge.quantize.op_errors import error_table

    weights, samples, fp32, dyn = tiny
    table = error_table("dynamic_int8", dyn, fp32, samples, weights)
    fcs = {r.where for r in table.rows if r.op == "FULLY_CONNECTED" and r.quantized}
    for name in ("attention.query", "attention.key", "ffn.output"):
        assert {f"encoder.group0.inner0.{name}.kernel#1", f"encoder.group0.inner0.{name}.kernel#2"} <= fcs
    ranked = table.ranking()
    assert ranked and all(a.local_snr_db <= b.local_snr_db for a, b in zip(ranked, ranked[1:]))
    assert all(0.9 < r.local_cosine <= 1.0 + 1e-9 for r in ranked)


def test_fp32_against_itself_has_no_error(tiny):
    from albert_edge.quantize.op_errors import error_table

    weights, samples, fp32, _ = tiny
    table = error_table("fp32", fp32, fp32, samples, weights)
    assert all(r.max_abs == 0.0 for r in table.rows if r.max_abs is not None)
    assert not table.ranking()


def test_floating_one_use_of_a_shared_weight_keeps_the_other_hybrid(tiny):
    from albert_edge.quantize.float_fallback import float_fc_ops, hybrid_fc_outputs
    from albert_edge.quantize.measure import variant_logits

    _, samples, fp32, dyn = tiny
    hybrid = hybrid_fc_outputs(dyn)
    edited = float_fc_ops(dyn, fp32, hybrid[1:2])
    assert hybrid_fc_outputs(edited) == hybrid[:1] + hybrid[2:]
    all_float = float_fc_ops(dyn, fp32, hybrid)
    assert hybrid_fc_outputs(all_float) == []
    ref = variant_logits(fp32, samples)
    assert np.abs(variant_logits(all_float, samples) - ref).max() < np.abs(variant_logits(dyn, samples) - ref).max()


def test_floating_an_op_that_is_not_a_hybrid_fc_is_refused(tiny):
    from albert_edge.errors import QuantizationError
    from albert_edge.quantize.float_fallback import float_fc_ops

    _, _, fp32, dyn = tiny
    with pytest.raises(QuantizationError, match="no FULLY_CONNECTED produces nope"):
        float_fc_ops(dyn, fp32, ["nope"])
