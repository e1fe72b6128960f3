"""MediaPipe Tasks' real TextClassifier runs our .tflite files unchanged and predicts what we predict.

The client is ``mediapipe==1.2.2`` (pinned with its dependencies in tests/mediapipe/requirements.txt)
in its own virtualenv, created once by tests/mediapipe/venv.py (about a minute) and cached in
~/.cache/albert-edge; it is driven through a subprocess that imports nothing from albert_edge.
Files: the shipped sample checkpoint converted to fp32 and quantized to dynamic-range int8 by the
same code paths as the CLI; its EMBEDDING_LOOKUP form (``convert --embedding-lookup``), and that form
quantized by litert-quantizer (word table int8 too) and given its pack back by ``repack``. Set ALBERT_EDGE_SKIP_MEDIAPIPE=1 to skip (e.g. offline); CI does not.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from albert_edge.inputs.data import read_tsv
from albert_edge.runtime.classifier import TextClassifier, softmax
from tests.support.mediapipe_text import same_preprocessing

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "albert_tiny_zh_sentiment"
MEDIAPIPE = ROOT / "tests" / "mediapipe"

pytestmark = pytest.mark.slow  # MediaPipe's own virtualenv and the sample's real conversions

# Texts a user can throw at a classifier: empty, empty after cleaning, control characters, very
# long (far past 128 tokens, in one script and mixed), mixed scripts, emoji, special-token lookalikes.
EDGE_TEXTS = [
    "",
    "   \t\n ",
    "\u200b\u200b\ufeff",
    "\x00\x01\x7f",
    "a" * 2000,
    "好" * 2000,
    ("酒店很好 great hotel, Привет! مرحبا こんにちは 😀 " * 60)[:2000],
    "Hello 世界 Привет مرحبا こんにちは 😀 ÀÉÎ ñ",
    "[CLS] [SEP] [PAD] [UNK] [MASK]",
    "ＡＢＣ全角字母",
    "\U0001f600" * 300,
]


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """fp32 via convert, dynamic int8 via quantize: the files a user of the CLI gets."""
    from albert_edge.convert import GraphOptions
    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
    from albert_edge.quantize.pipeline import quantize_checkpoint

    out = tmp_path_factory.mktemp("mediapipe_sample")
    labels = (SAMPLE / "labels.txt").read_text(encoding="utf-8").split()
    convert_checkpoint(SAMPLE, out / "fp32", ConvertOptions(formats="tflite", labels=labels))
    # The default graph is batch-one ([1, seq], record 0291); --dynamic-batch writes the [batch, seq] one.
    convert_checkpoint(SAMPLE, out / "dynamic_batch", ConvertOptions(formats="tflite", labels=labels,
                                                                     graph_options=GraphOptions(batch_one=False)))
    quantize_checkpoint(SAMPLE, out / "int8", SAMPLE / "calib.txt", mode="dynamic", formats="tflite", labels=labels, rounds=1,
                        num_threads=1)
    # The EMBEDDING_LOOKUP form, and litert-quantizer's int8 of it (word table int8 too) after `repack`.
    lookup = out / "lookup" / "model_fp32.tflite"
    convert_checkpoint(SAMPLE, out / "lookup", ConvertOptions(formats="tflite", labels=labels,
                                                              graph_options=GraphOptions(embedding_lookup=True)))
    # Attention in groups of heads (records 0300, 0307): SPLIT, CONCATENATION and more BATCH_MATMULs, one subgraph;
    # written by quantize --attention-head-groups, fp32 and int8 alike.
    quantize_checkpoint(SAMPLE, out / "head_groups", SAMPLE / "calib.txt", mode="dynamic", formats="tflite",
                        labels=labels, rounds=1, num_threads=1, attention_head_groups=3)
    grouped = out / "head_groups" / "variants"
    files = {"fp32": out / "fp32" / "model_fp32.tflite", "int8": out / "int8" / "variants" / "dynamic_int8.tflite",
             "fp32_dynamic_batch": out / "dynamic_batch" / "model_fp32.tflite", "fp32_embedding_lookup": lookup,
             "fp32_head_groups": grouped / "fp32.tflite", "int8_head_groups": grouped / "dynamic_int8.tflite"}
    if importlib.util.find_spec("litert_quantizer") is not None:
        from albert_edge.convert.repack import repack_model
        from tests.support.litert_quantizer import quantize_dynamic_int8

        raw = quantize_dynamic_int8(lookup, out / "litert_quantizer_raw.tflite")
        files["int8_litert_quantizer"] = repack_model(raw, lookup, out / "repacked" / "model.tflite").out
    return files


def _mediapipe(python: Path, model: Path, texts: list[str]) -> list[dict]:
    proc = subprocess.run([str(python), str(MEDIAPIPE / "run_text_classifier.py")], capture_output=True, text=True,
                          input=json.dumps({"model": str(model), "texts": texts}), timeout=1200)
    assert proc.returncode == 0, f"MediaPipe refused {model.name}: {proc.stderr.strip().splitlines()[-3:]}"
    return json.loads(proc.stdout)["results"]


def test_vendored_metadata_schema_is_the_pinned_wheels(mediapipe_python: Path) -> None:
    """albert_edge/_vendor carries flatc's output verbatim, as the mediapipe wheel ships it."""
    # find_spec of the top-level package locates it without running mediapipe's heavy __init__.
    code = ("import importlib.util, os; s = importlib.util.find_spec('mediapipe'); print(os.path.join("
            "s.submodule_search_locations[0], 'tasks', 'metadata', 'metadata_schema_py_generated.py'))")
    where = subprocess.run([str(mediapipe_python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    vendored = ROOT / "src" / "albert_edge" / "_vendor" / "tflite_metadata_schema_py_generated.py"
    assert Path(where).read_bytes() == vendored.read_bytes()


@pytest.mark.parametrize("variant", ["fp32", "int8", "fp32_dynamic_batch", "fp32_embedding_lookup",
                                     "int8_litert_quantizer", "fp32_head_groups", "int8_head_groups"])
def test_mediapipe_text_classifier_agrees_with_ours(variant: str, mediapipe_python: Path, sample_files: dict[str, Path]) -> None:
    if variant not in sample_files:
        pytest.skip(f"{variant}: litert-quantizer is not installed (the test extra pins it)")
    model = sample_files[variant]
    # Every third review of the test split (576 of 1,728, spread over the whole file): MediaPipe classifies
    # one text per call at 128 tokens, and five files on all rows took a sixth of the suite's time.
    split = [e.text_a for e in read_tsv(SAMPLE / "test.tsv")][::3]
    results = _mediapipe(mediapipe_python, model, split + EDGE_TEXTS)

    errors = [(text[:40], r["error"]) for text, r in zip(split + EDGE_TEXTS, results) if "error" in r]
    assert not errors, f"MediaPipe failed on {len(errors)} texts, e.g. {errors[:3]}"
    for r in results:
        head = r["heads"][0]
        assert head["head"] == "probabilities" and [c[0] for c in head["categories"]] == ["neg", "pos"]
        assert abs(sum(c[1] for c in head["categories"]) - 1.0) < 1e-5
    theirs = np.array([[c[1] for c in r["heads"][0]["categories"]] for r in results[: len(split)]])

    ours = softmax(TextClassifier.from_file(model).logits_batch(split)[0].astype(np.float64))
    agree = theirs.argmax(1) == ours.argmax(1)
    top2 = np.sort(ours, axis=1)
    margin = top2[:, -1] - top2[:, -2]
    print(f"{variant}: top label agreement {agree.mean():.4%} of {len(split)}; "
          f"max |score diff| {np.abs(theirs - ours).max():.3g}")
    assert agree.mean() >= 0.995
    assert np.all(margin[~agree] <= 1e-3), f"disagreements with a clear margin: {margin[~agree]}"
    same = np.array([same_preprocessing(t) for t in split])
    # MediaPipe lower-cases ASCII only; texts with full-width Latin letters or accents tokenize
    # differently there. They must stay rare in the split, or this exclusion would hide a real gap.
    assert same.mean() > 0.99
    diff = np.abs(theirs - ours)[same].max()
    print(f"{variant}: max |score diff| {diff:.3g} on the {same.sum()} texts both sides preprocess alike")
    if variant.startswith("fp32"):
        assert diff <= 1e-4
    # Fed exactly as MediaPipe feeds it (one text, padded to 128), our runtime computes the same numbers,
    # int8 included: what remains above is padding/batching, not a difference in the file or its binding.
    clf = TextClassifier.from_file(model, num_threads=1)
    picked = [i for i in range(len(split)) if same[i]][:150]
    padded = np.array([clf.run_inputs(clf._batch_inputs([clf.encode(split[i])], 128))[0] for i in picked])
    gap = np.abs(softmax(padded.astype(np.float64)) - theirs[picked]).max()
    print(f"{variant}: max |score diff| {gap:.3g} with our input padded to 128 like MediaPipe's ({len(picked)} texts)")
    assert gap <= 1e-5


def test_mediapipe_refuses_the_shared_layer_loop_file_with_one_line(mediapipe_python: Path, tmp_path: Path) -> None:
    """`convert --shared-layer-loop` writes ALBERT's layer as a WHILE body: a second subgraph, which MediaPipe's
    TextClassifier does not take (docs/mediapipe.md says so; the option stays off by default for this)."""
    from albert_edge.convert import GraphOptions
    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint

    labels = (SAMPLE / "labels.txt").read_text(encoding="utf-8").split()
    convert_checkpoint(SAMPLE, tmp_path, ConvertOptions(formats="tflite", labels=labels,
                                                        graph_options=GraphOptions(shared_layer_loop=True)))
    proc = subprocess.run([str(mediapipe_python), str(MEDIAPIPE / "run_text_classifier.py")], capture_output=True,
                          text=True, input=json.dumps({"model": str(tmp_path / "model_fp32.tflite"), "texts": ["好"]}),
                          timeout=600)
    assert proc.returncode != 0 and "assumed to have a single subgraph" in proc.stderr
