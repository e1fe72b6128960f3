"""The bench tests' tiny models (tests/support/bench_models.py) run on every backend and agree."""

from __future__ import annotations

import numpy as np

from tests.support.bench_models import shared_models


def test_tiny_models_run_on_their_backends_and_agree():
    from albert_edge.runtime import TextClassifier

    paths = shared_models()
    texts = ["good great hotel", "bad awful room", "the staff was very friendly"]
    logits = [TextClassifier.from_file(paths[k], num_threads=1).logits_batch(texts)[0] for k in ("fp32", "int8", "onnx")]
    np.testing.assert_allclose(logits[0], logits[2], atol=1e-4)
    assert not np.array_equal(logits[0], logits[1])   # int8 really is a different model
    np.testing.assert_allclose(logits[0], logits[1], atol=0.2)
