"""`quantize` without --max-seq-len fits the pack's length to the model, as `convert` does (issue #38).

Its default was a flat 128: a checkpoint with 64 positions got files whose pack said 128, which every
reader then refused ("pack max_seq_len is 128 but the graph has only 64 positions").
"""

from __future__ import annotations

from pathlib import Path

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.runtime.pack import read_pack

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


def _checkpoint(tmp_path: Path, positions: int) -> Path:
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=positions)
    checkpoint = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (checkpoint / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return checkpoint


def test_the_default_length_is_the_models_positions_when_fewer_than_128(tmp_path: Path) -> None:
    checkpoint = _checkpoint(tmp_path, positions=40)
    out = tmp_path / "out"
    assert main(["quantize", str(checkpoint), "--mode", "dynamic", "--formats", "onnx", "--labels", "neg,pos",
                 "--rounds", "1", "--out", str(out)]) == 0
    written = sorted(out.rglob("*.onnx"))
    assert written and {read_pack(p).max_seq_len for p in written} == {40}


def test_a_length_past_the_positions_is_one_line(tmp_path: Path, capsys) -> None:
    checkpoint = _checkpoint(tmp_path, positions=40)
    code = main(["quantize", str(checkpoint), "--mode", "dynamic", "--formats", "onnx", "--max-seq-len", "64",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--max-seq-len 64 exceeds max_position_embeddings 40" in err[0], err
    assert not (tmp_path / "out").exists()
