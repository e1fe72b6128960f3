"""The runtime tests' tiny models (tests/support/runtime_models.py) are what they claim: the contract's
signature, and every backend computing the numpy formula."""

from __future__ import annotations

import numpy as np

from tests.support.runtime_models import numpy_logits, onnx_bytes, tflite_bytes, weights


def test_fixture_tflite_has_the_contract_signature(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    flat = tflite_bytes(weights())
    runner = Interpreter(model_content=flat).get_signature_runner("serving_default")
    assert set(runner.get_input_details()) == {"input_ids", "attention_mask", "token_type_ids"}
    assert set(runner.get_output_details()) == {"logits"}


def test_fixture_models_compute_the_numpy_formula(tmp_path):
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter

    wts = weights()
    ids = np.array([[2, 7, 8, 3, 0], [2, 9, 3, 0, 0]], np.int32)
    mask = (ids != 0).astype(np.int32)
    types = np.zeros_like(ids)
    want = numpy_logits(wts, ids, mask, types)
    runner = Interpreter(model_content=tflite_bytes(wts)).get_signature_runner("serving_default")
    got_tfl = runner(input_ids=ids, attention_mask=mask, token_type_ids=types)["logits"]
    sess = ort.InferenceSession(onnx_bytes(wts), providers=["CPUExecutionProvider"])
    got_ort = sess.run(["logits"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    np.testing.assert_allclose(got_tfl, want, atol=1e-5)
    np.testing.assert_allclose(got_ort, want, atol=1e-5)
