"""A WordPiece vocab read from a Hugging Face ``tokenizer.json``, for checkpoints that ship nothing else.

Many Hub repositories (newer BERT fine-tunes, most sentence-transformers models) carry only the fast
tokenizer's ``tokenizer.json``. Its ``model.vocab`` maps every WordPiece token to its id, which is all the
pack's ``vocab.txt`` holds, so the vocab is rebuilt from it (tokens in id order) instead of refusing the
folder. The ids must be exactly 0..n-1: a gap or a duplicate would shift every id after it, and the model
would then read other words than it was trained on. An ALBERT Unigram (SentencePiece) ``tokenizer.json``
is refused by name (its ``spiece.model`` carries ALBERT's preprocessing); XLM-R's is read by
``fairseq_spm.model_from_unigram_tokenizer_json`` before this reader is asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from albert_edge.errors import TokenizerError
from albert_edge.inputs.jsonfile import load_json_file

TOKENIZER_JSON = "tokenizer.json"


def wordpiece_vocab_from_tokenizer_json(path: Path) -> tuple[bytes, bool | None]:
    """``vocab.txt`` bytes (one token per line, in id order) and the normalizer's lower-casing, if it says.

    Raises TokenizerError naming the file when it is not a WordPiece tokenizer or its ids are not 0..n-1.
    """
    data = load_json_file(path, TokenizerError)
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict):
        raise TokenizerError(f"{path}: not a Hugging Face tokenizer.json (no 'model' object)")
    kind = model.get("type")
    if kind != "WordPiece":
        raise TokenizerError(f"{path}: holds a {kind or 'untyped'} tokenizer; albert-edge reads WordPiece from "
                             "tokenizer.json, and a SentencePiece model needs its spiece.model beside the checkpoint")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerError(f"{path}: WordPiece 'model.vocab' is missing or empty")
    tokens: list[str | None] = [None] * len(vocab)
    for token, index in vocab.items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(vocab):
            raise TokenizerError(f"{path}: token {token!r} has id {index!r}; ids must be 0..{len(vocab) - 1}")
        if tokens[index] is not None:
            raise TokenizerError(f"{path}: id {index} is given to both {tokens[index]!r} and {token!r}")
        if not token or any(c in token for c in "\n\r"):
            raise TokenizerError(f"{path}: token with id {index} is empty or holds a line break")
        tokens[index] = token
    return ("\n".join(t for t in tokens if t is not None) + "\n").encode("utf-8"), _lower_case(data.get("normalizer"))


def _lower_case(normalizer: Any) -> bool | None:
    """The BertNormalizer's ``lowercase``, also inside a Sequence normalizer; None when it does not say."""
    if not isinstance(normalizer, dict):
        return None
    if normalizer.get("type") == "BertNormalizer" and isinstance(normalizer.get("lowercase"), bool):
        return bool(normalizer["lowercase"])
    if normalizer.get("type") == "Sequence" and isinstance(normalizer.get("normalizers"), list):
        for inner in normalizer["normalizers"]:  # a Lowercase member answers through the recursion
            found = _lower_case(inner)
            if found is not None:
                return found
    if normalizer.get("type") == "Lowercase":
        return True
    return None


__all__ = ["TOKENIZER_JSON", "wordpiece_vocab_from_tokenizer_json"]
