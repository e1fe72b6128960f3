"""``albert-edge convert`` on bad input: one clear line, non-zero exit, no model file left behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.convert import ConvertOptions, convert_checkpoint, parity
from albert_edge.errors import ConversionError
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.tf1 import write_tf1_checkpoint

SMALL = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, embedding_order="project_then_add")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("small_ckpt")
    write_tf1_checkpoint(random_weights(SMALL, num_labels=2, seed=1), directory / "model.ckpt", scheme="brightmart")
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["convert", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def model_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*") if p.suffix in (".tflite", ".onnx") or ".partial" in p.name) \
        if directory.exists() else []


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("albert-edge convert: error:"), err
    for fragment in fragments:
        assert fragment in lines[0]


def copy_checkpoint(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target / "model.ckpt"


def test_small_checkpoint_converts_and_prints_the_parity_table(checkpoint_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, stdout, _ = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(out), "--labels", "neg,pos",
                              "--max-seq-len", "32")
    assert code == 0
    assert model_files(out) == ["model_fp32.onnx", "model_fp32.tflite"]
    assert "model_fp32.tflite" in stdout and "pass" in stdout
    assert json.loads((out / "conversion_report.json").read_text())["max_seq_len"] == 32


def test_unknown_format_is_refused_before_any_work(checkpoint_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(out), "--formats", "tflite,coreml")
    assert_one_line_error(code, err, "coreml")
    assert model_files(out) == []


def test_missing_checkpoint_names_the_path(tmp_path, capsys):
    code, _, err = run_cli(capsys, str(tmp_path / "nothing" / "model.ckpt"), "--out", str(tmp_path / "out"))
    assert_one_line_error(code, err, "nothing")


def test_truncated_checkpoint_data_is_a_one_line_error(checkpoint_dir, tmp_path, capsys):
    prefix = copy_checkpoint(checkpoint_dir, tmp_path / "ckpt")
    data = Path(f"{prefix}.data-00000-of-00001")
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    code, _, err = run_cli(capsys, str(prefix), "--out", str(tmp_path / "out"))
    assert_one_line_error(code, err)
    assert model_files(tmp_path / "out") == []


def test_config_that_disagrees_with_the_weights_is_a_one_line_error(checkpoint_dir, tmp_path, capsys):
    prefix = copy_checkpoint(checkpoint_dir, tmp_path / "ckpt")
    config_path = prefix.parent / "albert_config.json"
    config = json.loads(config_path.read_text())
    config["intermediate_size"] = 64
    config_path.write_text(json.dumps(config))
    code, _, err = run_cli(capsys, str(prefix), "--out", str(tmp_path / "out"))
    assert_one_line_error(code, err)
    assert model_files(tmp_path / "out") == []


def test_label_count_must_match_the_classifier_width(checkpoint_dir, tmp_path, capsys):
    code, _, err = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(tmp_path / "out"),
                           "--labels", "neg,neutral,pos")
    assert_one_line_error(code, err, "3 names", "2 outputs")
    assert model_files(tmp_path / "out") == []


def test_max_seq_len_beyond_position_embeddings_is_refused(checkpoint_dir, tmp_path, capsys):
    code, _, err = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(tmp_path / "out"),
                           "--max-seq-len", "65")
    assert_one_line_error(code, err, "65", "max_position_embeddings 64")


def test_unwritable_output_directory_is_a_one_line_error(checkpoint_dir, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    code, _, err = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(blocker / "out"))
    assert_one_line_error(code, err, "not writable")


def test_checkpoint_without_a_vocab_asks_for_one(checkpoint_dir, tmp_path, capsys):
    prefix = copy_checkpoint(checkpoint_dir, tmp_path / "ckpt")
    (prefix.parent / "vocab.txt").unlink()
    code, _, err = run_cli(capsys, str(prefix), "--out", str(tmp_path / "out"))
    assert_one_line_error(code, err, "vocab.txt", "--vocab")
    assert model_files(tmp_path / "out") == []


def test_vocab_larger_than_the_embedding_table_is_refused(checkpoint_dir, tmp_path, capsys):
    vocab = tmp_path / "big_vocab.txt"
    vocab.write_text("\n".join(VOCAB + [f"extra{i}" for i in range(10)]) + "\n", encoding="utf-8")
    code, _, err = run_cli(capsys, str(checkpoint_dir / "model.ckpt"), "--out", str(tmp_path / "out"),
                           "--vocab", str(vocab))
    assert_one_line_error(code, err, "130 tokens", "120 rows")


def test_failed_parity_fails_the_conversion_and_leaves_no_model_file(checkpoint_dir, tmp_path, monkeypatch):
    monkeypatch.setitem(parity.TOLERANCES, "fp32", {"logits": 1e-12, "hidden": 1e-12})
    out = tmp_path / "out"
    with pytest.raises(ConversionError, match="parity check failed"):
        convert_checkpoint(checkpoint_dir / "model.ckpt", out, ConvertOptions(formats="onnx", max_seq_len=16))
    assert model_files(out) == []
    assert not (out / "conversion_report.json").exists()
