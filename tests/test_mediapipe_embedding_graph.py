"""The ``sentence_embedding`` output a hidden-state .tflite gains for MediaPipe's TextEmbedder.

Pooling "none" and ``--pooling-in-runtime`` files return hidden states; MediaPipe reads every output
tensor as one embedding, so the exporter adds the pooled vector our TextEmbedder computes (mean for
"none"; the pack's CLS / mean / max and normalisation otherwise) as output 0, and gives the dynamic
outputs the static ``[1, max_seq_len, H]`` MediaPipe allocates. Judged here with LiteRT on padded
batches against numpy pooling of the same run's hidden states; tests/test_mediapipe_embedder.py runs
MediaPipe itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.tf1 import write_tf1_checkpoint
from albert_edge.runtime.backends import open_backend
from albert_edge.runtime.embedder import TextEmbedder
from albert_edge.runtime.pack import read_model_bytes, strip_tflite_pack
from albert_edge.runtime.tflite_metadata import read_standard_metadata
from albert_edge.tasks import FeatureExtraction
from albert_edge.tasks.feature_extraction import l2_normalize, pool

SMALL = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, embedding_order="project_then_add")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]
MAX_SEQ_LEN = 24

pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("small_fe")
    write_tf1_checkpoint(random_weights(SMALL, num_labels=2, seed=5), directory / "model.ckpt", scheme="brightmart")
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory / "model.ckpt"


def _export(checkpoint, tmp_path, task: FeatureExtraction) -> bytes:
    convert_checkpoint(checkpoint, tmp_path, ConvertOptions(formats="tflite", max_seq_len=MAX_SEQ_LEN, task=task))
    return read_model_bytes(tmp_path / "model_fp32.tflite")


def _padded_batch() -> dict[str, np.ndarray]:
    """Three texts of lengths 9, 4 and 14 padded to 14, with token types as a pair would have them."""
    rng = np.random.default_rng(0)
    lengths = [9, 4, 14]
    ids = np.zeros((3, 14), np.int32)
    mask = np.zeros((3, 14), np.int32)
    for row, n in enumerate(lengths):
        ids[row, :n] = [2, *rng.integers(5, 120, n - 2), 3]
        mask[row, :n] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("pooling,normalize,in_runtime", [("none", False, False), ("mean", False, True),
                                                            ("cls", True, True), ("max", True, True)])
def test_added_embedding_output_pools_like_the_runtime(checkpoint, tmp_path, pooling, normalize, in_runtime):
    data = _export(checkpoint, tmp_path, FeatureExtraction(pooling, normalize, pooling_in_graph=not in_runtime))
    batch = _padded_batch()
    out = open_backend(data, "test", num_threads=1).run(batch)
    expected = pool(out["last_hidden_state"], batch["attention_mask"], "mean" if pooling == "none" else pooling)
    expected = l2_normalize(expected) if normalize else expected
    assert out["sentence_embedding"].shape == (3, SMALL.hidden_size)
    np.testing.assert_allclose(out["sentence_embedding"], expected, atol=1e-5, rtol=1e-5)
    # Our TextEmbedder keeps pooling such packs itself and lands on the same vectors.
    embedder = TextEmbedder.from_bytes(data, num_threads=1)
    np.testing.assert_allclose(embedder.run_inputs(batch), expected, atol=1e-5, rtol=1e-5)


def test_embedding_is_output_0_and_hidden_states_have_mediapipes_static_shape(checkpoint, tmp_path):
    from ai_edge_litert import schema_py_generated as schema

    data = _export(checkpoint, tmp_path, FeatureExtraction("none"))
    flat = strip_tflite_pack(data)
    meta = read_standard_metadata(flat)
    assert meta.output_names[0] == meta.graph_outputs[0] == "sentence_embedding"
    assert set(meta.output_names) == {"sentence_embedding", "last_hidden_state", "pooled_output"}
    sg = schema.ModelT.InitFromObj(schema.Model.GetRootAs(flat, 0)).subgraphs[0]
    # A fully static tensor has no shape signature in the flatbuffer (the batch-one graph's [1, H] outputs).
    shapes = {name: (list(sg.tensors[i].shape), None if sg.tensors[i].shapeSignature is None
                     else list(sg.tensors[i].shapeSignature)) for name, i in zip(meta.graph_outputs, sg.outputs)}
    assert shapes["last_hidden_state"] == ([1, MAX_SEQ_LEN, 32], [1, -1, 32])
    assert shapes["sentence_embedding"][0] == [1, 32]


def test_a_graph_that_already_pools_gets_no_second_embedding(checkpoint, tmp_path):
    data = _export(checkpoint, tmp_path, FeatureExtraction("mean", True, pooling_in_graph=True))
    assert open_backend(data, "test", num_threads=1).output_names == ("sentence_embedding",)


def test_runtime_pooling_ignores_a_graph_embedding_it_did_not_ask_for():
    hidden = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    bogus = {"last_hidden_state": hidden, "sentence_embedding": np.full((2, 4), 99.0)}
    np.testing.assert_allclose(FeatureExtraction("max", pooling_in_graph=False).embeddings(bogus, mask),
                               pool(hidden, mask, "max"))
    assert FeatureExtraction("max", pooling_in_graph=True).embeddings(bogus, mask)[0, 0] == 99.0
