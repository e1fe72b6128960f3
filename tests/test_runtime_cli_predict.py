"""``albert-edge predict``: arguments, files and stdin; plain and JSON lines; one-line errors."""

from __future__ import annotations

import io
import json

import pytest
from tests.support.runtime_models import write_models

from albert_edge.cli import main


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("bag"))


def test_texts_from_arguments_print_label_and_score(models, capsys):
    assert main(["predict", str(models["tflite"]), "这家酒店服务很好", "房间很差", "--threads", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split("\t")[0] for line in lines] == ["pos", "neg"]
    assert all(0.5 <= float(line.split("\t")[1]) <= 1.0 for line in lines)


def test_json_lines_from_a_file_with_pairs(models, tmp_path, capsys):
    path = tmp_path / "in.tsv"
    path.write_text("很好\n\n房间干净\t服务很差\n", encoding="utf-8")
    assert main(["predict", str(models["onnx"]), "--file", str(path), "--json", "--threads", "1"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in records] == ["很好", "房间干净"]
    assert records[1]["text_b"] == "服务很差" and set(records[0]["scores"]) == {"neg", "pos"}


def test_reads_stdin_when_no_text_is_given(models, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("很差\n很好\n"))
    assert main(["predict", str(models["tflite"]), "--json", "--backend", "litert", "--threads", "1"]) == 0
    assert [json.loads(line)["label"] for line in capsys.readouterr().out.splitlines()] == ["neg", "pos"]


def test_labelled_tsv_echoes_the_gold_label(models, tmp_path, capsys):
    path = tmp_path / "gold.tsv"
    path.write_text("pos\t很好\n", encoding="utf-8")
    assert main(["predict", str(models["tflite"]), "--file", str(path), "--labelled", "--threads", "1"]) == 0
    assert capsys.readouterr().out.startswith("pos\tpos\t")


def test_bad_model_file_is_one_line_on_stderr_and_nonzero(tmp_path, capsys):
    path = tmp_path / "broken.tflite"
    path.write_bytes(b"nonsense")
    assert main(["predict", str(path), "好"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("albert-edge predict: error:") and "broken.tflite" in err and "\n" not in err


def test_empty_text_argument_is_a_clear_error(models, capsys):
    assert main(["predict", str(models["tflite"]), "  "]) != 0
    assert "empty" in capsys.readouterr().err
