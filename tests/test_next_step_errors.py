"""Wrong-kind-of-input errors name the next step (issue #38): one stderr line, exit 2, and the command
to run (or the name that was meant), walked as one table.

A checkpoint where a model file is expected names `albert-edge convert`; a model file where a checkpoint
is expected names `predict` / `inspect`; a mistyped local path names the closest existing one instead of
Hugging Face offline advice; an eval file of the wrong kind names the format the task reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from tests.support.runtime_models import make_pack, onnx_bytes, weights

ROOT = Path(__file__).resolve().parents[1]
PACKED_TFLITE = ROOT / "android_demo" / "albert-core" / "src" / "test" / "resources" / "qa_model.tflite"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]

CASES = [
    # (argv with {placeholders}, what the one line must say, what it must not say)
    (["predict", "{ckpt}", "好"], "this is a checkpoint, not a model file; convert it first: albert-edge convert", None),
    (["embed", "{ckpt}", "好"], "convert it first: albert-edge convert", None),
    (["bench", "{ckpt}", "--out", "{tmp}/bench"], "convert it first: albert-edge convert", None),
    (["android-assets", "{ckpt}", "{tmp}/assets"], "convert it first: albert-edge convert", None),
    (["predict", "{ckpt}/model.safetensors", "好"], "convert it first: albert-edge convert", None),
    (["convert", "{tflite}", "--out", "{tmp}/out"], "already a TFLite model, not a checkpoint; run it with "
                                                   "albert-edge predict", "unknown checkpoint format"),
    (["convert", "{onnx}", "--out", "{tmp}/out"], "albert-edge inspect", "unknown checkpoint format"),
    (["inspect", "{onnx}x"], "checkpoint not found (did you mean", None),
    (["convert", "examples/albert_tiny_zh_sentimnet", "--out", "{tmp}/out"],
     "examples/albert_tiny_zh_sentimnet: checkpoint not found (did you mean examples/albert_tiny_zh_sentiment?)",
     "Hugging Face"),
    (["predict", "models/model_fp23.onnx", "好"], "did you mean models/model_fp32.onnx?", None),
    (["quantize", "{ckpt}", "--mode", "dynamic", "--eval", "{tmp}/dev.jsonl", "--out", "{tmp}/q"],
     "a sentence classifier's --eval is a label<TAB>text TSV", "columns"),
]


@pytest.fixture()
def world(tmp_path: Path, monkeypatch) -> dict[str, str]:
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "examples" /
                               "albert_tiny_zh_sentiment")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (tmp_path / "models").mkdir()
    onnx = tmp_path / "models" / "model_fp32.onnx"
    onnx.write_bytes(onnx_bytes(weights(0), make_pack()))
    tflite = Path(shutil.copy(PACKED_TFLITE, tmp_path / "models" / "model_fp32.tflite"))
    (tmp_path / "dev.jsonl").write_text('{"text": "好", "label": "pos"}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return {"ckpt": str(ckpt), "onnx": str(onnx), "tflite": str(tflite), "tmp": str(tmp_path)}


@pytest.mark.parametrize("argv,says,not_says", CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_wrong_input_names_the_next_step(argv, says, not_says, world, capsys) -> None:
    code = main([a.format(**world) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert says in err[0], err[0]
    assert not_says is None or not_says not in err[0], err[0]


def test_inspect_reads_an_onnx_model_as_it_reads_a_tflite(world, capsys) -> None:
    assert main(["inspect", world["onnx"]]) == 0
    out = capsys.readouterr().out
    assert "ONNX" in out and "input_ids int32" in out and "labels ['neg', 'pos']" in out
    assert "consistent" in out
