"""Build a tokenizer from a packed asset: the one entry point the model-pack reader uses."""

from __future__ import annotations

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer.bytelevel_bpe import ByteLevelBPETokenizer
from albert_edge.tokenizer.spiece import SentencePieceTokenizer
from albert_edge.tokenizer.wordpiece import WordPieceTokenizer

KINDS = ("wordpiece", "sentencepiece", "bytelevel_bpe")


def load_tokenizer(
    kind: str, asset: bytes, do_lower_case: bool = True, source: str = "<pack>"
) -> WordPieceTokenizer | SentencePieceTokenizer | ByteLevelBPETokenizer:
    """``kind`` "wordpiece" -> ``asset`` is vocab.txt bytes; "sentencepiece" -> spiece.model bytes;
    "bytelevel_bpe" -> bpe.json bytes (``tokenizer.bytelevel_bpe``).

    ``source`` names the model file in every error message.
    """
    if not isinstance(asset, (bytes, bytearray)):
        raise TokenizerError(f"{source}: tokenizer asset must be bytes, got {type(asset).__name__}")
    if kind == "wordpiece":
        return WordPieceTokenizer.from_vocab_bytes(bytes(asset), do_lower_case=do_lower_case, source=source)
    if kind == "sentencepiece":
        return SentencePieceTokenizer.from_model_bytes(bytes(asset), do_lower_case=do_lower_case, source=source)
    if kind == "bytelevel_bpe":
        return ByteLevelBPETokenizer.from_asset(bytes(asset), source=source)
    raise TokenizerError(f"{source}: unknown tokenizer type {kind!r} (expected one of {', '.join(KINDS)})")
