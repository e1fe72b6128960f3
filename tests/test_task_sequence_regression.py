"""Sequence regression, the task added as one module (``tasks/sequence_regression.py``) plus these tests.

It is the proof of the task abstraction: the converter, parity check, quantize, bench drift and
report, ``predict`` and the runtime (the generic ``TaskModel``) serve it with no line of their own
(``test_no_module_outside_the_task_names_it`` checks that). Checkpoints are written by transformers'
``BertForSequenceClassification(num_labels=1)`` (HF's regression head), random for parity and
trained here in seconds on a synthetic scoring rule (score = good words - bad words) for drift.
Tolerances: fp32 logits within 1e-4 of the float64 numpy reference and of transformers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.convert import check_parity, convert_to_tflite_bytes, onnx_model_bytes
from albert_edge.errors import ConversionError, DataError
from albert_edge.model import load_checkpoint
from albert_edge.model.reference import reference_forward
from albert_edge.tasks import SequenceClassification, SequenceRegression, detect_task, get_task
from albert_edge.tasks.sequence_regression import pearson, regression_drift, spearman

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
scipy_stats = pytest.importorskip("scipy.stats")

from tests.support.regression_task import (  # noqa: E402 - needs torch: after the importorskips
    MAX_SEQ_LEN,
    scored_texts,
    token_ids,
    train_regressor,
    write_scores,
)
from tests.support.tiny_hf import saved_checkpoint, tiny_hf_model  # needs torch: after the importorskips

SRC = Path(__file__).resolve().parents[1] / "src" / "albert_edge"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """The tiny BERT regressor of tests/support/regression_task.py, trained once per module."""
    return train_regressor(tmp_path_factory.mktemp("regressor"))


@pytest.fixture(scope="module")
def converted(trained, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("regression") / "out"
    assert main(["convert", str(trained), "--formats", "tflite,onnx", "--out", str(out),
                 "--max-seq-len", str(MAX_SEQ_LEN)]) == 0
    return out


def _model(out: Path, suffix: str) -> Path:
    [path] = [p for p in out.iterdir() if p.suffix == suffix and "fp32" in p.name]
    return path


# ---------------------------------------------------------------------------------------- the head
@pytest.mark.parametrize("kind", ["albert", "bert"])
def test_a_one_output_classifier_is_a_regressor_with_parity_against_reference_and_transformers(kind, tmp_path):
    path, model = saved_checkpoint(tiny_hf_model(kind, "SequenceClassification", num_labels=1), tmp_path / kind)
    weights = load_checkpoint(path)
    task = detect_task(weights, path)
    assert isinstance(task, SequenceRegression) and not task.needs_labels
    rng = np.random.default_rng(2)
    ids = rng.integers(5, 60, size=(2, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.double().numpy()
    ours = reference_forward(weights, ids, mask).logits
    assert ours.shape == (2, 1) and np.max(np.abs(ours - theirs)) <= 1e-4
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        result = check_parity(data, weights, task=task)
        assert result.passed, result.failure_line()
        assert result.max_abs["logits"] <= 1e-4


def test_a_classifier_with_more_outputs_is_not_a_regressor(tmp_path):
    path, _ = saved_checkpoint(tiny_hf_model("bert", "SequenceClassification", num_labels=3), tmp_path / "c")
    weights = load_checkpoint(path)
    assert isinstance(detect_task(weights, path), SequenceClassification)
    with pytest.raises(ConversionError, match="one-output head"):
        get_task("sequence_regression").check_weights(weights)


# ---------------------------------------------------------------------------------------- metrics
def test_pearson_and_spearman_equal_scipys_including_ties():
    rng = np.random.default_rng(3)
    a = rng.normal(size=200)
    b = a + rng.normal(scale=0.5, size=200)
    b[:20] = np.round(b[:20])  # ties
    assert pearson(a, b) == pytest.approx(scipy_stats.pearsonr(a, b)[0], abs=1e-12)
    assert spearman(np.round(a, 1), b) == pytest.approx(scipy_stats.spearmanr(np.round(a, 1), b)[0], abs=1e-12)


def test_drift_against_gold_counts_the_correlation_lost_and_the_scores_that_moved():
    rng = np.random.default_rng(4)
    gold = rng.normal(size=300)
    base = (gold + rng.normal(scale=0.3, size=300))[:, None]
    variant = base.copy()
    variant[:30] += 1.0  # 10 % of the scores move by far more than 5 % of the spread
    d = regression_drift(variant, base, gold)
    assert d.against == "gold" and d.examples == 300
    assert d.agreement == pytest.approx(0.9)
    assert d.drop == pytest.approx(100 * (pearson(base, gold) - pearson(variant, gold)))
    assert d.to_dict()["accuracy"] == d.pearson
    same = regression_drift(base, base)
    assert same.drop == pytest.approx(0.0) and same.agreement == 1.0 and same.against == "baseline scores"


# ---------------------------------------------------------------------------------------- end to end
@pytest.mark.slow  # trains the regressor (the module's trained fixture)
def test_convert_packs_no_labels_and_the_generic_runtime_returns_transformers_scores(trained, converted):
    from albert_edge.runtime.task_model import TaskModel

    model = transformers.BertForSequenceClassification.from_pretrained(str(trained)).eval()
    texts = [t for t, _ in scored_texts(20, seed=9)]
    with torch.no_grad():
        theirs = [float(model(input_ids=torch.tensor([token_ids(t)])).logits[0, 0]) for t in texts]
    from albert_edge.runtime.backends import open_backend

    # No softmax "probabilities" output for MediaPipe's classifier: over one score it would always read 1.0.
    assert list(open_backend(_model(converted, ".tflite").read_bytes()).output_names) == ["logits"]
    for suffix in (".tflite", ".onnx"):
        runtime = TaskModel.from_file(_model(converted, suffix), num_threads=1)
        assert runtime.task.name == "sequence_regression" and runtime.labels is None
        ours = [runtime.predict(t)["score"] for t in texts]
        assert np.max(np.abs(np.asarray(ours) - theirs)) <= 1e-4


@pytest.mark.slow  # trains the regressor (the module's trained fixture)
def test_predict_prints_one_score_per_text_and_refuses_other_tasks_flags(converted, tmp_path, capsys):
    model = str(_model(converted, ".tflite"))
    assert main(["predict", model, "great superb w1 w2", "awful boring w3"]) == 0
    lines = capsys.readouterr().out.split()
    assert len(lines) == 2 and float(lines[0]) > 0.5 > -0.5 > float(lines[1])
    assert main(["predict", "--json", model, "lovely w4 w5"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["text"] == "lovely w4 w5" and isinstance(record["score"], float)
    assert main(["predict", model, "--question", "why?", "w1 w2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--question is for question_answering models" in err
    assert main(["predict", model, "--file", str(write_scores(tmp_path / "s.jsonl", [("w1", 0.0)]))]) == 2
    assert ".jsonl input" in capsys.readouterr().err


@pytest.mark.slow  # trains the regressor (the module's trained fixture)
def test_quantize_judges_correlation_against_gold_and_reports_it(trained, tmp_path, capsys):
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(t for t, _ in scored_texts(64, seed=5)) + "\n", encoding="utf-8")
    gold = write_scores(tmp_path / "dev.jsonl", scored_texts(300, seed=6))
    out = tmp_path / "q"
    assert main(["quantize", str(trained), "--calib", str(calib), "--eval", str(gold), "--out", str(out),
                 "--mode", "dynamic", "--formats", "tflite", "--max-seq-len", str(MAX_SEQ_LEN), "--rounds", "3",
                 "--max-drop", "2", "--min-agreement", "0.9"]) == 0
    assert "verdict (quantize)" in capsys.readouterr().out  # the console holds the verdict, the table is in the .md
    table = (out / "quantize_report.md").read_text(encoding="utf-8")
    assert "pearson" in table and "spearman" in table
    report = json.loads((out / "quantize_report.json").read_text())
    assert report["judge"]["task"] == "sequence_regression" and report["judge"]["examples"] == 300
    fp32 = next(v for v in report["variants"] if v["name"] == "fp32")
    assert fp32["drift"]["against"] == "gold" and fp32["drift"]["pearson"] > 0.9  # the model learned the rule
    assert report["chosen"] == "tflite:dynamic_int8"
    chosen = next(v for v in report["variants"] if v["name"] == "dynamic_int8")
    assert chosen["drift"]["drop"] <= 2


@pytest.mark.slow  # trains the regressor (the module's trained fixture)
def test_bench_drift_and_report_section_come_from_the_task(converted, tmp_path):
    from albert_edge.bench_latency.drift import measure_drift
    from albert_edge.bench_latency.report_md import _drift_sections

    gold = write_scores(tmp_path / "test.jsonl", scored_texts(120, seed=7))
    files = [("fp32", _model(converted, ".tflite")), ("onnx", _model(converted, ".onnx"))]
    entries = measure_drift(files, "fp32", gold, threads=1)
    assert [e["task"] for e in entries] == ["sequence_regression"] * 2
    assert entries[0]["against"] == "gold" and entries[0]["accuracy"] == entries[0]["pearson"] > 0.9
    assert entries[1]["max_abs_diff"] <= 1e-4 and entries[1]["agreement"] == 1.0  # ONNX fp32 == TFLite fp32
    section = _drift_sections(entries)
    assert section[0] == "## Score drift (sequence regression; correlation against gold)"
    assert section[4].startswith("| fp32 | 120 | 0.9") and section[5].startswith("| onnx | 120 |")
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(t for t, _ in scored_texts(30, seed=8)) + "\n", encoding="utf-8")
    unlabelled = measure_drift(files, "fp32", texts, threads=1)
    assert unlabelled[0]["against"] == "baseline scores" and unlabelled[0]["pearson"] == pytest.approx(1.0)
    with pytest.raises(DataError, match="score"):
        measure_drift(files, "fp32", _write_text(tmp_path / "bad.jsonl", '{"text": "w1", "score": "high"}\n'))


def _write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_no_module_outside_the_task_names_it():
    """Adding this task touched tasks/sequence_regression.py and one registry line, nothing else."""
    pattern = re.compile(r"sequence_regression|SequenceRegression|RegressionDrift")
    naming = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if pattern.search(p.read_text(encoding="utf-8")))
    assert naming == ["tasks/__init__.py", "tasks/sequence_regression.py"]


@pytest.mark.slow  # trains the regressor (the module's trained fixture)
def test_bench_real_lengths_come_from_the_tasks_eval_format(converted, tmp_path):
    from albert_edge.bench_latency.runner import describe_variants, real_lengths

    rows = scored_texts(10, seed=11)
    [variant] = describe_variants([_model(converted, ".tflite")])
    expected = [len(t.split()) + 2 for t, _ in rows]  # every word is in the vocab; + [CLS] and [SEP]
    assert real_lengths(variant, write_scores(tmp_path / "s.jsonl", rows)) == expected
    assert real_lengths(variant, _write_text(tmp_path / "t.txt", "\n".join(t for t, _ in rows) + "\n")) == expected
