"""The shipped sample checkpoint is a real, trained brightmart ALBERT-Tiny."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from albert_edge.inputs.data import label_ids, read_tsv
from albert_edge.model import albert_tiny_zh_config, load_checkpoint, reference_forward
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "albert_tiny_zh_sentiment"


def test_sample_loads_as_brightmart_albert_tiny_with_a_two_label_head():
    weights = load_checkpoint(SAMPLE)
    assert weights.scheme == "brightmart-tf1"
    assert weights.config == albert_tiny_zh_config()
    assert weights.num_labels == 2
    assert (SAMPLE / "labels.txt").read_text().split() == ["neg", "pos"]


@pytest.mark.slow  # the sample ALBERT-Tiny on the whole held-out test split
def test_sample_classifies_held_out_reviews_as_its_log_says():
    weights = load_checkpoint(SAMPLE)
    examples = read_tsv(SAMPLE / "test.tsv", labels=("neg", "pos"))[::16]
    pre = Preprocessor(WordPieceTokenizer.from_vocab_file(SAMPLE / "vocab.txt"), max_seq_len=128)
    batch = pre.encode_batch([e.text_a for e in examples])
    logits = reference_forward(weights, batch.input_ids, batch.attention_mask, batch.token_type_ids).logits
    accuracy = float(np.mean(np.argmax(logits, -1) == label_ids(examples, ("neg", "pos"))))
    logged = json.loads((SAMPLE / "finetune_log.json").read_text())["test"]["accuracy"]
    assert abs(accuracy - logged) < 0.08
