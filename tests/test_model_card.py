"""``albert-edge card OUT``: a model card from the reports a real convert, quantize and bench run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.tf1 import write_tf1_checkpoint
from albert_edge.model_card import CardInputs, front_matter, hub_base_model, table

# 120 tokens: bench feeds random ids below 100 (bench_latency.worker --id-high).
SMALL = AlbertConfig(vocab_size=120, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=24, max_position_embeddings=32, embedding_order="project_then_add")
WORDS = [f"tok{i}" for i in range(115)]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """OUT after convert + quantize (dynamic) of a tiny checkpoint, and a bench of its fp32 file in OUT/bench."""
    root = tmp_path_factory.mktemp("card")
    ckpt = root / "tiny_sentiment"
    ckpt.mkdir()
    write_tf1_checkpoint(random_weights(SMALL, num_labels=2, seed=5), ckpt / "model.ckpt", scheme="brightmart")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    calib = root / "calib.txt"
    calib.write_text("\n".join(" ".join(WORDS[(i * 7 + j) % 115] for j in range(1 + i % 9)) for i in range(48)) + "\n",
                     encoding="utf-8")
    out = root / "out"
    common = ["--max-seq-len", "16", "--labels", "neg,pos", "--no-progress"]
    assert main(["convert", str(ckpt / "model.ckpt"), "--out", str(out), "--formats", "tflite", *common]) == 0
    assert main(["quantize", str(ckpt / "model.ckpt"), "--calib", str(calib), "--mode", "dynamic", "--formats", "tflite",
                 "--out", str(out),
                 "--rounds", "1", "--threads", "1", *common]) == 0
    assert main(["bench", str(out / "model_fp32.tflite"), "--threads", "1", "--seq-len", "8", "--runs", "2",
                 "--warmup", "0", "--rounds", "1", "--out", str(out / "bench"), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def card(run_dir: Path) -> str:
    assert main(["card", str(run_dir), "--bench", str(run_dir / "bench")]) == 0
    return (run_dir / "README.md").read_text(encoding="utf-8")


def test_front_matter_names_license_task_and_formats(card):
    head = card.split("---")[1].splitlines()
    assert "license: apache-2.0" in head and "pipeline_tag: text-classification" in head
    assert {"- albert-edge", "- tflite", "- quantized"} <= set(head)
    assert not any(line.startswith("base_model:") for line in head)  # a local checkpoint: no Hub base model


def test_the_tables_restate_the_reports(card, run_dir):
    conversion = json.loads((run_dir / "conversion_report.json").read_text())
    quantize = json.loads((run_dir / "quantize_report.json").read_text())
    bench = json.loads((run_dir / "bench" / "report.json").read_text())
    fp32 = conversion["files"][0]
    assert f"| model_fp32.tflite | tflite | fp32 | {fp32['size_bytes'] / 1e6:.3f} |" in card
    for variant in quantize["variants"]:
        assert f"| {variant['file']} | {variant['size_bytes'] / 1e6:.3f} |" in card
    result = bench["results"][0]
    assert f"| {result['variant']} | {result['backend']} | 1 | 8 | {result['latency_ms']['median']:.3f} |" in card
    assert "## Files" in card and "## Quantization" in card and "## Latency" in card


def test_the_plot_is_copied_beside_the_card_and_no_local_path_leaks(card, run_dir):
    assert "![latency and accuracy per variant](bench_report.png)" in card
    assert (run_dir / "bench_report.png").read_bytes() == (run_dir / "bench" / "report.png").read_bytes()
    assert str(run_dir.parent) not in card
    assert "# tiny_sentiment for on-device inference" in card and "`tiny_sentiment/model.ckpt`" in card


def test_a_readme_albert_edge_did_not_write_is_left_alone(run_dir, tmp_path, capsys):
    own = tmp_path / "shared"
    own.mkdir()
    (own / "conversion_report.json").write_bytes((run_dir / "conversion_report.json").read_bytes())
    (own / "README.md").write_text("my notes\n", encoding="utf-8")
    assert main(["card", str(own)]) == 2
    assert (own / "README.md").read_text(encoding="utf-8") == "my notes\n"
    assert capsys.readouterr().err.count("\n") == 1


def test_a_folder_without_reports_is_a_one_line_error(tmp_path, capsys):
    assert main(["card", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "conversion_report.json" in err


def test_a_hub_snapshot_is_the_base_model():
    path = "/home/u/.cache/huggingface/hub/models--acme--tiny-bert/snapshots/0123abc"
    assert hub_base_model(path) == "acme/tiny-bert"
    inputs = CardInputs({"checkpoint": path, "task": "token_classification", "files": []}, None, None, None)
    block = front_matter(inputs)
    assert "base_model: acme/tiny-bert" in block and "pipeline_tag: token-classification" in block


def test_a_cell_cannot_break_its_table():
    assert table(["label"], [["a|b\nc"]]).splitlines()[-1] == "| a\\|b c |"


def test_the_card_ships_the_file_quantize_chose_by_its_name():
    from albert_edge.model_card import CardInputs, render_card

    quantize = {"checkpoint": "/x/tiny", "mode": "auto", "status": "chosen", "chosen": "tflite:dynamic_int8_col",
                "variants": [{"name": "dynamic_int8_col", "format": "tflite", "file": "variants/dynamic_int8_col.tflite",
                              "size_bytes": 4_380_000, "ratio_vs_fp32": 0.37}],
                "shipped": {"model.tflite": {"variant": "dynamic_int8_col", "key": "tflite:dynamic_int8_col",
                                             "copy_of": "variants/dynamic_int8_col.tflite", "size_bytes": 4_380_000,
                                             "ratio_vs_fp32": 0.37, "drift": "drop 0.06 pt, agreement 99.8%"}}}
    card = render_card(CardInputs(None, quantize, None, None))
    assert 'albert-edge predict model.tflite "some text"' in card
    assert ("**Ship `model.tflite`**: the chosen variant `dynamic_int8_col` (a copy of "
            "`variants/dynamic_int8_col.tflite`), 4.38 MB, 0.37x of fp32's time, drop 0.06 pt, agreement 99.8%.") in card
