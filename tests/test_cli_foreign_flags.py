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
