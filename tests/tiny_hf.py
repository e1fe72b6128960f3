"""A tiny seeded transformers ALBERT or BERT model with a task head, for the task tests' parity checks.

The QA and NER tests each convert such a model and compare against transformers' own forward; one
factory keeps their configs (and the bias/LayerNorm noise that makes a dropped term show) alike.
Imported only by tests that have already ``importorskip``-ed torch and transformers.
"""

from __future__ import annotations

import torch
import transformers


def tiny_hf_model(kind: str, head: str, **extra):
    """Seeded ``transformers.{Albert,Bert}For<head>`` ("albert" or "bert"), ``extra`` added to its config."""
    torch.manual_seed(0)
    common = dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                  max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **extra)
    if kind == "albert":
        config = transformers.AlbertConfig(embedding_size=16, classifier_dropout_prob=0.0, hidden_act="gelu_new", **common)
        model = getattr(transformers, f"AlbertFor{head}")(config)
    else:
        config = transformers.BertConfig(hidden_act="gelu", **common)
        model = getattr(transformers, f"BertFor{head}")(config)
    with torch.no_grad():  # non-trivial biases and LayerNorm, so a dropped term shows
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def saved_checkpoint(model, path):
    """``(path, model)`` after ``save_pretrained`` there: the tests' HF checkpoint folder and its torch twin."""
    model.save_pretrained(str(path))
    return path, model
