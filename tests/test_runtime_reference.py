"""A real (tiny, random) ALBERT through convert's exports: every backend agrees with the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from tests.support.runtime_models import VOCAB_LINES, make_pack

from albert_edge.runtime import TextClassifier
from albert_edge.runtime.backends import available_backends

TEXTS = ["这家酒店服务很好", "房间很差，太失望了", "环境不错推荐", "hello worlds", "我们非常满意"]


@pytest.fixture(scope="module")
def albert(tmp_path_factory):
    model = pytest.importorskip("albert_edge.model")
    convert = pytest.importorskip("albert_edge.convert")
    config = model.AlbertConfig(
        vocab_size=len(VOCAB_LINES), embedding_size=16, hidden_size=24, num_hidden_layers=3,
        num_attention_heads=4, intermediate_size=48, max_position_embeddings=64,
        embedding_order="project_then_add",
    )
    weights = model.random_weights(config, num_labels=2, seed=3)
    pack = make_pack(max_seq_len=24)
    out = tmp_path_factory.mktemp("albert")
    paths = {"tflite": out / "tiny.tflite", "onnx": out / "tiny.onnx"}
    paths["tflite"].write_bytes(convert.tflite_model_bytes(weights, pack))
    paths["onnx"].write_bytes(convert.onnx_model_bytes(weights, pack))
    return weights, paths


def _backends():
    here = available_backends()
    return [(kind, name) for kind, name in (("tflite", "litert"), ("tflite", "tf"), ("onnx", "onnxruntime")) if name in here]


@pytest.mark.parametrize("kind, backend", _backends())
def test_same_labels_and_logits_as_the_numpy_reference(albert, kind, backend):
    from albert_edge.model import reference_forward

    weights, paths = albert
    clf = TextClassifier.from_file(paths[kind], backend=backend, num_threads=1)
    preds = clf.predict_batch(TEXTS, batch_size=2)
    for text, pred in zip(TEXTS, preds):
        enc = clf.preprocessor.encode(text)
        ref = reference_forward(weights, np.array([enc.input_ids]), np.array([enc.attention_mask]), np.array([enc.token_type_ids]))
        ref_logits = ref.logits[0]
        assert pred.label == clf.labels[int(np.argmax(ref_logits))]
        np.testing.assert_allclose(pred.logits, ref_logits, atol=1e-4)


def test_real_length_and_padded_batches_give_the_same_logits(albert):
    # Masking must make padding invisible: this is what lets the runtime bucket freely.
    _, paths = albert
    clf = TextClassifier.from_file(paths["tflite"], num_threads=1)
    single = np.array([clf.predict(t).logits for t in TEXTS])
    batched = np.array([p.logits for p in clf.predict_batch(TEXTS, batch_size=len(TEXTS), bucket=False)])
    np.testing.assert_allclose(batched, single, atol=1e-4)
