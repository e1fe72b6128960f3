"""The WordPiece parity material: the tokenizer corpus, a seeded fuzz set, a vocab generated from them,
and the judges (our WordPieceTokenizer beside Hugging Face's Rust and legacy Python BertTokenizer).

Shared by the WordPiece parity and offsets tests, so both judge the same texts with the same vocab;
the documented Rust divergences are listed in tests/test_tokenizer_wordpiece_hf_parity.py.
"""

from __future__ import annotations

import json
import random
import shutil
import unicodedata
from pathlib import Path

import pytest

from albert_edge.tokenizer import WordPieceTokenizer

transformers = pytest.importorskip("transformers")
from transformers import BertTokenizer  # noqa: E402

legacy = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "tokenizer_corpus.jsonl"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def load_corpus() -> list[tuple[str, str | None]]:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]
    return [(r["a"], r["b"]) for r in rows]


def fuzz_texts(n: int = 400, seed: int = 20240601) -> list[str]:
    """Seeded random strings mixing every character class the basic tokenizer treats differently."""
    rng = random.Random(seed)
    pools = [
        lambda: chr(rng.randint(0x4E00, 0x9FFF)),  # CJK unified
        lambda: chr(rng.randint(0x3400, 0x4DBF)),  # Extension A
        lambda: chr(rng.randint(0x20000, 0x2A6DF)),  # Extension B (non-BMP)
        lambda: chr(rng.choice([0xF900, 0xF91D, 0xFA0E, 0xFA30, 0x2F800, 0x2F81F])),  # compatibility ideographs
        lambda: rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
        lambda: rng.choice("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
        lambda: chr(rng.randint(0xFF01, 0xFF5E)),  # full-width forms
        lambda: chr(rng.randint(0x3000, 0x303F)),  # CJK symbols and punctuation
        lambda: chr(rng.randint(0xC0, 0x17F)),  # accented Latin
        lambda: chr(rng.randint(0x300, 0x36F)),  # combining marks
        lambda: chr(rng.randint(0x391, 0x3C9)),  # Greek
        lambda: chr(rng.randint(0x1F600, 0x1F64F)),  # emoji
        lambda: rng.choice(["\u200b", "\u200c", "\u200d", "\ufeff", "\u2060", "\u200e", "\u202e"]),  # zero-width, bidi
        lambda: chr(rng.choice([0, 1, 7, 0x1B, 0x7F, 0x85, 0x9F, 0xFFFD])),  # controls
        lambda: rng.choice([" ", "  ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2028", "\u2003"]),
        lambda: chr(rng.randint(0xAC00, 0xD7A3)),  # Hangul
        lambda: chr(rng.randint(0x3041, 0x30FF)),  # kana
    ]
    weights = [30, 3, 3, 2, 25, 6, 4, 3, 5, 2, 3, 3, 2, 2, 12, 2, 2]
    texts = []
    for i in range(n):
        length = rng.randint(0, 60)
        text = "".join(rng.choices(pools, weights)[0]() for _ in range(length))
        if i % 25 == 0:
            text += " " + "".join(rng.choice("abcxyz") for _ in range(rng.choice([99, 100, 101, 150])))
        texts.append(text)
    return texts


def generated_vocab(texts: list[str]) -> list[str]:
    """A vocab that covers most, not all, of the corpus: single chars, ## chars, word starts.

    Every 9th character is left out so [UNK] and failed WordPiece matches occur too.
    """
    chars: set[str] = set()
    words: set[str] = set()
    for text in texts:
        for variant in (text, "".join(c for c in unicodedata.normalize("NFD", text.lower()) if unicodedata.category(c) != "Mn")):
            chars.update(variant)
            for w in "".join(c if c.isascii() and c.isalnum() else " " for c in variant).split():
                if len(w) >= 3:
                    words.update([w[:3], "##" + w[3:6]] if len(w) > 3 else [w])
    usable = sorted(c for c in chars if not c.isspace() and unicodedata.category(c)[0] not in "CZ")
    kept = [c for i, c in enumerate(usable) if i % 9 != 4]
    vocab = SPECIALS + kept + ["##" + c for c in kept if not c.isspace()] + sorted(words)
    return list(dict.fromkeys(vocab))


def rust_divergence(text: str, do_lower_case: bool) -> str | None:
    """Why the Rust judge may legitimately differ on ``text`` (see module docstring), or None."""
    if not do_lower_case and unicodedata.normalize("NFC", text) != text:
        return "Rust skips NFC when not lower-casing"
    if "\u03a3" in text:
        return "final sigma"
    if any(unicodedata.category(c) == "Cn" for c in text):
        return "unassigned in Python's unicodedata"
    return None


class Judges:
    def __init__(self, vocab_path: Path, tmp: Path, do_lower_case: bool) -> None:
        shutil.copy(vocab_path, tmp / "vocab.txt")
        self.fast = BertTokenizer.from_pretrained(str(tmp), do_lower_case=do_lower_case, split_special_tokens=True)
        self.slow = legacy.BertTokenizerLegacy.from_pretrained(str(tmp), do_lower_case=do_lower_case)
        self.ours = WordPieceTokenizer.from_vocab_file(tmp / "vocab.txt", do_lower_case=do_lower_case)

    def slow_tokens(self, text: str) -> list[str]:
        # BertTokenizerLegacy.tokenize drops split_special_tokens on the way to _tokenize
        # (transformers 5.x), so call the algorithm directly.
        return self.slow._tokenize(text, split_special_tokens=True)

    def slow_encode(self, a: str, b: str | None, max_len: int | None, **kwargs) -> dict:
        ids_a = self.slow.convert_tokens_to_ids(self.slow_tokens(a))
        ids_b = self.slow.convert_tokens_to_ids(self.slow_tokens(b)) if b is not None else None
        if max_len is not None:
            kwargs.update(truncation="longest_first", max_length=max_len)
        return self.slow.prepare_for_model(ids_a, ids_b, return_token_type_ids=True, **kwargs)
