"""What the encoder-family parity tests share: text pairs, Hugging Face's ids for them, a forward pass in
torch and one in our file, so tests/test_encoder_families.py and tests/test_encoder_mobilebert.py compare
the same way."""

from __future__ import annotations

import numpy as np

from albert_edge.runtime.backends import open_backend

PAIRS = [("the quick brown fox", "a lazy dog"), ("Paris is cold!", None), ("good films, bad films", "happy people")]


def hf_batch(tokenizer, pairs):
    """HF tokenizer ids of ``pairs``, right-padded: (input_ids, attention_mask) int64 [B, S]."""
    rows = [tokenizer(a, b)["input_ids"] if b is not None else tokenizer(a)["input_ids"] for a, b in pairs]
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    ids = np.array([r + [pad] * (width - len(r)) for r in rows], dtype=np.int64)
    mask = np.array([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=np.int64)
    return ids, mask


def torch_forward(model, ids, mask, types=None):
    """``model``'s output on numpy ids (token types only when given), without gradients."""
    import torch

    with torch.no_grad():
        extra = {} if types is None else {"token_type_ids": torch.tensor(types)}
        return model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), **extra)


def run_file(data, ids, mask):
    """Our converted file's outputs on ``ids`` (token types zero), one thread."""
    return open_backend(data, num_threads=1).run(
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
