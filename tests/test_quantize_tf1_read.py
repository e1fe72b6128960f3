"""quantize reads a TF1 checkpoint without importing TensorFlow in its own process (issue #36: a 5-13 s import
for a read the bundle reader does in under a second, record 0250); the converter child, which imports it
for its conversions anyway, verifies the data shard's checksums, so a damaged shard is still one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.convert.child_process import IN_PROCESS_ENV
from albert_edge.model import AlbertConfig, random_weights

pytest.importorskip("tensorflow")
from albert_edge.model.tf1 import write_tf1_checkpoint  # noqa: E402

CONFIG = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=64, embedding_order="project_then_add")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tf1(tmp_path_factory) -> tuple[Path, Path]:
    """(checkpoint prefix, calib.txt) of a tiny brightmart-named classifier."""
    root = tmp_path_factory.mktemp("tf1")
    prefix = write_tf1_checkpoint(random_weights(CONFIG, num_labels=2, seed=4), root / "model.ckpt",
                                  scheme="brightmart")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    calib = root / "calib.txt"
    calib.write_text("\n".join(" ".join(f"tok{(7 * i + j) % 115}" for j in range(3 + i % 9)) for i in range(40)) + "\n",
                     encoding="utf-8")
    return Path(prefix), calib


def test_quantize_auto_of_a_tf1_checkpoint_never_imports_tensorflow_in_this_process(tf1, tmp_path):
    prefix, calib = tf1
    out = tmp_path / "q"
    script = (
        "import json, sys\n"
        "import albert_edge.convert.child_process as child\n"
        "from albert_edge.quantize.pipeline import quantize_checkpoint\n"
        "from albert_edge.errors import BudgetNotMetError\n"
        "calls, start = [], child.start_in_child\n"
        "def queued(fn, *args, **kwargs):\n"
        "    calls.append(fn.__name__)\n"
        "    return start(fn, *args, **kwargs)\n"
        "child.start_in_child = queued\n"
        "try:\n"
        f"    quantize_checkpoint({str(prefix)!r}, {str(out)!r}, {str(calib)!r}, mode='auto', rounds=1,\n"
        "                        max_seq_len=16, seq_len=16, min_agreement=0.5)\n"
        "except BudgetNotMetError:\n"
        "    pass\n"
        "print(json.dumps({'tensorflow': 'tensorflow' in sys.modules, 'calls': calls}))\n")
    env = {k: v for k, v in os.environ.items() if k != IN_PROCESS_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["tensorflow"] is False
    # The child is prepared first (its TensorFlow import overlaps this process's work), once, and every
    # conversion of the mode is queued behind fp32 at once.
    assert seen["calls"][:2] == ["prepare_child", "convert_fp32"] and seen["calls"].count("prepare_child") == 1
    assert seen["calls"][2:4] == ["convert_after_fp32", "convert_after_fp32"]  # dynamic_int8, int8_fc
    # The run did the work it would have done: the TFLite files came from the child.
    report = json.loads((out / "quantize_report.json").read_text())
    assert any(v["format"] == "tflite" and v["name"] == "dynamic_int8" and v.get("file") for v in report["variants"])


def test_a_flipped_byte_of_the_data_shard_is_still_one_line_from_quantize(tf1, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(IN_PROCESS_ENV, raising=False)
    prefix, calib = tf1
    damaged = tmp_path / "ckpt"
    damaged.mkdir()
    for path in prefix.parent.iterdir():
        (damaged / path.name).write_bytes(path.read_bytes())
    shard = damaged / "model.ckpt.data-00000-of-00001"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x40  # a float's bits: the bundle reader alone would read a wrong weight
    shard.write_bytes(bytes(data))
    out = tmp_path / "out"
    code = main(["quantize", str(damaged / "model.ckpt"), "--calib", str(calib), "--mode", "dynamic",
                 "--max-seq-len", "16", "--rounds", "1", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert str(damaged / "model.ckpt") in err[0] and "checksum" in err[0].lower(), err
    assert not out.exists() or not any(p.suffix in (".tflite", ".onnx") for p in out.rglob("*"))
