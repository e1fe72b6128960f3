"""Embeddings end to end on a small BERT written as a sentence-transformers folder.

The checkpoint is random (narrow BERT shapes) and written in Hugging Face format with a real
``modules.json`` / ``1_Pooling/config.json``; convert, the runtime TextEmbedder, ``albert-edge embed``
and quantize are run on it like a user would. The judge is the float64 numpy reference's hidden
states pooled here with the sentence-transformers formulas, written out in this file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
from albert_edge.convert.source import ModelSource
from albert_edge.errors import ModelFileError
from albert_edge.model import AlbertConfig, random_weights, reference_forward
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.runtime import TextClassifier, TextEmbedder
from albert_edge.tasks import FeatureExtraction
from tests.support.st_folder import WORDS, vocab_words, write_st_folder

TEXTS = ["the cat sat on a mat", "a dog ran in the park", "the big red car", "a small blue house",
         "the old tree by the river", "the sun and the moon", "a new green book", "the dog read a book fast"]


def judge_embeddings(weights, embedder: TextEmbedder, texts, pooling: str, normalize: bool) -> np.ndarray:
    """sentence-transformers' pooling of the float64 numpy reference's hidden states, spelt out here."""
    out = []
    for text in texts:
        enc = embedder.preprocessor.encode(text)
        ids = np.asarray([enc.input_ids[: enc.length]])
        hidden = reference_forward(weights, ids).last_hidden_state[0]
        if pooling == "mean":
            vector = hidden.sum(axis=0) / hidden.shape[0]
        elif pooling == "max":
            vector = hidden.max(axis=0)
        else:
            vector = hidden[0]
        if normalize:
            vector = vector / max(np.linalg.norm(vector), 1e-12)
        out.append(vector)
    return np.asarray(out)


@pytest.fixture(scope="module")
def st_models(tmp_path_factory):
    """(checkpoint dir, weights, out dir) converted from a mean+normalize sentence-transformers folder."""
    ckpt, weights = write_st_folder(tmp_path_factory.mktemp("st"))
    out = tmp_path_factory.mktemp("st_out")
    report = convert_checkpoint(ckpt, out, ConvertOptions(max_seq_len=32))
    assert report.task == "feature_extraction"
    assert report.task_config == {"pooling": "mean", "normalize": True, "pooling_in_graph": True}
    return ckpt, weights, out


# Max |difference| of a float32 embedding (unit vector) from the float64 judge.
FP32_TOLERANCE = 1e-5


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_sentence_transformers_folder_converts_to_a_normalised_mean_pooled_embedder(st_models, fmt):
    _, weights, out = st_models
    embedder = TextEmbedder.from_file(out / f"model_fp32.{fmt}", num_threads=1)
    assert embedder.pack.outputs == ("sentence_embedding",) and embedder.normalized
    got = embedder.embed_batch(TEXTS, batch_size=3)
    want = judge_embeddings(weights, embedder, TEXTS, "mean", True)
    assert np.max(np.abs(got - want)) <= FP32_TOLERANCE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_inspect_reports_the_sentence_transformers_pooling(st_models, capsys):
    ckpt, _, _ = st_models
    assert main(["inspect", str(ckpt)]) == 0
    assert "task:        feature_extraction (pooling mean, normalize True, pooling_in_graph True)" in capsys.readouterr().out


def test_embed_single_equals_embed_batch_row_and_similarity_is_cosine(st_models):
    _, _, out = st_models
    embedder = TextEmbedder.from_file(out / "model_fp32.tflite", num_threads=1)
    batch = embedder.embed_batch(TEXTS)
    np.testing.assert_allclose(embedder.embed(TEXTS[2]), batch[2], atol=1e-6)
    assert embedder.similarity(TEXTS[0], TEXTS[0]) == pytest.approx(1.0, abs=1e-6)
    assert embedder.similarity(batch[0], batch[1]) == pytest.approx(float(batch[0] @ batch[1]), abs=1e-6)


@pytest.mark.parametrize("pooling,normalize", [("cls", False), ("max", True)])
def test_cls_and_max_pooling_in_the_graph_match_the_judge(tmp_path, pooling, normalize):
    (tmp_path / "ckpt").mkdir()
    ckpt, weights = write_st_folder(tmp_path / "ckpt", pooling, normalize)
    report = convert_checkpoint(ckpt, tmp_path / "out", ConvertOptions(formats="tflite,onnx", max_seq_len=16))
    assert report.task_config["pooling"] == pooling
    for fmt in ("tflite", "onnx"):
        embedder = TextEmbedder.from_file(tmp_path / "out" / f"model_fp32.{fmt}", num_threads=1)
        want = judge_embeddings(weights, embedder, TEXTS[:4], pooling, normalize)
        assert np.max(np.abs(embedder.embed_batch(TEXTS[:4]) - want)) <= FP32_TOLERANCE


def test_pooling_in_the_runtime_gives_the_graph_pooled_embeddings(st_models, tmp_path):
    ckpt, _, out = st_models
    task = FeatureExtraction("mean", normalize=True, pooling_in_graph=False)
    convert_checkpoint(ckpt, tmp_path, ConvertOptions(formats="tflite", max_seq_len=32, task=task))
    runtime = TextEmbedder.from_file(tmp_path / "model_fp32.tflite", num_threads=1)
    assert runtime.pack.outputs == ("last_hidden_state",)
    graph = TextEmbedder.from_file(out / "model_fp32.tflite", num_threads=1)
    np.testing.assert_allclose(runtime.embed_batch(TEXTS), graph.embed_batch(TEXTS), atol=1e-6)


def test_headless_checkpoint_without_pooling_keeps_hidden_states_and_is_mean_pooled_by_the_embedder(tmp_path):
    (tmp_path / "ckpt").mkdir()
    ckpt, weights = write_st_folder(tmp_path / "ckpt")
    (ckpt / "modules.json").unlink()
    report = convert_checkpoint(ckpt, tmp_path / "out", ConvertOptions(formats="tflite", max_seq_len=16))
    assert report.task_config == {}
    embedder = TextEmbedder.from_file(tmp_path / "out" / "model_fp32.tflite", num_threads=1)
    assert embedder.pack.outputs == ("last_hidden_state", "pooled_output") and not embedder.normalized
    want = judge_embeddings(weights, embedder, TEXTS[:3], "mean", False)
    assert np.max(np.abs(embedder.embed_batch(TEXTS[:3]) - want)) <= 1e-4


def test_classifier_refuses_an_embedding_model_and_embedder_refuses_a_classifier(st_models, tmp_path):
    _, _, out = st_models
    with pytest.raises(ModelFileError, match="TextClassifier needs a sequence_classification"):
        TextClassifier.from_file(out / "model_fp32.tflite")
    vocab = vocab_words()
    config = AlbertConfig(vocab_size=len(vocab), embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=16, max_position_embeddings=16)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    convert_checkpoint(ModelSource(tmp_path, random_weights(config, num_labels=2)), tmp_path / "clf",
                       ConvertOptions(formats="tflite"))
    with pytest.raises(ModelFileError, match="TextEmbedder needs a feature_extraction"):
        TextEmbedder.from_file(tmp_path / "clf" / "model_fp32.tflite")


def test_embed_cli_prints_json_vectors_and_nearest_neighbours(st_models, capsys):
    _, _, out = st_models
    assert main(["embed", str(out / "model_fp32.onnx"), TEXTS[0], TEXTS[1], "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == TEXTS[:2] and rows[0]["dimension"] == 32
    assert np.linalg.norm(rows[0]["embedding"]) == pytest.approx(1.0, abs=1e-5)
    assert main(["embed", str(out / "model_fp32.tflite"), *TEXTS[:3]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and "nearest" in lines[0] and "dim 32" in lines[0]
    # Options between the model and the texts, as predict takes them.
    assert main(["embed", str(out / "model_fp32.onnx"), "--json", TEXTS[0]]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == TEXTS[0]


def test_nearest_neighbours_in_blocks_equal_the_full_matrix() -> None:
    from albert_edge.runtime.neighbours import nearest_neighbours

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(257, 24)).astype(np.float32)
    vectors[5] = 0.0  # a zero vector: cosine 0 to everything, never NaN
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-30)
    full = unit @ unit.T
    np.fill_diagonal(full, -np.inf)
    for block_values in (257, 257 * 7, 1 << 22):  # one row, seven rows, everything at once
        index, cosine = nearest_neighbours(vectors, max_block_values=block_values)
        np.testing.assert_array_equal(index, np.argmax(full, axis=1))
        np.testing.assert_allclose(cosine, np.max(full, axis=1), atol=1e-6)
    assert nearest_neighbours(vectors[:1])[0].tolist() == [-1]


def test_embed_cli_on_a_missing_file_is_one_line_exit_2(tmp_path, capsys):
    assert main(["embed", str(tmp_path / "nope.tflite"), "hello"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.tflite" in err[0]


def test_quantize_judges_an_embedding_model_on_cosine(st_models, tmp_path):
    from albert_edge.quantize.pipeline import QuantizeOptions, quantize_checkpoint

    ckpt, _, _ = st_models
    calib = tmp_path / "calib.txt"
    rng = np.random.default_rng(0)
    calib.write_text("\n".join(" ".join(rng.choice(WORDS, size=rng.integers(3, 12))) for _ in range(40)) + "\n")
    options = QuantizeOptions(mode="dynamic", formats="tflite", max_seq_len=32, seq_len=32, rounds=3)
    report = quantize_checkpoint(ckpt, tmp_path / "q", calib, options, num_threads=1)  # an override on top
    # An embedding model's --mode dynamic TFLite variant is dynamic_int8_col_sq (decision 0200), built without texts.
    dynamic = next(v for v in report.variants if v.name == "dynamic_int8_col_sq")
    assert report.judge["task"] == "feature_extraction" and dynamic.drift.examples == 40  # dynamic: every text judges
    assert 0.9 < dynamic.drift.mean_cosine <= 1.0 + 1e-9 and dynamic.drift.min_cosine <= dynamic.drift.mean_cosine
    assert "cos mean" in report.table()
    embedder = TextEmbedder.from_file(tmp_path / "q" / "variants" / "dynamic_int8_col_sq.tflite", num_threads=1)
    assert embedder.pack.variant == "dynamic_int8_col_sq" and embedder.normalized


def test_bench_drift_of_an_embedding_model_is_cosine_against_baseline_and_reference(st_models, tmp_path):
    from albert_edge.bench_latency.drift import measure_drift

    ckpt, _, out = st_models
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    entries = measure_drift([("fp32", out / "model_fp32.tflite"), ("onnx", out / "model_fp32.onnx")], "fp32", texts,
                            reference=ckpt, threads=1)
    assert [e["variant"] for e in entries] == ["fp32", "onnx"] and entries[0]["accuracy"] is None
    assert entries[0]["mean_cosine"] == pytest.approx(1.0) and entries[1]["min_cosine"] > 0.99999
    assert entries[1]["neighbour_agreement"] == 1.0 and entries[1]["reference"]["min_cosine"] > 0.99999


def test_tf1_checkpoint_without_output_weights_converts_with_cli_pooling_flags(tmp_path, capsys):
    from albert_edge.model.tf1 import write_tf1_checkpoint

    vocab = vocab_words()
    config = AlbertConfig(vocab_size=len(vocab), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, max_position_embeddings=32,
                          embedding_order="project_then_add")
    weights = random_weights(config, num_labels=None, seed=9)
    prefix = write_tf1_checkpoint(weights, tmp_path / "ckpt" / "albert_model.ckpt", scheme="brightmart")
    (tmp_path / "ckpt" / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    assert main(["convert", str(prefix), "--out", str(tmp_path / "out"), "--formats", "tflite",
                 "--max-seq-len", "16", "--pooling", "cls", "--normalize"]) == 0
    assert "embedding" in capsys.readouterr().out
    embedder = TextEmbedder.from_file(tmp_path / "out" / "model_fp32.tflite", num_threads=1)
    assert (embedder.task.pooling, embedder.normalized) == ("cls", True)
    want = judge_embeddings(weights, embedder, TEXTS[:3], "cls", True)
    assert np.max(np.abs(embedder.embed_batch(TEXTS[:3]) - want)) <= FP32_TOLERANCE


def test_embed_cli_on_a_classifier_or_an_empty_file_is_one_line_exit_2(tmp_path, capsys):
    vocab = vocab_words()
    config = AlbertConfig(vocab_size=len(vocab), embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=16, max_position_embeddings=16)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    convert_checkpoint(ModelSource(tmp_path, random_weights(config, num_labels=2)), tmp_path / "clf",
                       ConvertOptions(formats="tflite"))
    assert main(["embed", str(tmp_path / "clf" / "model_fp32.tflite"), "the cat"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model_fp32.tflite" in err[0] and "feature_extraction" in err[0]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert main(["embed", str(tmp_path / "clf" / "model_fp32.tflite"), "--file", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "empty.txt" in err[0]
