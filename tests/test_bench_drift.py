"""Accuracy drift of each variant, checked against albert_edge.evaluate computing it independently."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from tests.support.bench_models import LABELS, VOCAB_SIZE, shared_models

from albert_edge.bench_latency.drift import measure_drift
from albert_edge.evaluate import evaluate


@functools.cache
def entries() -> list[dict]:
    models = shared_models()
    return measure_drift([("fp32", models["fp32"]), ("int8", models["int8"]), ("onnx", models["onnx"])],
                         "fp32", models["eval"], threads=1)


def test_baseline_agrees_with_itself_exactly():
    fp32 = entries()[0]
    assert fp32["agreement"] == 1.0 and fp32["max_abs_logit_diff"] == 0.0


def test_accuracy_and_drift_match_evaluate_run_on_its_own():
    models = shared_models()
    int8 = entries()[1]
    independent = evaluate(models["int8"], models["eval"], reference=models["fp32"], num_threads=1)
    assert int8["examples"] == independent.num_examples == 40
    assert int8["accuracy"] == pytest.approx(independent.accuracy)
    assert int8["agreement"] == pytest.approx(independent.drift.agreement)
    assert int8["max_abs_logit_diff"] == pytest.approx(independent.drift.max_abs_logit_delta)
    assert 0.0 < int8["max_abs_logit_diff"] < 0.2


def test_the_same_graph_on_another_runtime_drifts_only_by_rounding():
    onnx = entries()[2]
    assert onnx["agreement"] == 1.0 and onnx["max_abs_logit_diff"] < 1e-4


def test_reference_checkpoint_drift_matches_evaluate_against_the_numpy_reference(tmp_path):
    from albert_edge.model import (
        AlbertConfig,
        load_checkpoint,
        random_weights,
        write_hf_checkpoint,
    )

    config = AlbertConfig(vocab_size=VOCAB_SIZE, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    checkpoint = write_hf_checkpoint(random_weights(config, num_labels=len(LABELS), seed=3), tmp_path / "ref")
    models = shared_models()
    [entry] = measure_drift([("fp32", models["fp32"])], "fp32", models["eval"], reference=checkpoint, threads=1)
    independent = evaluate(models["fp32"], models["eval"], reference=load_checkpoint(checkpoint), num_threads=1)
    assert entry["reference"]["max_abs_logit_diff"] == pytest.approx(independent.drift.max_abs_logit_delta)
    assert entry["reference"]["agreement"] == pytest.approx(independent.drift.agreement)
    assert np.isfinite(entry["reference"]["mean_abs_logit_diff"])
