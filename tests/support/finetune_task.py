"""The tiny ALBERT and the learnable toy task that fine-tuning, pre-training and distillation tests share:
one vocab of fourteen characters, one config small enough to train in seconds."""

from __future__ import annotations

import numpy as np

from albert_edge.inputs.data import Example
from albert_edge.model import AlbertConfig

CHARS = "好坏大小多少高低快慢新旧美丑"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CHARS]
CONFIG = AlbertConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=16, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                      embedding_order="project_then_add")


def generated(n: int, seed: int) -> list[Example]:
    """Texts of random characters; 'pos' iff the text holds more 好 than 坏, so it is learnable."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        text = "".join(rng.choice(list(CHARS), size=int(rng.integers(2, 14))))
        examples.append(Example("pos" if text.count("好") > text.count("坏") else "neg", text))
    return examples
