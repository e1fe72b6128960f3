"""benchmarks/suites/shared_layer_loop.py's paired timing on a tiny ALBERT: both shapes run, at fixed and mixed lengths."""

from __future__ import annotations

import pytest

from albert_edge.convert import GraphOptions, convert_to_tflite_bytes
from albert_edge.model import AlbertConfig, random_weights
from benchmarks.suites.shared_layer_loop import MIXED_LENGTHS, paired

TINY = {"vocab_size": 20000, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 3,
        "num_attention_heads": 4, "intermediate_size": 48, "max_position_embeddings": 160}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    weights = random_weights(AlbertConfig(**TINY), num_labels=2, seed=3)
    folder = tmp_path_factory.mktemp("shared_layer_loop")
    out = {}
    for shape in ("unrolled", "loop"):
        out[shape] = folder / f"{shape}.tflite"
        out[shape].write_bytes(convert_to_tflite_bytes(weights, options=GraphOptions(shared_layer_loop=shape == "loop")))
    return out


@pytest.mark.parametrize("mode", ["16", "mixed"])
def test_paired_timing_runs_both_shapes_call_by_call(files, mode):
    result = paired(str(files["unrolled"]), str(files["loop"]), 1, 6, mode)
    assert result["unrolled_ms"] > 0 and result["loop_ms"] > 0
    assert result["ratio"] == pytest.approx(result["loop_ms"] / result["unrolled_ms"])
    assert max(MIXED_LENGTHS) <= TINY["max_position_embeddings"]
