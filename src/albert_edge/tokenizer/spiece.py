"""SentencePiece (``spiece.model``) tokenization with Google ALBERT's preprocessing.

Google's English ALBERT checkpoints were trained on text that went through
``preprocess_text`` before SentencePiece: whitespace runs collapsed to one space and the
ends stripped, LaTeX-style quotes (two backticks, two apostrophes) turned into a double
quote, NFKD with combining marks dropped (unless ``keep_accents``), lower-casing when
``do_lower_case``. After SentencePiece, ``encode_pieces`` re-splits any piece that ends in
a digit followed by a comma (e.g. ``▁1,``) so the comma is its own token: the digits are
re-encoded, and the word-boundary marker ``▁`` that re-encoding adds is kept only if the
original piece had it. Hugging Face's Python ``AlbertTokenizer`` (transformers 4.x) does
the same; this module reimplements that behaviour. (transformers 5.x's Rust-backed
AlbertTokenizer skips the re-split and differs in a few other corners, listed and tested
in tests/test_tokenizer_sentencepiece.py; we match sentencepiece itself exactly.)
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from typing import TYPE_CHECKING

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer._text import ensure_text

if TYPE_CHECKING:
    from sentencepiece import SentencePieceProcessor

SPIECE_UNDERLINE = "\u2581"
REQUIRED_SPECIALS = ("[CLS]", "[SEP]")


def _load_processor(data: bytes, source: str) -> "SentencePieceProcessor":
    """Parse a serialized model; sentencepiece is imported here so WordPiece-only apps never need it."""
    try:
        import sentencepiece
    except ImportError:
        raise TokenizerError(f"{source}: the 'sentencepiece' package is needed for spiece.model (pip install sentencepiece)") from None
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise TokenizerError(f"{source}: SentencePiece model is empty or not bytes")
    try:
        return sentencepiece.SentencePieceProcessor(model_proto=bytes(data))
    except (RuntimeError, OSError, TypeError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TokenizerError(f"{source}: not a valid SentencePiece model ({first_line})") from None


class SentencePieceTokenizer:
    """Text -> SentencePiece pieces and ids, ALBERT style. ``vocab_size`` = number of pieces."""

    kind = "sentencepiece"

    def __init__(self, processor: "SentencePieceProcessor", do_lower_case: bool = True, keep_accents: bool = False, source: str = "<spiece>") -> None:
        self.source = source
        self.do_lower_case = do_lower_case
        self.keep_accents = keep_accents
        self._sp = processor
        self.vocab_size = int(processor.get_piece_size())
        self.unk_id = int(processor.unk_id())
        if self.unk_id < 0:
            raise TokenizerError(f"{source}: SentencePiece model has no unknown piece (expected <unk>)")
        ids = {t: int(processor.piece_to_id(t)) for t in REQUIRED_SPECIALS}
        missing = [t for t, i in ids.items() if i == self.unk_id]
        if missing:
            raise TokenizerError(f"{source}: SentencePiece model has no {', '.join(missing)} piece (expected an ALBERT spiece.model)")
        self.cls_id = ids["[CLS]"]
        self.sep_id = ids["[SEP]"]
        pad = int(processor.pad_id())
        if pad < 0:
            pad = int(processor.piece_to_id("<pad>"))
            pad = 0 if pad == self.unk_id else pad
        self.pad_id = pad

    @classmethod
    def from_model_file(cls, path: str | Path, do_lower_case: bool = True, *, keep_accents: bool = False) -> "SentencePieceTokenizer":
        """Load an ``spiece.model`` from disk. ``keep_accents`` as in Hugging Face (default: strip)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise TokenizerError(f"{path}: cannot read SentencePiece model ({exc.strerror or exc})") from None
        return cls.from_model_bytes(data, do_lower_case, str(path), keep_accents=keep_accents)

    @classmethod
    def from_model_bytes(
        cls, data: bytes, do_lower_case: bool = True, source: str = "<pack>", *, keep_accents: bool = False
    ) -> "SentencePieceTokenizer":
        """Build from the serialized model (e.g. the ``spiece.model`` member of a model pack)."""
        return cls(_load_processor(data, source), do_lower_case, keep_accents, source)

    def preprocess(self, text: str) -> str:
        """ALBERT's ``preprocess_text``: collapse spaces, normalise quotes, strip accents, lower."""
        out = " ".join(text.split())
        out = out.replace("``", '"').replace("''", '"')
        if not self.keep_accents and not out.isascii():
            out = "".join(c for c in unicodedata.normalize("NFKD", out) if not unicodedata.combining(c))
        if self.do_lower_case:
            out = out.lower()
        return out

    def tokenize(self, text: str | bytes) -> list[str]:
        """Text -> pieces (no [CLS]/[SEP]). ``""`` gives ``[]``."""
        text = self.preprocess(ensure_text(text, "text"))
        if not text:
            return []
        sp = self._sp
        out: list[str] = []
        for piece in sp.encode(text, out_type=str):
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                sub = sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
                # Re-encoding adds a leading "▁"; keep it only if the original piece began a word.
                if sub and piece[0] != SPIECE_UNDERLINE and sub[0][0] == SPIECE_UNDERLINE:
                    if len(sub[0]) == 1:
                        sub = sub[1:]
                    else:
                        sub[0] = sub[0][1:]
                out.extend(sub)
                out.append(",")
            else:
                out.append(piece)
        return out

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        """Pieces -> ids; an unknown piece maps to ``unk_id`` (SentencePiece's PieceToId)."""
        p2i = self._sp.piece_to_id
        return [int(p2i(t)) for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        """Ids -> pieces; an id outside the model is an error naming it."""
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise TokenizerError(f"{self.source}: piece id {i} outside model of {self.vocab_size}")
        i2p = self._sp.id_to_piece
        return [i2p(i) for i in ids]

    def __repr__(self) -> str:
        return f"SentencePieceTokenizer(source={self.source!r}, vocab_size={self.vocab_size}, do_lower_case={self.do_lower_case})"
