"""albert-edge convert on real-format ALBERT-Tiny checkpoints: parity, dynamic shapes, size, ops, pack.

Checkpoints of all three kinds (brightmart albert_zh TF1, Google ALBERT TF1, Hugging Face
safetensors) are written with the model floor's writers into a temporary directory and
converted once per module; the tests then judge the written files independently of the
converter's own parity check.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from albert_edge.convert import ConvertOptions, convert_checkpoint
from albert_edge.convert.census import census_onnx, census_tflite
from albert_edge.model import (
    albert_tiny_zh_config,
    albert_tiny_zh_google_config,
    random_weights,
    reference_forward,
)
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.model.tf1 import write_tf1_checkpoint
from albert_edge.runtime.pack import read_pack

VOCAB = Path(__file__).resolve().parents[1] / "examples" / "albert_tiny_zh_sentiment" / "vocab.txt"
LABELS = ["neg", "pos"]
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def _write(kind: str, directory: Path):
    directory.mkdir(parents=True)
    shutil.copy(VOCAB, directory / "vocab.txt")
    if kind == "brightmart":
        weights = random_weights(albert_tiny_zh_config(), num_labels=2, seed=11)
        return weights, write_tf1_checkpoint(weights, directory / "model.ckpt", scheme="brightmart")
    weights = random_weights(albert_tiny_zh_google_config(), num_labels=2, seed=12)
    if kind == "google":
        return weights, write_tf1_checkpoint(weights, directory / "model.ckpt", scheme="google")
    write_hf_checkpoint(weights, directory, fmt="safetensors")
    return weights, directory


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """kind -> (weights, checkpoint path, out dir, ConversionReport); brightmart also gets fp16 files."""
    root = tmp_path_factory.mktemp("convert")
    results = {}
    for kind in ("brightmart", "google", "hf"):
        weights, checkpoint = _write(kind, root / f"ckpt_{kind}")
        out = root / f"out_{kind}"
        options = ConvertOptions(formats="tflite,onnx", labels=LABELS, fp16=kind == "brightmart")
        report = convert_checkpoint(checkpoint, out, options)
        results[kind] = (weights, checkpoint, out, report)
    return results


def _inputs(batch: int, seq: int, padded: bool, vocab_size: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 1000 + seq)
    ids = rng.integers(1, vocab_size, size=(batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    if padded:
        for row in range(1, batch):
            mask[row, seq - row * seq // batch:] = 0
        ids[mask == 0] = 0
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _run_tflite(path: Path, inputs: dict[str, np.ndarray], threads: int = 2) -> np.ndarray:
    """Logits from a bare LiteRT interpreter; a batch-one file (the default graph) is fed row by row, as the
    runtime feeds it."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=str(path), num_threads=threads).get_signature_runner("serving_default")
    if _batch_one(path):
        return np.concatenate([runner(**{k: v[i : i + 1] for k, v in inputs.items()})["logits"]
                               for i in range(len(inputs["input_ids"]))])
    return runner(**inputs)["logits"]


def _batch_one(path: Path) -> bool:
    """True for a [1, seq] graph: no SHAPE op reads the batch (``GraphOptions.batch_one``, the default)."""
    ops = census_tflite(path)
    return not ops.get("SHAPE") and not ops.get("PACK")


def _run_onnx(path: Path, inputs: dict[str, np.ndarray], threads: int = 2) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(["logits"], inputs)[0]


@pytest.mark.parametrize("kind", ["brightmart", "google", "hf"])
def test_every_checkpoint_kind_converts_to_both_formats_within_fp32_tolerance(converted, kind):
    _, _, out, report = converted[kind]
    fp32 = {f.format: f for f in report.files if f.variant == "fp32"}
    assert set(fp32) == {"tflite", "onnx"}
    for exported in fp32.values():
        assert (out / exported.file).is_file()
        assert exported.parity.max_abs_logit <= 1e-4
        assert exported.parity.max_abs_hidden <= 1e-4


@pytest.mark.parametrize("batch,seq,padded", [(1, 7, False), (3, 64, True), (1, 128, False), (3, 128, True)])
def test_written_files_resize_to_any_batch_and_length_and_match_reference(converted, batch, seq, padded):
    weights, _, out, _ = converted["brightmart"]
    inputs = _inputs(batch, seq, padded, weights.config.vocab_size)
    want = reference_forward(weights, **inputs).logits
    np.testing.assert_allclose(_run_tflite(out / "model_fp32.tflite", inputs), want, atol=1e-4, rtol=0)
    np.testing.assert_allclose(_run_onnx(out / "model_fp32.onnx", inputs), want, atol=1e-4, rtol=0)


def test_padding_does_not_change_logits_of_the_real_tokens(converted):
    weights, _, out, _ = converted["google"]
    short = _inputs(1, 9, False, weights.config.vocab_size)
    padded = {k: np.pad(v, ((0, 0), (0, 23))) for k, v in short.items()}
    for run, name in ((_run_tflite, "model_fp32.tflite"), (_run_onnx, "model_fp32.onnx")):
        np.testing.assert_allclose(run(out / name, padded), run(out / name, short), atol=1e-5, rtol=0)


def test_onnx_runs_with_one_and_two_intra_op_threads(converted):
    weights, _, out, _ = converted["hf"]
    inputs = _inputs(3, 20, True, weights.config.vocab_size)
    want = reference_forward(weights, **inputs).logits
    for threads in (1, 2):
        np.testing.assert_allclose(_run_onnx(out / "model_fp32.onnx", inputs, threads), want, atol=1e-4, rtol=0)


@pytest.mark.parametrize("kind", ["brightmart", "google", "hf"])
def test_shared_weights_are_stored_once_so_file_size_is_params_times_four_bytes(converted, kind):
    weights, _, out, _ = converted[kind]
    weight_bytes = weights.num_parameters() * 4
    pack_bytes = VOCAB.stat().st_size + 4096
    for name in ("model_fp32.tflite", "model_fp32.onnx"):
        size = (out / name).stat().st_size
        # One copy of each shared block: a second copy of even the smallest kernel (312x312) would add 0.4 MB.
        assert weight_bytes <= size <= weight_bytes + pack_bytes + 200_000, (name, size, weight_bytes)


def test_fp16_variants_are_half_size_and_within_their_stated_tolerance(converted):
    weights, _, out, report = converted["brightmart"]
    fp16 = {f.format: f for f in report.files if f.variant == "fp16"}
    assert set(fp16) == {"tflite", "onnx"}
    for exported in fp16.values():
        assert exported.size_bytes < 0.55 * weights.num_parameters() * 4 + VOCAB.stat().st_size
        assert exported.parity.max_abs_logit <= exported.parity.tolerance["logits"] == 2e-2
    assert read_pack(out / "model_fp16.tflite").variant == "fp16"


@pytest.mark.parametrize("kind", ["brightmart", "google", "hf"])
def test_tflite_holds_only_builtin_ops(converted, kind):
    _, _, out, _ = converted[kind]
    ops = census_tflite(out / "model_fp32.tflite")
    banned = [op for op in ops if op.startswith("Flex") or op in ("CUSTOM", "EINSUM", "ONE_HOT", "ERF")]
    assert not banned
    # Word and token-type tables, and the batch-one graph's position ids (a CUMSUM of the input, no SLICE).
    assert ops["GELU"] == 4 and ops["GATHER"] == 3 and ops["CUMSUM"] == 1


def test_tflite_signature_has_named_int32_inputs_that_resize_to_any_sequence(converted):
    from ai_edge_litert.interpreter import Interpreter

    _, _, out, _ = converted["brightmart"]
    interpreter = Interpreter(model_path=str(out / "model_fp32.tflite"))
    outputs = ["logits", "probabilities"]  # probabilities = softmax(logits), MediaPipe's head 0
    assert interpreter.get_signature_list() == {"serving_default": {"inputs": sorted(INPUT_NAMES), "outputs": outputs}}
    for detail in interpreter.get_input_details():
        assert detail["dtype"] == np.int32
        # Declared [1, max_seq_len] for MediaPipe (it truncates and pads only to a fixed length) ...
        assert list(detail["shape"]) == [1, 128]
    # ... but the sequence axis was converted dynamic, so the runner resizes to the real length (one text per
    # call: the default graph is batch-one; ``convert --dynamic-batch`` writes one that takes batches).
    ids = np.full((1, 7), 5, np.int32)
    result = interpreter.get_signature_runner()(input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids))
    assert result["logits"].shape == (1, 2)
    np.testing.assert_allclose(result["probabilities"].sum(axis=1), 1.0, atol=1e-6)


def test_onnx_references_each_shared_weight_through_one_initializer(converted):
    import onnx

    weights, _, out, _ = converted["google"]
    model = onnx.load(str(out / "model_fp32.onnx"))
    onnx.checker.check_model(model, full_check=True)
    initializers = [init.name for init in model.graph.initializer]
    assert len(initializers) == len(set(initializers))
    assert set(weights.tensors) <= set(initializers)
    query_users = [n for n in model.graph.node if "encoder.group0.inner0.attention.query.kernel" in n.input]
    assert len(query_users) == weights.config.num_hidden_layers
    assert {"LayerNormalization", "Softmax", "Erf"} & set(census_onnx(model)) >= {"LayerNormalization", "Softmax"}


@pytest.mark.parametrize("name", ["model_fp32.tflite", "model_fp32.onnx", "model_fp16.onnx"])
def test_packed_vocab_labels_and_settings_read_back_identical(converted, name):
    _, _, out, _ = converted["brightmart"]
    pack = read_pack(out / name)
    assert pack.tokenizer_type == "wordpiece"
    assert pack.tokenizer_asset == VOCAB.read_bytes()
    assert list(pack.labels) == LABELS
    assert pack.max_seq_len == 128 and pack.task == "sequence_classification"
    assert pack.outputs == ("logits",) and pack.source["scheme"] == "brightmart-tf1"


def test_conversion_report_records_size_census_and_parity_for_every_file(converted):
    _, _, out, report = converted["brightmart"]
    saved = json.loads((out / "conversion_report.json").read_text())
    assert [f["file"] for f in saved["files"]] == ["model_fp32.tflite", "model_fp16.tflite", "model_fp32.onnx",
                                                  "model_fp16.onnx"]
    for entry in saved["files"]:
        assert entry["size_bytes"] == (out / entry["file"]).stat().st_size
        assert entry["ops"] == (census_tflite if entry["format"] == "tflite" else census_onnx)(out / entry["file"])
        assert entry["passed"] is True and entry["max_abs_logit"] <= entry["tolerance"]["logits"]
        assert {(c["batch"], c["seq"]) for c in entry["cases"]} >= {(1, 7), (3, 64), (3, 128)}
        assert {c["threads"] for c in entry["cases"]} == {1, 2}
    assert "model_fp32.tflite" in report.table()
    drift = saved["graph"]["gelu_exact_vs_tanh_drift"]
    assert drift["graph_form"] == "gelu_tanh" and 0 < drift["max_abs_logit"] < 1e-1


def test_hugging_face_transformers_agrees_with_the_exported_onnx(converted):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    weights, checkpoint, out, _ = converted["hf"]
    model = transformers.AlbertForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    inputs = _inputs(2, 16, True, weights.config.vocab_size)
    with torch.no_grad():
        want = model(**{k: torch.from_numpy(v.astype(np.int64)) for k, v in inputs.items()}).logits.numpy()
    np.testing.assert_allclose(_run_onnx(out / "model_fp32.onnx", inputs), want, atol=1e-4, rtol=0)


def test_dynamic_batch_export_passes_parity_resizes_to_any_batch_and_classifies_like_the_default_file(converted,
                                                                                                    tmp_path):
    """``convert --dynamic-batch`` (GraphOptions(batch_one=False)) writes the [batch, seq] graph a caller can feed
    whole batches to; the default file (batch-one: constant reshapes, no SHAPE/PACK/STRIDED_SLICE) gives the same
    answers, the runtime feeding it row by row."""
    from albert_edge.convert import GraphOptions
    from albert_edge.runtime import TextClassifier

    weights, checkpoint, out, _ = converted["google"]
    report = convert_checkpoint(checkpoint, tmp_path, ConvertOptions(formats="tflite", labels=LABELS,
                                                                graph_options=GraphOptions(batch_one=False)))
    assert not report.graph["tflite"]["batch_one"] and all(f.parity.passed for f in report.files)
    assert report.files[0].ops.get("SHAPE") and not _batch_one(tmp_path / report.files[0].file)
    assert _batch_one(out / report.files[0].file)
    assert not any(census_tflite(out / report.files[0].file).get(op) for op in ("SHAPE", "PACK", "STRIDED_SLICE"))
    inputs = _inputs(3, 20, True, weights.config.vocab_size)
    np.testing.assert_allclose(_run_tflite(tmp_path / report.files[0].file, inputs),
                               reference_forward(weights, **inputs).logits, atol=1e-4, rtol=0)
    texts = ["这家酒店服务很好", "差", "环境不错，早餐也很丰富，下次还来"]
    dynamic = TextClassifier.from_file(tmp_path / report.files[0].file, num_threads=1)
    default = TextClassifier.from_file(out / report.files[0].file, num_threads=1)
    np.testing.assert_allclose(dynamic.logits_batch(texts, bucket=False)[0],
                               default.logits_batch(texts, bucket=False)[0], atol=1e-4)


def test_shared_layer_loop_export_passes_parity_and_agrees_with_hugging_face_transformers(converted, tmp_path):
    """ALBERT's shared layer as a WHILE body (convert --shared-layer-loop): parity with the numpy reference, and
    transformers' own logits at a padded batch, within the default file's tolerance."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from albert_edge.convert import GraphOptions

    weights, checkpoint, _, _ = converted["hf"]
    report = convert_checkpoint(checkpoint, tmp_path, ConvertOptions(formats="tflite", labels=LABELS,
                                                                graph_options=GraphOptions(shared_layer_loop=True)))
    assert all(f.parity.passed for f in report.files) and report.files[0].ops["WHILE"] == 1
    model = transformers.AlbertForSequenceClassification.from_pretrained(str(checkpoint)).eval()
    inputs = _inputs(2, 16, True, weights.config.vocab_size)
    with torch.no_grad():
        want = model(**{k: torch.from_numpy(v.astype(np.int64)) for k, v in inputs.items()}).logits.numpy()
    np.testing.assert_allclose(_run_tflite(tmp_path / report.files[0].file, inputs), want, atol=1e-4, rtol=0)
