"""Pooling flags on a checkpoint with another task's head are refused, not obeyed (issue #27, cause 7).

``convert --pooling mean`` on a token classifier used to write an embedding model, dropping the
head without a word, while ``predict`` refuses a flag foreign to the model's task.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from albert_edge.cli import main
from tests.support.tiny_hf import save_with_vocab, tiny_hf_model

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]


@pytest.fixture(scope="module")
def token_classifier(tmp_path_factory):
    path = tmp_path_factory.mktemp("ner") / "ckpt"
    save_with_vocab(tiny_hf_model("bert", "TokenClassification", num_labels=3), path, WORDS)
    return path


@pytest.mark.parametrize("flag", [["--pooling", "mean"], ["--normalize"], ["--pooling-in-runtime"]])
def test_convert_refuses_pooling_flags_on_a_token_classifier(token_classifier, tmp_path, capsys, flag):
    out = tmp_path / "out"
    assert main(["convert", str(token_classifier), "--out", str(out), *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{flag[0]} is a feature_extraction flag" in err[0] and "token_classification" in err[0]
    assert not out.exists()


def test_quantize_refuses_pooling_flags_on_a_token_classifier(token_classifier, tmp_path, capsys):
    calib = tmp_path / "calib.txt"
    calib.write_text("w1 w2\n", encoding="utf-8")
    out = tmp_path / "q"
    assert main(["quantize", str(token_classifier), "--calib", str(calib), "--out", str(out), "--pooling", "cls"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "token_classification model whose head it would drop" in err[0]
    assert not out.exists()


def test_an_explicit_other_task_with_pooling_flags_is_refused(token_classifier, tmp_path, capsys):
    assert main(["convert", str(token_classifier), "--out", str(tmp_path / "o"), "--task", "token_classification",
                 "--pooling", "mean"]) == 2
    assert "--task token_classification has no pooling" in capsys.readouterr().err


def test_labels_on_a_regression_head_name_the_task_not_a_missing_head(tmp_path, capsys):
    """#27 cause 17: a one-output head is a classifier head; "no classifier head" sent users looking for one."""
    path = tmp_path / "reg"
    save_with_vocab(tiny_hf_model("bert", "SequenceClassification", num_labels=1), path, WORDS)
    assert main(["convert", str(path), "--out", str(tmp_path / "o"), "--labels", "good,bad"]) == 2
    err = capsys.readouterr().err
    assert "a sequence_regression model has no class names" in err and "no classifier head" not in err


def test_question_answering_refuses_a_stride_no_window_can_hold(tmp_path, capsys):
    """#27 cause 17: QA clamped a huge --stride silently where the token classifier refuses it."""
    path = tmp_path / "qa"
    save_with_vocab(tiny_hf_model("bert", "QuestionAnswering"), path, WORDS)
    out = tmp_path / "o"
    assert main(["convert", str(path), "--out", str(out), "--formats", "tflite", "--max-seq-len", "32"]) == 0
    [model] = out.glob("*fp32*.tflite")
    capsys.readouterr()
    assert main(["predict", str(model), "w1 w2 w3", "--question", "w1", "--stride", "1000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stride 1000: expected an int in [0, " in err[0]
    assert main(["predict", str(model), "w1 w2 w3", "--question", "w1", "--stride", "4"]) == 0
