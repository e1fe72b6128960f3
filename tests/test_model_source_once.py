"""``ModelSource`` resolves task, labels and tokenizer once; convert and quantize stop re-opening the
path (issue #38, item 4).

The proof is behavioural: after ``convert`` ran on a source, the folder's labels.txt and vocab.txt
are removed, and ``quantize`` on the same source still packs the same names and vocab.
About 20 s (a tiny random model, one dynamic quantize).
"""

from __future__ import annotations

from pathlib import Path

from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
from albert_edge.convert.source import ModelSource
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.quantize.options import QuantizeOptions
from albert_edge.quantize.pipeline import quantize_checkpoint
from albert_edge.runtime.pack import read_pack
from tests.support.open_output import open_model

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


def test_quantize_after_convert_reads_nothing_more_from_the_folder(tmp_path):
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=2), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (ckpt / "labels.txt").write_text("差\n好\n", encoding="utf-8")
    source = ModelSource.load(ckpt)
    convert_checkpoint(source, tmp_path / "c", ConvertOptions(formats=("tflite",)))
    for name in ("vocab.txt", "labels.txt"):
        (ckpt / name).unlink()  # a second reader of the folder would now fail or fall back to LABEL_i
    report = quantize_checkpoint(source, tmp_path / "q", None, QuantizeOptions(mode="fp16", formats="tflite",
                                                                               rounds=1, num_threads=1))
    converted, quantized = read_pack(tmp_path / "c" / "model_fp32.tflite"), read_pack(Path(report.report_path).parent
                                                                                     / "variants" / "fp16.tflite")
    assert quantized.labels == converted.labels == ("差", "好")
    assert quantized.tokenizer_asset == converted.tokenizer_asset
    open_model(tmp_path / "q" / "variants" / "fp16.tflite")


def test_the_same_question_is_answered_from_memory(tmp_path, monkeypatch):
    import albert_edge.convert.source as source_module

    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=2), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    source = ModelSource.load(ckpt)
    calls = []
    real = source_module.labels_txt_beside
    monkeypatch.setattr(source_module, "labels_txt_beside", lambda *a: calls.append(a) or real(*a))
    assert source.checkpoint_labels(2) is None and source.checkpoint_labels(2) is None
    assert source.task(None) is source.task(None)
    assert source.tokenizer_asset() is source.tokenizer_asset()
    assert len(calls) == 1
