"""evaluate: TSV reading with file:line errors, accuracy, agreement and drift against a reference."""

from __future__ import annotations

import numpy as np
import pytest
from tests.support.runtime_models import weights, write_models

from albert_edge.errors import DataError
from albert_edge.evaluate import Example, compare_logits, evaluate, read_tsv
from albert_edge.runtime import TextClassifier


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("bag"))


@pytest.fixture(scope="module")
def other_models(tmp_path_factory):
    # Same architecture, other random weights: a "model" that disagrees sometimes.
    return write_models(tmp_path_factory.mktemp("bag2"), seed=7)


def _tsv(tmp_path, text: str, name: str = "d.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_single_and_pair_tsv(tmp_path):
    single = read_tsv(_tsv(tmp_path, "pos\t很好\n\nneg\t很差\n"))
    assert single == [Example("pos", "很好", None, 1), Example("neg", "很差", None, 3)]
    pairs = read_tsv(_tsv(tmp_path, "label\ttext_a\ttext_b\npos\t好\t不错\n", "p.tsv"))
    assert pairs == [Example("pos", "好", "不错", 2)]


@pytest.mark.parametrize(
    "content, expected",
    [
        ("pos\t好\nneutral\t一般\n", r"d.tsv:2: label 'neutral' is not one of"),
        ("pos\t好\npos 好\n", r"d.tsv:2: expected 2 \(label, text\) or 3"),
        ("pos\t好\nneg\t差\t坏\n", r"d.tsv:2: expected 2 columns like the first row, got 3"),
        ("pos\t\n", r"d.tsv:1: empty text column"),
        ("\tgood\n", r"d.tsv:1: empty label"),
        ("\n\n", r"d.tsv: file is empty"),
    ],
)
def test_bad_tsv_lines_raise_data_error_naming_file_and_line(tmp_path, content, expected):
    with pytest.raises(DataError, match=expected):
        read_tsv(_tsv(tmp_path, content), labels=["neg", "pos"])


def test_non_utf8_tsv_names_the_line(tmp_path):
    path = tmp_path / "d.tsv"
    path.write_bytes("pos\t好\n".encode() + b"neg\t\xff\xfe\n")
    with pytest.raises(DataError, match=r"d.tsv:2: not valid UTF-8"):
        read_tsv(path)


def test_missing_tsv_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_tsv(tmp_path / "absent.tsv")


def test_compare_logits_measures_agreement_delta_and_kl():
    ref = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.5]])
    same = compare_logits(ref, ref)
    assert same.agreement == 1.0 and same.max_abs_logit_delta == 0.0 and same.mean_kl == pytest.approx(0.0, abs=1e-12)
    moved = compare_logits(ref + np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 1.0]]), ref)
    assert moved.agreement == pytest.approx(2 / 3)
    assert moved.max_abs_logit_delta == pytest.approx(1.0)
    assert moved.mean_abs_logit_delta == pytest.approx(1.0 / 6)
    p = np.exp([1.0, 0.5]) / np.exp([1.0, 0.5]).sum()
    q = np.exp([1.0, 1.5]) / np.exp([1.0, 1.5]).sum()
    assert moved.max_kl == pytest.approx(float(np.sum(p * np.log(p / q))))


def test_accuracy_and_confusion_match_the_predictions(models, tmp_path):
    lines = ["pos\t这家酒店服务很好", "neg\t房间很差", "neg\t很好很好", "pos\t环境不错"]
    path = _tsv(tmp_path, "\n".join(lines) + "\n")
    report = evaluate(models["tflite"], path, num_threads=1)
    clf = TextClassifier.from_file(models["tflite"], num_threads=1)
    preds = [clf.predict(line.split("\t")[1]).label for line in lines]
    truth = [line.split("\t")[0] for line in lines]
    assert report.num_examples == 4
    assert report.accuracy == pytest.approx(np.mean([p == t for p, t in zip(preds, truth)]))
    assert report.confusion["neg"]["pos"] == sum(1 for p, t in zip(preds, truth) if t == "neg" and p == "pos")
    assert report.drift is None


def test_onnx_and_tflite_of_the_same_weights_agree_fully(models, tmp_path):
    path = _tsv(tmp_path, "pos\t这家酒店服务很好\nneg\t房间很差\npos\t环境不错，推荐\n")
    report = evaluate(models["onnx"], path, reference=models["tflite"], num_threads=1)
    assert report.drift.agreement == 1.0
    assert report.drift.max_abs_logit_delta < 1e-4
    assert report.reference_accuracy == report.accuracy


def test_a_different_model_shows_drift(models, other_models, tmp_path):
    texts = ["这家酒店服务很好", "房间很差", "环境不错", "太糟糕了", "非常满意推荐", "脏", "干净", "我们是一个"]
    path = _tsv(tmp_path, "".join(f"{'pos' if i % 2 else 'neg'}\t{t}\n" for i, t in enumerate(texts)))
    report = evaluate(other_models["tflite"], path, reference=models["tflite"], num_threads=1)
    assert report.drift.max_abs_logit_delta > 0.1
    assert report.drift.mean_kl > 0


def test_pairs_are_evaluated_as_pairs(models, tmp_path):
    path = _tsv(tmp_path, "neg\t房间干净\t服务很差\n")
    report = evaluate(models["tflite"], path, num_threads=1)
    clf = TextClassifier.from_file(models["tflite"], num_threads=1)
    assert report.accuracy == float(clf.predict_pair("房间干净", "服务很差").label == "neg")


def test_reference_can_be_the_canonical_weights_through_the_numpy_reference(tmp_path):
    model = pytest.importorskip("albert_edge.model")
    convert = pytest.importorskip("albert_edge.convert")
    from tests.support.runtime_models import VOCAB_LINES, make_pack

    config = model.AlbertConfig(vocab_size=len(VOCAB_LINES), embedding_size=8, hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=40)
    wts = model.random_weights(config, num_labels=2, seed=1)
    path = tmp_path / "m.onnx"
    path.write_bytes(convert.onnx_model_bytes(wts, make_pack(max_seq_len=32)))
    data = _tsv(tmp_path, "pos\t这家酒店服务很好\nneg\t房间很差\npos\thello world\n")
    report = evaluate(path, data, reference=wts, num_threads=1)
    assert report.drift.agreement == 1.0
    assert report.drift.max_abs_logit_delta < 1e-4
    assert report.reference.startswith("numpy reference")


def test_unknown_label_in_examples_is_a_data_error(models):
    with pytest.raises(DataError, match="unknown label 'meh'"):
        evaluate(models["onnx"], [Example("meh", "好", None, 5)], num_threads=1)


def test_numpy_formula_is_what_evaluate_scores(models, tmp_path):
    # Guards against evaluate silently using padded positions: recompute from the fixture formula.
    clf = TextClassifier.from_file(models["onnx"], num_threads=1)
    texts = ["很好", "这家酒店服务很差很差很差"]
    logits, encs = clf.logits_batch(texts)
    from tests.support.runtime_models import numpy_logits

    for row, e in enumerate(encs):
        want = numpy_logits(weights(), [e.input_ids], [e.attention_mask], [e.token_type_ids])[0]
        np.testing.assert_allclose(logits[row], want, atol=1e-5)
