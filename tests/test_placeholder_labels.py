"""``convert`` and ``quantize`` warn, in one stderr line, when a classifier's labels are LABEL_i placeholders.

The files still record the placeholders (one name per output); the line says how to give real names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.convert.pipeline import placeholder_labels, placeholder_labels_warning
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.runtime.pack import read_pack

# add_then_project: the Hugging Face ALBERT layout, so write_hf_checkpoint accepts it.
SMALL = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, hidden_act="gelu_exact")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]


def _hf_checkpoint(directory: Path, id2label: dict[str, str] | None = None, pooler: bool = True) -> Path:
    weights = random_weights(SMALL, num_labels=3, seed=4)
    if not pooler:  # a *ForTokenClassification checkpoint: no pooler, classifier on every token
        weights.tensors = {k: v for k, v in weights.tensors.items() if not k.startswith("pooler.")}
    write_hf_checkpoint(weights, directory)
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    if id2label is not None:
        config = json.loads((directory / "config.json").read_text())
        config["id2label"] = id2label
        config["label2id"] = {v: int(k) for k, v in id2label.items()}
        (directory / "config.json").write_text(json.dumps(config))
    return directory


def _convert(capsys, checkpoint: Path, out: Path, *extra: str) -> tuple[list[str], str]:
    # --no-progress: these tests count the warning lines on stderr; the step summary lines a successful
    # run writes there without a terminal (albert_edge.progress) are tested in test_progress.py.
    code = main(["convert", str(checkpoint), "--out", str(out), "--formats", "onnx", "--max-seq-len", "16",
                 "--no-progress", *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.err.strip().splitlines(), captured.out


def test_only_the_hugging_face_default_sequence_counts_as_placeholders():
    assert placeholder_labels(["LABEL_0", "LABEL_1"])
    assert not placeholder_labels(["LABEL_1", "LABEL_0"])
    assert not placeholder_labels(["neg", "pos"]) and not placeholder_labels(None) and not placeholder_labels([])
    assert placeholder_labels_warning(["neg", "pos"]) is None


def test_convert_warns_once_about_default_labels_and_still_records_them(tmp_path, capsys):
    checkpoint = _hf_checkpoint(tmp_path / "hf", {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"})
    err, out = _convert(capsys, checkpoint, tmp_path / "out")
    warnings = [line for line in err if line.startswith("warning:")]
    assert len(warnings) == 1 and len(err) == 1, err
    assert "LABEL_0,LABEL_1,LABEL_2" in warnings[0] and "placeholders" in warnings[0]
    assert "albert-edge convert ... --labels" in warnings[0]
    assert "warning" not in out
    assert read_pack(tmp_path / "out" / "model_fp32.onnx").labels == ("LABEL_0", "LABEL_1", "LABEL_2")


def test_convert_does_not_warn_with_real_names(tmp_path, capsys):
    named = _hf_checkpoint(tmp_path / "hf", {"0": "sad", "1": "calm", "2": "glad"})
    err, _ = _convert(capsys, named, tmp_path / "out")
    assert not [line for line in err if line.startswith("warning:")]
    assert read_pack(tmp_path / "out" / "model_fp32.onnx").labels == ("sad", "calm", "glad")
    err, _ = _convert(capsys, named, tmp_path / "out2", "--labels", "a,b,c")
    assert not [line for line in err if line.startswith("warning:")]


def test_convert_warns_for_a_token_classifier_without_names(tmp_path, capsys):
    checkpoint = _hf_checkpoint(tmp_path / "hf", pooler=False)
    err, _ = _convert(capsys, checkpoint, tmp_path / "out")
    assert len([line for line in err if line.startswith("warning:")]) == 1, err
    pack = read_pack(tmp_path / "out" / "model_fp32.onnx")
    assert pack.task == "token_classification" and pack.labels == ("LABEL_0", "LABEL_1", "LABEL_2")


def test_convert_of_an_embedding_model_has_no_label_warning(tmp_path, capsys):
    checkpoint = _hf_checkpoint(tmp_path / "hf")
    err, _ = _convert(capsys, checkpoint, tmp_path / "out", "--task", "feature_extraction")
    assert not [line for line in err if line.startswith("warning:")]


@pytest.mark.parametrize("names", [None, "x,y,z"])
def test_quantize_warns_once_about_default_labels(tmp_path, capsys, names):
    checkpoint = _hf_checkpoint(tmp_path / "hf")
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(" ".join(f"tok{(i * 7 + j) % 115}" for j in range(5 + i % 6)) for i in range(16)) + "\n")
    argv = ["quantize", str(checkpoint), "--calib", str(calib), "--mode", "dynamic", "--formats", "tflite",
            "--out", str(tmp_path / "q"),
            "--rounds", "1", "--threads", "1", "--max-seq-len", "16"]
    code = main(argv + (["--labels", names] if names else []))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    warnings = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    expected = ("LABEL_0", "LABEL_1", "LABEL_2") if names is None else tuple(names.split(","))
    assert read_pack(tmp_path / "q" / "variants" / "dynamic_int8.tflite").labels == expected
    if names is None:
        assert len(warnings) == 1 and "albert-edge quantize ... --labels" in warnings[0], captured.err
    else:
        assert warnings == []


def test_convert_reads_a_labels_txt_beside_the_checkpoint_as_quantize_does(tmp_path, capsys):
    checkpoint = _hf_checkpoint(tmp_path / "hf")
    (checkpoint / "labels.txt").write_text("sad\ncalm\nglad\n", encoding="utf-8")
    err, _ = _convert(capsys, checkpoint, tmp_path / "out")
    assert err == []
    assert read_pack(tmp_path / "out" / "model_fp32.onnx").labels == ("sad", "calm", "glad")
    # A labels.txt of another width is not this classifier's: placeholders, and the warning says so.
    (checkpoint / "labels.txt").write_text("sad\nglad\n", encoding="utf-8")
    err, _ = _convert(capsys, checkpoint, tmp_path / "out2")
    assert len(err) == 1 and "no labels.txt, no real config.json id2label" in err[0], err
