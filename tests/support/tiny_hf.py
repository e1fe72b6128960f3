"""A tiny seeded transformers ALBERT or BERT model with a task head, for the task tests' parity checks.

The QA and NER tests each convert such a model and compare against transformers' own forward; one
factory keeps their configs (and the bias/LayerNorm noise that makes a dropped term show) alike.
Imported only by tests that have already ``importorskip``-ed torch and transformers.
"""

from __future__ import annotations

import torch
import transformers


def tiny_hf_model(kind: str, head: str, **extra):
    """Seeded ``transformers.{Albert,Bert}For<head>`` ("albert" or "bert"), ``extra`` added to (or replacing
    entries of) its config."""
    torch.manual_seed(0)
    common = {**dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48,
                     max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0), **extra}
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


def train_steps(model, batch_loss, steps: int, lr: float, one_cycle_pct: float | None = None) -> None:
    """AdamW on ``batch_loss()`` for ``steps`` steps (OneCycleLR when ``one_cycle_pct`` is given), on one
    torch thread (faster than two contended threads on a shared machine); leaves the model in eval mode."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = (None if one_cycle_pct is None else
                torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps, pct_start=one_cycle_pct))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model.train()
        for _ in range(steps):
            loss = batch_loss()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if schedule is not None:
                schedule.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()


def save_with_vocab(model, target, words) -> None:
    """``save_pretrained`` into ``target`` plus the WordPiece ``vocab.txt`` convert reads beside it."""
    model.save_pretrained(str(target))
    (target / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")


def saved_checkpoint(model, path):
    """``(path, model)`` after ``save_pretrained`` there: the tests' HF checkpoint folder and its torch twin."""
    model.save_pretrained(str(path))
    return path, model
