"""A shortened `albert-edge demo` (few runs, one thread count) on a small sample written in the test.

The shipped sample is the real thing, but converting, quantizing and benchmarking ALBERT-Tiny takes
minutes; a small ALBERT in the same brightmart TF1 format with the real file layout exercises every
stage and every output file in seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from albert_edge.inputs.data import read_tsv
from albert_edge.demo.pipeline import default_sample_dir, quick_settings, run_demo
from albert_edge.errors import DataError
from albert_edge.model import AlbertConfig, random_weights, write_tf1_checkpoint

SAMPLE = default_sample_dir()


def _small_sample(directory: Path) -> Path:
    """A brightmart-format checkpoint with the sample's real vocab, labels, splits and calibration text."""
    config = AlbertConfig(vocab_size=21128, embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=128,
                          embedding_order="project_then_add")
    weights = random_weights(config, num_labels=2, seed=3)
    directory.mkdir(parents=True)
    write_tf1_checkpoint(weights, directory / "model.ckpt-1", scheme="brightmart")
    for name in ("vocab.txt", "labels.txt", "calib.txt"):
        shutil.copy(SAMPLE / name, directory / name)
    for name in ("dev.tsv", "test.tsv"):
        lines = (SAMPLE / name).read_text(encoding="utf-8").splitlines()[:150]
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


@pytest.mark.slow  # convert, quantize, bench and report, end to end
@pytest.mark.skipif(not (SAMPLE / "vocab.txt").exists(), reason="shipped sample data not in this checkout")
def test_shortened_demo_writes_models_reports_and_predictions(tmp_path: Path) -> None:
    sample = _small_sample(tmp_path / "sample")
    out = tmp_path / "demo_out"
    settings = quick_settings(runs=3)
    settings.texts = ("物流很快，质量不错。",)
    steps: list[str] = []
    result = run_demo(out, sample=sample, settings=settings, log=lambda line: None, progress=steps.append)
    # Every stretch has a step under way (a log's heartbeat needs one): reading, the bench's judging, the examples.
    assert steps[0] == f"read {sample}" and steps[-1] == "example predictions", steps
    assert any(line.startswith("bench: accuracy of ") for line in steps), steps

    models = out / "models"
    for name in ("model_fp32.tflite", "model_fp32.onnx", "conversion_report.json", "quantize_report.json"):
        assert (models / name).is_file(), name
    assert not list(models.glob("model_fp16.*"))   # fp16 computes in fp32 on x86: neither written nor benched
    for name in ("report.json", "report.md", "report.png", "device_commands.sh"):
        assert (out / "report" / name).is_file(), name
    report = json.loads((out / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["schema_version"] >= 1
    benched = {v["name"] for v in report["variants"]}
    assert len(benched) >= 3 and not any("fp16" in name for name in benched)  # fp16 times like fp32 (record 0190)
    assert result.chosen is not None
    predictions = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    # The closing examples are rows of the held-out split with their gold labels, marked by comparison.
    split = {row.text_a: row for row in read_tsv(sample / "test.tsv")}
    assert predictions["split"] == "test.tsv" and predictions["split_size"] == len(split)
    assert len(predictions["examples"]) == quick_settings().example_count
    for item in predictions["examples"]:
        assert split[item["text"]].label == item["gold"] and split[item["text"]].line == item["line"]
        assert item["label"] in ("neg", "pos") and item["correct"] == (item["label"] == item["gold"])
    assert predictions["split_accuracy"] == round(predictions["split_correct"] / len(split), 4)
    assert [t["text"] for t in predictions["texts"]] == list(settings.texts) and "gold" not in predictions["texts"][0]
    assert json.loads((out / "demo.json").read_text(encoding="utf-8"))["chosen"] == result.chosen
    # The file shipped, predicted with and described by the verdict is models/model.tflite, the chosen variant.
    shipped = json.loads((models / "quantize_report.json").read_text(encoding="utf-8"))["shipped"]["model.tflite"]
    assert shipped["variant"] == result.chosen and predictions["model"] == "model.tflite"
    assert (models / "model.tflite").read_bytes() == (models / shipped["copy_of"]).read_bytes()
    assert result.verdict[0] == "verdict (demo):" and len(result.verdict) <= 15
    assert f"  ship      {models / 'model.tflite'} ({result.chosen})" in result.verdict
    assert json.loads((out / "demo.json").read_text(encoding="utf-8"))["verdict"] == result.verdict


def test_demo_without_sample_names_the_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="demo sample directory not found"):
        run_demo(tmp_path / "out", sample=tmp_path / "nowhere", settings=quick_settings(), log=lambda line: None)


def test_demo_rejects_a_bad_thread_list_with_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    from albert_edge.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--threads", "0"])
    assert exit_info.value.code == 2
    assert "argument --threads: '0': expected positive integers" in capsys.readouterr().err


def test_the_demo_refuses_at_once_to_replace_a_predictions_file_it_did_not_write(tmp_path: Path) -> None:
    """The closing pair goes through OutputSet like every stage's files; a foreign predictions.json is
    refused before the minutes of conversion, not at the end, and is left as it was."""
    from albert_edge.errors import OutputError

    out = tmp_path / "demo_out"
    out.mkdir()
    (out / "predictions.json").write_text("mine\n", encoding="utf-8")
    with pytest.raises(OutputError, match="predictions.json"):
        run_demo(out, sample=SAMPLE, settings=quick_settings(), log=lambda line: None)
    assert (out / "predictions.json").read_text(encoding="utf-8") == "mine\n"
    assert not (out / "models").exists()
