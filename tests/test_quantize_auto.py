"""The accuracy-aware choice, on measured results written down by hand (no conversion)."""

from __future__ import annotations

from albert_edge.quantize.auto import Budget, agreement_lower_bound, budget_failures, choose, fallback_steps
from albert_edge.quantize.measure import Drift, drift
from albert_edge.quantize.pipeline import VariantResult

import numpy as np


def _result(name, ratio, drop, agreement, size=4_000_000, error=None):
    d = Drift(100_000, agreement, 0.1, 0.01, 0.9, drop)
    return VariantResult(name, "tflite", size_bytes=size, ratio_vs_fp32=ratio, drift=d, error=error)


def test_fastest_variant_within_budget_wins_over_faster_ones_that_drift_too_much():
    results = [_result("fp32", 1.0, 0.0, 1.0), _result("int8_full", 0.2, 3.0, 0.9),
               _result("int8_fc", 0.3, 0.2, 0.995), _result("dynamic_int8", 0.35, 0.1, 0.999)]
    chosen, log = choose(results, Budget(max_drop=0.5, min_agreement=0.99))
    assert chosen.name == "int8_fc"
    assert any("int8_full" in line and "rejected" in line for line in log)


def test_fp32_is_never_chosen_even_when_nothing_else_fits():
    results = [_result("fp32", 1.0, 0.0, 1.0), _result("int8_fc", 0.3, 2.0, 0.95)]
    chosen, _ = choose(results, Budget(0.5, 0.99))
    assert chosen is None


def test_unrunnable_variant_is_reported_not_chosen():
    bad = _result("int16x8", None, 0.0, 1.0, error="SquaredDifference int16 unsupported")
    chosen, log = choose([_result("fp32", 1.0, 0, 1.0), bad], Budget())
    assert chosen is None and any("not runnable" in line for line in log)


def test_size_limit_rejects_a_variant_that_fits_accuracy():
    big = _result("int8_fc_fb4", 0.3, 0.0, 1.0, size=7_000_000)
    assert budget_failures(big, Budget(0.5, 0.99, max_size_bytes=4_500_000)) == ["size 7.00 MB > 4.50 MB"]


def test_fallback_steps_double_and_end_with_everything_float():
    assert fallback_steps(23, 4) == [1, 2, 4, 8]
    assert fallback_steps(5, 10) == [1, 2, 4, 5]
    assert fallback_steps(0, 4) == []


def test_unlabelled_drift_bounds_accuracy_drop_by_disagreement():
    ref = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    got = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    d = drift(got, ref)
    assert d.agreement == 0.75 and d.accuracy is None and d.accuracy_drop == 25.0


def test_labelled_drift_reports_accuracy_points_lost():
    ref = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    got = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    d = drift(got, ref, labels=np.array([0, 1, 0, 1]))
    assert d.accuracy == 0.75 and d.accuracy_drop == 25.0 and d.max_abs_logit == 1.0


def test_dynamic_int8_stores_the_position_table_as_int8_and_keeps_logits_close():
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.quantize.census import tflite_op_dtypes
    from albert_edge.quantize.measure import variant_logits
    from albert_edge.quantize.tflite_quant import tflite_variant

    config = AlbertConfig(vocab_size=600, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=512)
    weights = random_weights(config, num_labels=2, seed=1)
    fp32, dyn = tflite_variant(weights, "fp32"), tflite_variant(weights, "dynamic_int8")
    ops = tflite_op_dtypes(dyn)
    assert ops.get("DEQUANTIZE:i8", 0) >= 2  # word table (converter) + position table (our edit)
    rng = np.random.default_rng(0)
    samples = [{"input_ids": rng.integers(5, 600, (1, 40)).astype(np.int32),
                "attention_mask": np.ones((1, 40), np.int32), "token_type_ids": np.zeros((1, 40), np.int32)}]
    ref, got = variant_logits(fp32, samples), variant_logits(dyn, samples)
    assert np.abs(ref - got).max() < 0.1 * np.abs(ref).max() + 0.05


def test_agreement_measured_on_few_examples_must_clear_its_lower_confidence_bound():
    few = VariantResult("int8_fc", "tflite", size_bytes=1, ratio_vs_fp32=0.2, drift=Drift(200, 1.0, 0.1, 0.01, 0.8, 0.0))
    many = VariantResult("int8_fc", "tflite", size_bytes=1, ratio_vs_fp32=0.2, drift=Drift(2000, 0.998, 0.1, 0.01, 0.8, 0.0))
    assert budget_failures(few, Budget(0.5, 0.99)) and "lower bound" in budget_failures(few, Budget(0.5, 0.99))[0]
    assert budget_failures(many, Budget(0.5, 0.99)) == []
    assert agreement_lower_bound(0.5, 100, 0.5) == 0.5
