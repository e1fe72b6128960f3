"""The token-classification test model: a tiny BertForTokenClassification fine-tuned with torch on the
sentences of tests/support/ner_data.py (BIO tags from their character spans), saved and converted.

Shared by tests/test_runtime_token_classifier.py and the Android NER fixtures
(tests/support/android_fixtures.py), which trains its SentencePiece ALBERT with the same loop.
Needs torch and transformers: test modules ``importorskip`` them before importing this.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.tokenizer import WordPieceTokenizer
from tests.support.ner_data import LABELS, sentences, vocab

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MAX_SEQ_LEN = 32


def bio_tags(tokens: list[tuple[str, int, int]], entities: list[tuple[int, int, str]]) -> list[str]:
    """BIO tag per token from character-span entities (a token inside a span takes its type)."""
    tags = ["O"] * len(tokens)
    for s, e, typ in entities:
        inside = [i for i, (_, a, b) in enumerate(tokens) if a >= s and b <= e]
        for k, i in enumerate(inside):
            tags[i] = ("B-" if k == 0 else "I-") + typ
    return tags


def train_and_convert(root):
    """Fine-tune, save_pretrained into ``root/ckpt``, convert into ``root/out``; (ckpt, out)."""
    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint

    ckpt = root / "ckpt"
    ckpt.mkdir()
    words = vocab()
    (ckpt / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    tok = WordPieceTokenizer(words, do_lower_case=True)

    def make_model():
        config = transformers.BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                                         num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
                                         label2id=label_ids())
        return transformers.BertForTokenClassification(config)

    fine_tune(tok, make_model, 250, ckpt)
    out = root / "out"
    convert_checkpoint(ckpt, out, ConvertOptions(formats="tflite,onnx", max_seq_len=MAX_SEQ_LEN))
    return ckpt, out


def label_ids() -> dict[str, int]:
    """Label -> class id, in ner_data.LABELS order (the models' id2label)."""
    return {label: i for i, label in enumerate(LABELS)}


def fine_tune(tok, make_model, steps: int, ckpt) -> None:
    """Fine-tune ``make_model()`` on training_set() tokenized by ``tok`` (BIO tags from the char
    spans), ``steps`` AdamW steps of 32 sentences, seeds fixed; save_pretrained into ``ckpt``.

    One loop for the WordPiece BERT here and the SentencePiece ALBERT of tests/support/android_fixtures.py,
    so both fixtures are trained the same way.
    """
    label_id = label_ids()
    rows = []
    for text, ents in training_set():
        tokens = tok.tokenize_with_offsets(text)
        ids = [tok.cls_id] + tok.convert_tokens_to_ids([t for t, _, _ in tokens]) + [tok.sep_id]
        rows.append((ids, [-100] + [label_id[t] for t in bio_tags(tokens, ents)] + [-100]))
    torch.manual_seed(0)
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        batch = [rows[i] for i in rng.choice(len(rows), 32, replace=False)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([ids + [0] * (width - len(ids)) for ids, _ in batch])
        labels = torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])
        loss = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(str(ckpt))


def training_set():
    return sentences(seed=1, n=400) + sentences(seed=11, n=250, chinese=True)


def model_file(out, suffix):
    files = sorted(out.glob(f"*{suffix}"))
    assert len(files) == 1, files
    return files[0]
