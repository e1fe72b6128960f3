"""The sequence-regression test task: a synthetic scoring rule (score = (good words - bad words) / 2)
over a small vocab, and a tiny BERT regressor trained on it in seconds.

Shared by tests/test_task_sequence_regression.py and benchmarks/records/sequence_regression_task.py,
so the benchmark measures the tests' own model. Needs torch and transformers: test modules
``importorskip`` them before importing this.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import transformers

from tests.support.tiny_hf import save_with_vocab, train_steps

MAX_SEQ_LEN = 32
GOOD = ["great", "superb", "lovely", "brilliant", "moving"]
BAD = ["dull", "awful", "boring", "clumsy", "tedious"]
NEUTRAL = [f"w{i}" for i in range(40)]
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *GOOD, *BAD, *NEUTRAL]


def scored_texts(n: int, seed: int) -> list[tuple[str, float]]:
    """Texts of 4-12 words and their score: (good words - bad words) / 2."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = list(rng.choice(NEUTRAL, int(rng.integers(4, 13))))
        for word_list, sign in ((GOOD, 1), (BAD, -1)):
            for _ in range(int(rng.integers(0, 4))):
                words.insert(int(rng.integers(0, len(words) + 1)), str(rng.choice(word_list)))
        score = (sum(w in GOOD for w in words) - sum(w in BAD for w in words)) / 2
        out.append((" ".join(words), score))
    return out


def token_ids(text: str) -> list[int]:
    return [2, *(WORDS.index(w) for w in text.split()), 3]


def train_regressor(target: Path) -> Path:
    """A tiny BERT regressor trained on the scoring rule (about 10 s on one core), saved with its vocab
    into ``target``."""
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=MAX_SEQ_LEN, num_labels=1,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertForSequenceClassification(config)
    assert model.config.problem_type in (None, "regression")
    rows = [(token_ids(t), s) for t, s in scored_texts(2000, seed=1)]
    rng = np.random.default_rng(0)

    def batch_loss():
        batch = [rows[i] for i in rng.choice(len(rows), 32, replace=False)]
        width = max(len(r[0]) for r in batch)
        ids = torch.tensor([r[0] + [0] * (width - len(r[0])) for r in batch])
        return model(input_ids=ids, attention_mask=(ids != 0).long(),
                     labels=torch.tensor([[r[1]] for r in batch], dtype=torch.float32)).loss

    train_steps(model, batch_loss, steps=300, lr=3e-3)
    save_with_vocab(model, target, WORDS)
    return target


def write_scores(path: Path, rows: list[tuple[str, float]]) -> Path:
    path.write_text("".join(json.dumps({"text": t, "score": s}) + "\n" for t, s in rows), encoding="utf-8")
    return path
