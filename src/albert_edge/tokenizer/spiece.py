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

import re
import unicodedata
from pathlib import Path

from typing import TYPE_CHECKING

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer._text import ensure_text

if TYPE_CHECKING:
    from sentencepiece import SentencePieceProcessor

SPIECE_UNDERLINE = "\u2581"
_NON_SPACE = re.compile(r"\S+")  # str.split()'s words: \s is str.isspace() for str patterns


def _invisible(ch: str) -> bool:
    """Whitespace, or a character SentencePiece's nmt_nfkc normaliser removes or blanks (C*, U+FFFD)."""
    return ch.isspace() or ch == "\ufffd" or unicodedata.category(ch) in ("Cc", "Cf")
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
        # XLM-R's model in the fairseq id layout (``fairseq_spm``): <s> text </s>, pairs joined by
        # </s></s>, and none of ALBERT's preprocessing (XLM-R is cased; its normaliser is the model's).
        self.fairseq = bool(missing) and [processor.id_to_piece(i) for i in range(min(3, self.vocab_size))] == [
            "<s>", "<pad>", "</s>"]
        if missing and not self.fairseq:
            raise TokenizerError(f"{source}: SentencePiece model has no {', '.join(missing)} piece (expected an ALBERT "
                                 "spiece.model, or XLM-R's with <s> <pad> </s> first)")
        self.cls_token, self.sep_token = ("<s>", "</s>") if self.fairseq else REQUIRED_SPECIALS
        self.pair_separators = 2 if self.fairseq else 1
        self.pair_type_id = 0 if self.fairseq else 1  # XLM-R's tokenizer gives no token types
        if self.fairseq:
            self.do_lower_case, self.keep_accents = False, True
        self.cls_id = int(processor.piece_to_id(self.cls_token))
        self.sep_id = int(processor.piece_to_id(self.sep_token))
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
        """ALBERT's ``preprocess_text``: collapse spaces, normalise quotes, strip accents, lower
        (XLM-R's fairseq-layout model: the text unchanged)."""
        if self.fairseq:
            return text
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
        out: list[str] = []
        for piece in self._sp.encode(text, out_type=str):
            out.extend(self._resplit(piece) or [piece])
        return out

    def _resplit(self, piece: str) -> list[str] | None:
        """ALBERT's re-split of a piece ending in digit + comma (``▁1,`` -> ``▁1`` ``,``); None otherwise
        (and always for XLM-R, whose tokenizer does not re-split)."""
        if self.fairseq or not (len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()):
            return None
        sub = self._sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=str)
        # Re-encoding adds a leading "▁"; keep it only if the original piece began a word.
        if sub and piece[0] != SPIECE_UNDERLINE and sub[0][0] == SPIECE_UNDERLINE:
            if len(sub[0]) == 1:
                sub = sub[1:]
            else:
                sub[0] = sub[0][1:]
        return [*sub, ","]

    def _preprocess_aligned(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """``preprocess(text)`` with each of its characters' [start, end) in ``text``.

        The same steps character by character: whitespace runs become one space spanning the run,
        a `` or '' pair one quote spanning both, NFKD pieces keep their character's span and dropped
        marks vanish, lower-casing keeps spans (whole-string when the length is unchanged, so a
        final sigma lower-cases as ``preprocess`` does).
        """
        if self.fairseq:
            return text, [(i, i + 1) for i in range(len(text))]
        chars: list[str] = []
        spans: list[tuple[int, int]] = []
        previous_end = None
        for match in _NON_SPACE.finditer(text):
            if previous_end is not None:
                chars.append(" ")
                spans.append((previous_end, match.start()))
            for i in range(match.start(), match.end()):
                chars.append(text[i])
                spans.append((i, i + 1))
            previous_end = match.end()
        for pair in ("``", "''"):
            merged_chars: list[str] = []
            merged_spans: list[tuple[int, int]] = []
            j = 0
            while j < len(chars):
                if j + 1 < len(chars) and chars[j] + chars[j + 1] == pair:
                    merged_chars.append('"')
                    merged_spans.append((spans[j][0], spans[j + 1][1]))
                    j += 2
                else:
                    merged_chars.append(chars[j])
                    merged_spans.append(spans[j])
                    j += 1
            chars, spans = merged_chars, merged_spans
        if not self.keep_accents and not "".join(chars).isascii():
            decomposed: list[str] = []
            decomposed_spans: list[tuple[int, int]] = []
            for ch, span in zip(chars, spans):
                for part in unicodedata.normalize("NFKD", ch):
                    if not unicodedata.combining(part):
                        decomposed.append(part)
                        decomposed_spans.append(span)
            chars, spans = decomposed, decomposed_spans
        if self.do_lower_case:
            whole = "".join(chars).lower()
            if len(whole) == len(chars):
                chars = list(whole)
            else:
                lowered: list[str] = []
                lowered_spans: list[tuple[int, int]] = []
                for ch, span in zip(chars, spans):
                    lowered.extend(ch.lower())
                    lowered_spans.extend([span] * len(ch.lower()))
                chars, spans = lowered, lowered_spans
        return "".join(chars), spans

    def tokenize_with_offsets(self, text: str | bytes) -> list[tuple[str, int, int]]:
        """Text -> (piece, start, end) with ``text[start:end]`` the characters the piece came from.

        The pieces are exactly ``tokenize(text)``'s. SentencePiece reports each piece's bytes in
        the preprocessed text (its own normalisation, e.g. full-width to ASCII, included); those map
        back to the original through ``_preprocess_aligned``. A piece's span leaves out the
        whitespace its ``▁`` stands for (so an entity starting on it does not start with a space);
        a bare ``▁`` gets the span of the character after it, as Hugging Face's does. A re-split digit+comma piece
        gives its comma the last character and its digits the rest.
        """
        text = ensure_text(text, "text")
        pre, spans = self._preprocess_aligned(text)
        if not pre:
            return []
        char_of_byte = [0] * (len(pre.encode("utf-8")) + 1)
        offset = 0
        for index, ch in enumerate(pre):
            width = len(ch.encode("utf-8"))
            for b in range(offset, offset + width):
                char_of_byte[b] = index
            offset += width
        char_of_byte[offset] = len(pre)
        out: list[tuple[str, int, int]] = []
        for p in self._sp.encode(pre, return_type="proto").pieces:
            begin, end = char_of_byte[p.begin], char_of_byte[p.end]
            # Leave out what the piece does not show: the whitespace of its "▁" and characters
            # SentencePiece's normaliser drops (controls, format characters, U+FFFD).
            shown = p.piece.replace(SPIECE_UNDERLINE, "")
            while begin < end and _invisible(pre[begin]) and not shown.startswith(pre[begin]):
                begin += 1
            while end > begin and _invisible(pre[end - 1]) and not shown.endswith(pre[end - 1]):
                end -= 1
            if begin < end:
                start, stop = spans[begin][0], spans[end - 1][1]
            elif begin < len(pre):  # a bare "▁": Hugging Face gives it the next character's span
                start, stop = spans[begin]
            else:
                start = stop = spans[-1][1]
            pieces = self._resplit(p.piece)
            if pieces is None:
                out.append((p.piece, start, stop))
                continue
            comma = spans[end - 1] if begin < end else (start, stop)
            out.extend((piece, start, comma[0]) for piece in pieces[:-1])
            out.append((",", comma[0], comma[1]))
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
