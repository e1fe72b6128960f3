"""Tiny random-init DistilBERT, ELECTRA, MobileBERT, RoBERTa and XLM-R checkpoints with a real tokenizer beside them.

Each model is transformers' own ``*For<head>`` (seeded, hidden 32, 2 layers, biases and LayerNorms
moved off 0/1 so a dropped term shows) saved with ``save_pretrained``; its tokenizer is trained in
the test by the ``tokenizers`` library on a few sentences and saved by transformers' matching
tokenizer class, so the folder holds what a Hub download holds (``vocab.txt`` / ``tokenizer.json``
/ ``tokenizer_config.json``). Nothing is downloaded. Imported only by tests that have already
``importorskip``-ed torch and transformers.
"""

from __future__ import annotations

from pathlib import Path

import torch
import transformers

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "a small model reads every word of the text",
    "phones run small encoders with a packed tokenizer",
    "good films make people happy and bad films do not",
    "the weather was cold but the coffee was warm",
    "she said hello and then goodbye to everyone",
    "numbers like 12 and 3.14 appear in the text",
    "Paris and Berlin are cities; Alice lives in Paris.",
]
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
FAMILIES = ("distilbert", "electra", "mobilebert", "roberta", "xlm-roberta")
_CLASS = {"distilbert": "DistilBert", "electra": "Electra", "mobilebert": "MobileBert", "roberta": "Roberta",
          "xlm-roberta": "XLMRoberta"}
#: MobileBERT at a tenth of its width, with every structural feature it has: 3-gram embedding (E 16),
#: bottleneck 16 < H 32, the shared key/query bottleneck, two stacked FFNs, ReLU, NoNorm.
MOBILEBERT_SIZES = dict(hidden_size=32, embedding_size=16, intra_bottleneck_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=24, num_feedforward_networks=2,
                        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        pad_token_id=0)


def wordpiece_tokenizer(folder: Path, family: str):
    """A WordPiece tokenizer trained on SENTENCES, saved into ``folder`` by transformers' ``family`` tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(SENTENCES, trainers.WordPieceTrainer(vocab_size=120, special_tokens=WORDPIECE_SPECIALS))
    folder.mkdir(parents=True, exist_ok=True)
    vocab = sorted(tok.get_vocab().items(), key=lambda item: item[1])
    (folder / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
    tokenizer = getattr(transformers, f"{_CLASS[family]}Tokenizer")(vocab=dict(vocab), do_lower_case=True)
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def tiny_family_model(family: str, head: str, vocab_size: int, **extra):
    """Seeded ``transformers.<Family>For<head>`` (or ``<Family>Model`` when ``head`` is "Model")."""
    torch.manual_seed(0)
    if family == "mobilebert":
        config = transformers.MobileBertConfig(vocab_size=vocab_size, **{**MOBILEBERT_SIZES, **extra})
    elif family == "distilbert":
        config = transformers.DistilBertConfig(vocab_size=vocab_size, dim=32, n_layers=2, n_heads=2, hidden_dim=48,
                                               max_position_embeddings=64, dropout=0.0, attention_dropout=0.0,
                                               seq_classif_dropout=0.0, qa_dropout=0.0, pad_token_id=0, **extra)
    else:
        common = dict(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=48, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **extra)
        if family == "electra":
            config = transformers.ElectraConfig(embedding_size=16, max_position_embeddings=64, pad_token_id=0, **common)
        else:
            config = getattr(transformers, f"{_CLASS[family]}Config")(
                max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                layer_norm_eps=1e-5, **common)
    name = f"{_CLASS[family]}Model" if head == "Model" else f"{_CLASS[family]}For{head}"
    model = getattr(transformers, name)(config)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("bias") or "LayerNorm" in pname or "layer_norm" in pname:
                p.add_(0.1 * torch.randn_like(p))
        if family == "mobilebert":  # keep activations O(1) through the un-normalised (NoNorm) layers
            for pname, p in model.named_parameters():
                if p.ndim == 2 and "embeddings" not in pname:
                    p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)
    return model.eval()


def family_checkpoint(folder: Path, family: str, head: str, **extra):
    """(folder, model, tokenizer): the tokenizer and a tiny ``family`` model with ``head``, saved in ``folder``."""
    if family in ("distilbert", "electra", "mobilebert"):
        tokenizer = wordpiece_tokenizer(folder, family)
    else:
        from tests.support.family_tokenizers import save_family_tokenizer

        tokenizer = save_family_tokenizer(folder, family, SENTENCES)
    model = tiny_family_model(family, head, len(tokenizer), **extra)
    model.save_pretrained(str(folder))
    return folder, model, tokenizer
