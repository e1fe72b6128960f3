"""Build a tokenizer from a packed asset: the one entry point the model-pack reader uses."""

from __future__ import annotations

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer._text import decode_asset
from albert_edge.tokenizer.spiece import SentencePieceTokenizer
from albert_edge.tokenizer.wordpiece import WordPieceTokenizer

KINDS = ("wordpiece", "sentencepiece")


def load_tokenizer(
    kind: str, asset: bytes, do_lower_case: bool = True, source: str = "<pack>"
) -> WordPieceTokenizer | SentencePieceTokenizer:
    """``kind`` "wordpiece" -> ``asset`` is vocab.txt bytes; "sentencepiece" -> spiece.model bytes.

    ``source`` names the model file in every error message.
    """
    if not isinstance(asset, (bytes, bytearray)):
        raise TokenizerError(f"{source}: tokenizer asset must be bytes, got {type(asset).__name__}")
    if kind == "wordpiece":
        text = decode_asset(bytes(asset), source, "vocab.txt")
        return WordPieceTokenizer.from_vocab_text(text, do_lower_case=do_lower_case, source=source)
    if kind == "sentencepiece":
        return SentencePieceTokenizer.from_model_bytes(bytes(asset), do_lower_case=do_lower_case, source=source)
    raise TokenizerError(f"{source}: unknown tokenizer type {kind!r} (expected one of {', '.join(KINDS)})")


def asset_vocab_size(kind: str, asset: bytes) -> int | None:
    """The ``vocab_size`` that ``load_tokenizer(kind, asset)`` reports, when the bytes say it cheaply; else None.

    WordPiece: the number of lines ``WordPieceTokenizer.from_vocab_text`` makes of the file (split on ``\n``,
    a final empty line dropped; a ``\r`` only shortens a line), counted in C without building 21k strings,
    so the load-time check can run before (and the interpreter's build beside) the tokenizer's. The byte
    ``\n`` never occurs inside a multi-byte UTF-8 character, so the count on bytes is the count on text. An
    empty or otherwise unusable vocab still fails in ``load_tokenizer``. SentencePiece: None (the size is
    inside the model proto).
    """
    if kind != "wordpiece" or not isinstance(asset, (bytes, bytearray)) or not asset:
        return None
    return asset.count(b"\n") + (0 if asset.endswith(b"\n") else 1)
