"""The tokenizer asset packed by convert: found beside the checkpoint, or given, and read back identical."""

from __future__ import annotations

import io
import json
import shutil

import pytest

from albert_edge.convert import ConvertOptions, convert_checkpoint
from albert_edge.convert.assets import find_tokenizer_asset
from albert_edge.errors import TokenizerError
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.runtime.pack import read_pack

WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s"]


def spiece_model_bytes() -> bytes:
    """A small ALBERT-style SentencePiece model (<pad>=0, <unk>=1, [CLS]/[SEP]/[MASK] user symbols)."""
    spm = pytest.importorskip("sentencepiece")
    words = ["alpha", "beta", "gamma", "delta", "edge", "phone", "model", "albert", "tiny", "convert"]
    sentences = [" ".join(words[(i * j) % len(words)] for j in range(1, 9)) for i in range(200)]
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=buffer, vocab_size=30, hard_vocab_limit=False,
                                   pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                                   user_defined_symbols=["[CLS]", "[SEP]", "[MASK]"], model_type="unigram",
                                   minloglevel=2)
    return buffer.getvalue()


def test_vocab_txt_beside_a_tf1_prefix_is_found(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDPIECE) + "\n", encoding="utf-8")
    asset = find_tokenizer_asset(tmp_path / "model.ckpt")
    assert (asset.kind, asset.vocab_size, asset.do_lower_case) == ("wordpiece", len(WORDPIECE), True)
    assert asset.data == (tmp_path / "vocab.txt").read_bytes()


def test_explicit_vocab_wins_and_tokenizer_config_sets_casing(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDPIECE) + "\n", encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    other = tmp_path / "other" / "my_vocab.txt"
    other.parent.mkdir()
    other.write_text("\n".join(WORDPIECE + ["extra"]) + "\n", encoding="utf-8")
    asset = find_tokenizer_asset(tmp_path, vocab=other)
    assert asset.path == other and asset.vocab_size == len(WORDPIECE) + 1
    assert asset.do_lower_case is False


def test_vocab_without_special_tokens_is_refused(tmp_path):
    (tmp_path / "vocab.txt").write_text("hello\nworld\n", encoding="utf-8")
    with pytest.raises(TokenizerError):
        find_tokenizer_asset(tmp_path)


def test_missing_explicit_vocab_names_the_path(tmp_path):
    with pytest.raises(TokenizerError, match="nope.txt"):
        find_tokenizer_asset(tmp_path, vocab=tmp_path / "nope.txt")


def test_hf_checkpoint_with_spiece_model_packs_it_byte_identical(tmp_path):
    model_bytes = spiece_model_bytes()
    config = AlbertConfig(vocab_size=64, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, max_position_embeddings=32,
                          hidden_act="gelu_exact")
    checkpoint = tmp_path / "hf"
    write_hf_checkpoint(random_weights(config, num_labels=3, seed=2), checkpoint)
    (checkpoint / "spiece.model").write_bytes(model_bytes)
    out = tmp_path / "out"
    report = convert_checkpoint(checkpoint, out, ConvertOptions(formats="onnx", labels=["a", "b", "c"]))
    assert report.tokenizer["type"] == "sentencepiece" and report.max_seq_len == 32
    pack = read_pack(out / "model_fp32.onnx")
    assert pack.tokenizer_type == "sentencepiece" and pack.tokenizer_asset == model_bytes
    assert pack.labels == ("a", "b", "c") and pack.source["scheme"] == report.scheme
    shutil.rmtree(out)
