"""A written file is a read file (issue #37, causes 1, 3, 5 and 6).

* ``quantize`` on a checkpoint with fewer than 128 positions writes files every reader opens (it used
  to pack max_seq_len 128 over a 32-row position table: every file refused, yet reported CHOSEN);
  ``inspect`` runs the runtime's own pack-vs-graph check, so it cannot call such a file consistent.
* ``quantize --formats onnx`` builds and writes no TFLite variant.
* ``sentence_bert_config.json``'s ``max_seq_length`` and ``do_lower_case`` reach the pack.
* ``repack --out`` naming an albert-edge output folder is refused; the folder stays as it was.
About 40 s (tiny random models).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.convert.tflite_metadata import attach_standard_metadata
from albert_edge.runtime.pack import read_pack, strip_tflite_pack
from tests.support.open_output import SHORT_VOCAB, open_model, short_classifier, written_files

VOCAB = SHORT_VOCAB


@pytest.fixture(scope="module")
def short(tmp_path_factory) -> dict[str, Path]:
    """A classifier checkpoint whose position table has 32 rows, and calibration texts."""
    root = tmp_path_factory.mktemp("short")
    ckpt, calib = short_classifier(root, seed=1)
    return {"ckpt": ckpt, "calib": calib, "root": root}


def quantize(short: dict[str, Path], out: Path, *extra: str) -> None:
    argv = ["quantize", short["ckpt"], "--calib", short["calib"], "--labels", "neg,pos", "--rounds", "1",
            "--threads", "1", "--out", out, "--no-progress", *extra]
    assert main([str(a) for a in argv]) == 0


def test_quantize_fits_max_seq_len_to_the_position_table_and_every_file_opens(short, tmp_path):
    out = tmp_path / "q"
    quantize(short, out, "--mode", "dynamic", "--variants", "dynamic_int8,dynamic_int4,onnx_int4")
    models = [p for name, p in written_files(out).items() if name.endswith((".tflite", ".onnx"))]
    assert len(models) >= 4, models
    for path in models:
        assert read_pack(path).max_seq_len == 32, path
        open_model(path, "好的了是在我" * 20)  # longer than the table: truncated, not refused
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["calibration"]["max_seq_len"] == 32


def test_quantize_refuses_an_explicit_max_seq_len_beyond_the_positions(short, tmp_path, capsys):
    out = tmp_path / "q"
    code = main([str(a) for a in ["quantize", short["ckpt"], "--calib", short["calib"], "--out", out,
                                  "--max-seq-len", "64", "--no-progress"]])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "max_position_embeddings 32" in err[0], err
    assert not out.exists() or not any(out.iterdir())


def test_quantize_formats_onnx_writes_and_builds_no_tflite(short, tmp_path):
    out = tmp_path / "q"
    quantize(short, out, "--mode", "dynamic", "--formats", "onnx")
    names = set(written_files(out))
    assert not any(name.endswith(".tflite") for name in names), names
    assert any(name.endswith(".onnx") for name in names), names
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    tflite = [v for v in report["variants"] if v["format"] == "tflite"]
    assert [v["name"] for v in tflite] == ["fp32"] and not tflite[0].get("file")  # the reference only
    for name in names:
        if name.endswith(".onnx"):
            open_model(out / name)


def test_inspect_runs_the_runtime_check_and_names_a_pack_the_graph_cannot_serve(short, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["convert", str(short["ckpt"]), "--out", str(out), "--formats", "tflite", "--no-progress"]) == 0
    good = out / "model_fp32.tflite"
    assert main(["inspect", str(good)]) == 0
    assert "consistent" in capsys.readouterr().out
    bad = tmp_path / "bad.tflite"
    data = good.read_bytes()
    # What quantize used to write: pack and standard metadata agree with each other (128), not with the graph (32).
    bad.write_bytes(attach_standard_metadata(strip_tflite_pack(data), replace(read_pack(good), max_seq_len=128)))
    code = main(["inspect", str(bad)])
    printed = capsys.readouterr().out
    assert code == 1 and "DISAGREES" in printed and "consistent:" not in printed, printed
    with pytest.raises(Exception, match="128"):
        open_model(bad)  # the runtime refuses it for the same reason


def test_sentence_bert_config_length_and_lower_case_reach_the_pack(tmp_path):
    from tests.support.st_folder import write_st_folder

    ckpt, _ = write_st_folder(tmp_path / "st")
    (ckpt / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 8, "do_lower_case": True}),
                                                    encoding="utf-8")
    out = tmp_path / "out"
    assert main(["convert", str(ckpt), "--out", str(out), "--formats", "tflite", "--no-progress"]) == 0
    pack = read_pack(out / "model_fp32.tflite")
    assert pack.max_seq_len == 8 and pack.do_lower_case is True
    from albert_edge.runtime import TextEmbedder

    embedder = TextEmbedder.from_file(out / "model_fp32.tflite", num_threads=1)
    long = "the cat sat on a mat and the dog ran in the park by the river"
    assert embedder.embed(long) == pytest.approx(embedder.embed(long.upper()))  # lower-cased like sentence-transformers
    assert embedder.embed(long) == pytest.approx(embedder.embed("the cat sat on a mat and"))  # 8 tokens with CLS/SEP


def test_a_bad_sentence_bert_config_is_one_line(tmp_path, capsys):
    from tests.support.st_folder import write_st_folder

    ckpt, _ = write_st_folder(tmp_path / "st")
    (ckpt / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": "long"}), encoding="utf-8")
    assert main(["convert", str(ckpt), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sentence_bert_config.json" in err[0] and "max_seq_length" in err[0], err


def test_repack_never_replaces_an_output_folder(short, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["convert", str(short["ckpt"]), "--out", str(out), "--formats", "tflite", "--labels", "neg,pos",
                 "--no-progress"]) == 0
    capsys.readouterr()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = {name: path.read_bytes() for name, path in written_files(out).items()}
    model = out / "model_fp32.tflite"
    code = main(["repack", str(model), "--from", str(model), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "is a folder" in err[0], err
    assert {name: path.read_bytes() for name, path in written_files(out).items()} == before


def test_finetune_fits_its_default_length_to_the_config_and_its_checkpoint_converts_and_opens(tmp_path):
    """finetune used to default to 128 tokens and refuse a 32-position config unless told --max-seq-len."""
    pytest.importorskip("tensorflow")
    from albert_edge.inputs.data import Example, write_tsv
    from albert_edge.model.config import tf1_config_dict

    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                          embedding_order="project_then_add")
    (tmp_path / "config.json").write_text(json.dumps(tf1_config_dict(config, "brightmart")), encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    texts = ["好的了是", "坏在我有", "他这好坏", "我有好的", "是在他坏", "这了我好"] * 3
    write_tsv(tmp_path / "train.tsv", [Example("pos" if "好" in t else "neg", t) for t in texts])
    write_tsv(tmp_path / "dev.tsv", [Example("pos" if "好" in t else "neg", t) for t in texts[:6]])
    out = tmp_path / "ft"
    argv = ["finetune", "--config", tmp_path / "config.json", "--vocab", tmp_path / "vocab.txt", "--train",
            tmp_path / "train.tsv", "--dev", tmp_path / "dev.tsv", "--labels", "neg,pos", "--out", out,
            "--max-steps", "2", "--batch-size", "8", "--no-progress"]
    assert main([str(a) for a in argv]) == 0
    log = json.loads((out / "finetune_log.json").read_text(encoding="utf-8"))
    assert log["settings"]["max_seq_len"] == 32
    converted = tmp_path / "converted"
    assert main(["convert", str(out), "--out", str(converted), "--formats", "tflite", "--no-progress"]) == 0
    assert open_model(converted / "model_fp32.tflite").label in ("neg", "pos")
