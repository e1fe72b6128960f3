"""The SavedModel conversion route (the lower peak memory, record 0240) gives the same model answers as the
concrete-function route, for float and dynamic int8, and leaves no temporary folder behind."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from albert_edge.convert import census_tflite, convert_to_tflite_bytes
from albert_edge.model import AlbertConfig, random_weights

SMALL = {"vocab_size": 120, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 3,
         "num_attention_heads": 4, "intermediate_size": 48, "max_position_embeddings": 64}


def _dynamic_int8(converter) -> None:
    import tensorflow as tf

    converter.optimizations = [tf.lite.Optimize.DEFAULT]


def _answers(model: bytes) -> tuple[dict, list[dict[str, np.ndarray]]]:
    """(signature list, outputs for three inputs of different lengths) of ``model`` run by LiteRT."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_content=model)
    runner = interpreter.get_signature_runner()
    rng = np.random.default_rng(3)
    outputs = []
    for length in (5, 17, 40):
        ids = rng.integers(0, SMALL["vocab_size"], (1, length)).astype(np.int32)
        mask = np.ones_like(ids)
        mask[0, length - 2:] = 0
        outputs.append(runner(input_ids=ids, attention_mask=mask, token_type_ids=np.zeros_like(ids)))
    return interpreter.get_signature_list(), outputs


@pytest.mark.parametrize("hook", [None, _dynamic_int8], ids=["fp32", "dynamic_int8"])
def test_saved_model_route_answers_as_the_concrete_function_route(hook):
    weights = random_weights(AlbertConfig(**SMALL), num_labels=3, seed=5)
    via_saved = convert_to_tflite_bytes(weights, converter_hook=hook, via_saved_model=True)
    via_function = convert_to_tflite_bytes(weights, converter_hook=hook, via_saved_model=False)
    assert census_tflite(via_saved) == census_tflite(via_function)
    signatures, saved_out = _answers(via_saved)
    function_signatures, function_out = _answers(via_function)
    assert signatures == function_signatures
    for a, b in zip(saved_out, function_out, strict=True):
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])


def test_saved_model_route_removes_its_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    weights = random_weights(AlbertConfig(**SMALL), num_labels=2, seed=1)
    assert convert_to_tflite_bytes(weights)[4:8] == b"TFL3"
    assert list(tmp_path.iterdir()) == []
