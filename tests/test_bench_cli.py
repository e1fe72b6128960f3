"""``albert-edge bench``: arguments, the printed table, the files, and importing phone logs."""

from __future__ import annotations

import json

import pytest

from tests.support.benchmark_logs import PLAIN_LOG, PROFILED_LOG
from tests.support.bench_models import shared_models

from albert_edge.cli import main
from albert_edge.outputs.claim import MANIFEST


def test_bench_prints_the_table_and_writes_the_report_files(tmp_path, capsys):
    models = shared_models()
    out = tmp_path / "report"
    code = main(["bench", str(models["fp32"]), str(models["onnx"]), "--threads", "1", "--seq-len", "6",
                 "--runs", "3", "--warmup", "1", "--rounds", "1", "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    # The console is the verdict block (at most 15 lines, no Markdown tables); the tables are in report.md.
    lines = printed.strip().splitlines()
    assert lines[0] == "verdict (bench):" and f"  details   {out}/report.md" in lines and len(lines) <= 16
    assert "## Sequence length" not in printed and not any(line.startswith("|") for line in lines)
    assert "| fp32-onnx | host | onnxruntime | 1 |" in (out / "report.md").read_text(encoding="utf-8")
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "report.png", "device_commands.sh", MANIFEST}


def test_bench_without_models_is_a_one_line_error(capsys):
    assert main(["bench", "--threads", "1"]) == 2
    assert "expected MODEL files" in capsys.readouterr().err


def test_bad_seq_len_is_rejected_by_the_parser(capsys):
    try:
        main(["bench", "m.tflite", "--seq-len", "16,long"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "'long': expected a positive integer or 'real'" in capsys.readouterr().err


def test_device_logs_join_the_host_report_in_one_table(tmp_path, capsys):
    models = shared_models()
    out = tmp_path / "report"
    assert main(["bench", str(models["fp32"]), "--threads", "1", "--seq-len", "64", "--runs", "2", "--warmup", "0",
                 "--rounds", "1", "--out", str(out), "--no-progress"]) == 0
    log = tmp_path / "fp32_t1_s64.log"
    log.write_text(PLAIN_LOG)
    assert main(["bench", "--import-device-log", str(log), "--variant", "fp32", "--device", "Pixel 4a",
                 "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    sources = sorted((r["source"], r["seq_len"], r["variant"]) for r in report["results"])
    assert sources == [("device", 64, "fp32"), ("host", 64, "fp32")]
    table = (out / "report.md").read_text()
    assert "| fp32 | device (Pixel 4a) | benchmark_model | 1 |" in table
    assert "57.4 (avg)" in table
    capsys.readouterr()


def test_importing_twice_replaces_rather_than_duplicates(tmp_path, capsys):
    log = tmp_path / "phone.log"
    log.write_text(PROFILED_LOG)
    for _ in range(2):
        assert main(["bench", "--import-device-log", str(log), "--out", str(tmp_path / "r")]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [(r["variant"], r["threads"], r["seq_len"]) for r in report["results"]] == [("int8_dynamic", 4, 128)]
    assert report["results"][0]["op_profile"][0]["node_type"] == "TfLiteXNNPackDelegate"
    capsys.readouterr()


@pytest.mark.parametrize("argv", [
    ["--import-peers", "peers.json", "--import-arm", "arm.json"],
    ["model.tflite", "--import-arm", "arm.json"],
    ["model.tflite", "--import-device-log", "log.txt"],
])
def test_conflicting_bench_modes_are_refused_with_one_line(argv, capsys, tmp_path):
    """#27 cause 16: an import given with another import, or with models, silently dropped one of them."""
    assert main(["bench", *argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bench:" in err[0] and "--import-" in err[0]
    assert not (tmp_path / "r").exists()


def test_a_model_with_a_vocab_under_the_timing_ids_is_benched_within_its_word_table(tmp_path):
    """The worker's random ids were 1..99 whatever the model: a 40-token vocab failed in GATHER."""
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.model.tf1 import write_tf1_checkpoint

    config = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=24, max_position_embeddings=32, embedding_order="project_then_add")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    write_tf1_checkpoint(random_weights(config, num_labels=2, seed=3), ckpt / "model.ckpt", scheme="brightmart")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(35)]
    (ckpt / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    assert main(["convert", str(ckpt / "model.ckpt"), "--out", str(tmp_path / "m"), "--no-progress"]) == 0
    models = [str(tmp_path / "m" / "model_fp32.tflite"), str(tmp_path / "m" / "model_fp32.onnx")]
    assert main(["bench", *models, "--threads", "1", "--seq-len", "8", "--runs", "2", "--warmup", "1",
                 "--rounds", "2", "--no-progress", "--out", str(tmp_path / "report")]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert len(report["results"]) == 2, report["results"]
