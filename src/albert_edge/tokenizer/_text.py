"""Input checks and the BERT character classes, shared by both tokenizers.

The classes follow Hugging Face's Python ``BertTokenizer``, which is Google BERT's
``tokenization.py`` (what the Chinese ALBERT checkpoints were pre-trained with) plus two
later changes: every category C* counts as control, and text is NFC-composed. Where the
two differ it is only on private-use/unassigned code points and on decomposed input.
The clean-up pass goes through a per-character table so the hot loop is a C-level
``str.translate``, not a ``unicodedata`` call per character.
"""

from __future__ import annotations

import unicodedata

from albert_edge.errors import TokenizerError

# BERT's "Chinese character": the CJK Unified Ideographs blocks, Extensions A-E, and the
# two compatibility-ideograph blocks. Hangul, kana and Extension F+ are deliberately
# not in it (google-research/bert _is_chinese_char).
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def is_cjk(cp: int) -> bool:
    """True for a code point BERT surrounds with spaces (one token per ideograph)."""
    for lo, hi in _CJK_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def is_whitespace(ch: str) -> bool:
    """BERT whitespace: space, tab, newline, carriage return and category Zs."""
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch: str) -> bool:
    """Control: every category C* (Cc, Cf, Cs, Co, Cn) except tab/newline/CR.

    Google's original drops only Cc/Cf; Hugging Face (Python and Rust tokenizers alike)
    drops all of C*, so private-use and unassigned code points vanish. We follow Hugging
    Face, the judge every downstream user compares against. Unassigned means unassigned
    in this Python's ``unicodedata`` (Unicode 14 on Python 3.11).
    """
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch)[0] == "C"


def is_punctuation(ch: str) -> bool:
    """BERT punctuation: every non-alphanumeric printable ASCII char, plus categories P*."""
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


_CLEAN_TABLE_LIMIT = 1 << 16


class _CleanTable(dict):
    """``str.translate`` table for BERT's clean-text + CJK-spacing pass, filled on demand.

    Maps NUL, U+FFFD and control (C*) characters to nothing, whitespace to a space, each CJK
    ideograph to itself between spaces, and everything else to itself. Filling lazily
    keeps the table small while the translate loop itself runs in C.
    """

    def __missing__(self, cp: int) -> str | None:
        ch = chr(cp)
        value: str | None
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            value = None
        elif is_whitespace(ch):
            value = " "
        elif is_cjk(cp):
            value = f" {ch} "
        else:
            value = ch
        # Real text uses a few thousand code points; hostile input must not grow the table unboundedly.
        if len(self) < _CLEAN_TABLE_LIMIT:
            self[cp] = value
        return value


CLEAN_TABLE = _CleanTable()


def strip_accents_nfd(text: str) -> str:
    """NFD, then drop nonspacing marks (Mn): BERT's ``_run_strip_accents``."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def split_on_punctuation(text: str) -> list[str]:
    """Each punctuation char becomes its own piece; runs of other chars stay together."""
    out: list[str] = []
    current: list[str] = []
    for ch in text:
        if is_punctuation(ch):
            if current:
                out.append("".join(current))
                current = []
            out.append(ch)
        else:
            current.append(ch)
    if current:
        out.append("".join(current))
    return out


def ensure_text(text: object, what: str) -> str:
    """Return ``text`` as ``str``; UTF-8 bytes are decoded, anything else is an error.

    ``what`` names the input in the message (e.g. ``"text_a[3]"``).
    """
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TokenizerError(
                f"{what}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from None
    if text is None:
        raise TokenizerError(f"{what}: expected a string, got None")
    raise TokenizerError(f"{what}: expected a string, got {type(text).__name__}")


def _not_utf8(data: bytes, at: int, source: str, kind: str) -> TokenizerError:
    """The one line for a vocab file whose byte ``at`` breaks UTF-8 (``decode_asset`` and ``check_utf8`` alike)."""
    return TokenizerError(f"{source}: {kind} is not valid UTF-8 (byte 0x{data[at]:02x} at offset {at})")


def decode_asset(data: bytes, source: str, kind: str) -> str:
    """Decode a vocab file's bytes strictly, naming the file and offset when it fails."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, exc.start, source, kind) from None


# Bytes decoded at a time by check_utf8: the piece's str (at most 4 bytes a character) stays below the size
# where malloc maps fresh pages, so each piece reuses the memory of the one before.
_CHECK_PIECE = 1 << 14


def check_utf8(data: bytes, source: str, kind: str) -> None:
    """Raise decode_asset's error (the same byte and offset) unless ``data`` is UTF-8, keeping no decoded copy.

    For readers of the bytes themselves (``tokenizer.lazy_vocab``). Decoded in pieces cut just before a newline:
    validity is local and the byte 0x0A ends any character, so the pieces are valid exactly when the whole is,
    and the first bad byte is the same. Decoding the sample's 107 KiB vocab whole built a 300 KB str (it holds a
    character past U+FFFF) in new memory, 0.3-0.5 ms of a fresh process; the pieces take about half.
    """
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start + _CHECK_PIECE) if start + _CHECK_PIECE < size else -1
        end = size if end < 0 else end
        try:
            data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _not_utf8(data, start + exc.start, source, kind) from None
        start = end
