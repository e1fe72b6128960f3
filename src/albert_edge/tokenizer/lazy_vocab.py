"""A vocab.txt's token -> id map that answers from the file's bytes until building the dict pays.

An app's first answer looks up a few dozen tokens, but building the dict of a 21,128-token vocab
(split the text, hash every line) cost 3.6-4.0 ms of CPU of every model load: a quarter of the
sample's time from file to first answer. So the load keeps the vocab's UTF-8 bytes and, from one numpy
pass over them, where each line starts and a uint32 key per line: its length in bytes and its first
three bytes. A lookup compares the key column once; a token of up to three bytes (a Chinese character
is three) is then answered, a longer one compares its other bytes on the few lines left. The answer
is the last line that matches. (The key held only the length and the first byte before: a Chinese
character's lookup then filtered thousands of lines byte by byte, 25-35 us of numpy calls each.)
After ``SCANS_BEFORE_DICT`` lookups the dict is built and every later lookup is a hash.

The answers are the dict's exactly: lines split on ``\\n`` only, a trailing empty line dropped, a token
listed twice keeps its last id, and a key holding ``\\n`` is no line at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping

import numpy as np

# Lookups answered by scanning before the dict is built.
SCANS_BEFORE_DICT = 128
# Lines of this many bytes or more share their length in the key (8 bits of it).
_LONG = 255


def _key(token: bytes) -> int:
    """A token's key: its length in bytes (at most ``_LONG``) and its first three bytes (zeros past its end), laid
    out as the load lays out each line's: the uint32 whose bytes in memory are (byte 2, byte 1, byte 0, length)."""
    head = token[:3].ljust(3, b"\0")
    return int.from_bytes(bytes((head[2], head[1], head[0], min(len(token), _LONG))), sys.byteorder)


class LazyVocab(Mapping[str, int]):
    """``dict(zip(lines, range(len(lines))))`` of a vocab text, without building it up front."""

    def __init__(self, text: str | None, utf8: bytes | None = None) -> None:
        """``text``: the vocab file's text without ``\\r`` (a CRLF file is split eagerly by the caller);
        ``utf8``: the bytes it was decoded from, when the caller has them (then ``text`` is not read and may be
        None: the caller checked the bytes are UTF-8 without keeping a decoded copy)."""
        if utf8 is None and text is None:
            raise TypeError("LazyVocab needs the vocab's text or its UTF-8 bytes")
        raw = text.encode("utf-8") if utf8 is None else bytes(utf8)   # type: ignore[union-attr]
        # Framed by newlines so that every line, the first and the last too, lies between two of them; then two
        # zeros, so that every line's first three bytes can be read. One join: one copy of the vocab.
        self._framed = b"".join((b"\n", raw, b"" if raw.endswith(b"\n") else b"\n", b"\0\0"))
        self._end = len(self._framed) - 2    # the framed text is self._framed[:self._end]
        self._bytes = np.frombuffer(self._framed, np.uint8)
        # A multi-byte UTF-8 character never holds the byte 0x0A: these are the text's line breaks. Every array
        # of a fresh process is new memory, faulted in page by page (about 1 us a KiB here, most of this load's
        # cost), so the columns are small (lengths in int32, bytes), filled in place, and gathers index with the
        # intp array ``at`` (an int32 index is cast to a new intp array first).
        at = (self._bytes == 10).nonzero()[0]
        n = len(at) - 1
        lengths = np.subtract(at[1:], at[:-1], dtype=np.int32)
        lengths -= 1
        np.minimum(lengths, _LONG, out=lengths)
        at += 1
        keys = np.empty(n, np.uint32)
        layout = keys.view(np.uint8).reshape(n, 4)   # per line: byte 2, byte 1, byte 0, length (see _key)
        layout[:, 3] = lengths
        for k in range(3):
            byte = self._bytes[at[:-1]]
            byte[lengths <= k] = 0       # past the line's end: its newline and the next line's bytes
            layout[:, 2 - k] = byte
            at += 1
        at -= 3
        self._starts = at[:-1]
        self._keys = keys
        self.line_count = n
        self._dict: dict[str, int] | None = None
        self._scans = 0
        # Answers found by scanning, kept: tokenize asks "in vocab?" and then the id of the same token.
        self._scanned: dict[str, int | None] = {}

    def lines(self) -> list[str]:
        """The tokens in id order (one per line)."""
        return self._framed[1 : self._end - 1].decode("utf-8").split("\n")

    def piece_limits(self) -> tuple[int, int]:
        """(longest line not starting with "##", longest "##" line without its "##"), in characters.

        What WordPiece's greedy split needs to skip candidates longer than any token; from the dict it cost a
        pass over every key (and the dict's build) on the first word not in the vocab as a whole. Here: one
        numpy pass, a character being a byte that is not a UTF-8 continuation byte (the text is valid UTF-8).
        """
        text = self._bytes[: self._end]
        # Each line from its start to the next line's start holds its own characters and its newline (a cumsum of
        # the bool mask cast to int32 took 1-4 ms; reduceat of its bytes 0.7).
        lengths = np.add.reduceat(((text & 0xC0) != 0x80).view(np.uint8), self._starts, dtype=np.int32) - 1
        second = np.minimum(self._starts + 1, len(text) - 1)
        cont = (lengths >= 2) & (text[self._starts] == 35) & (text[second] == 35)
        starts, conts = lengths[~cont], lengths[cont]
        return (int(starts.max()) if len(starts) else 0), (int(conts.max()) if len(conts) else 2) - 2

    def _built(self) -> dict[str, int]:
        if self._dict is None:
            lines = self.lines()
            self._dict = dict(zip(lines, range(len(lines))))
        return self._dict

    @staticmethod
    def _wanted(token: str) -> bytes | None:
        """The token's UTF-8 bytes, or None when no line can equal it."""
        if "\n" in token:
            return None
        try:
            return token.encode("utf-8")
        except UnicodeEncodeError:   # a lone surrogate: no line of decoded UTF-8 holds one
            return None

    def _last(self, wanted: bytes, lines: np.ndarray) -> int | None:
        """The last of ``lines`` (in order, all keyed as ``wanted``) that is ``wanted`` whole."""
        for k in range(3, min(len(wanted), _LONG)):   # a line of up to 3 bytes is its key
            if not len(lines):
                return None
            lines = lines[self._bytes[self._starts[lines] + k] == wanted[k]]
        if len(wanted) < _LONG:
            return int(lines[-1]) if len(lines) else None
        whole = wanted + b"\n"   # as long as _LONG or longer: the key did not say the length
        for line in reversed(lines.tolist()):
            start = int(self._starts[line])
            if self._framed[start : start + len(whole)] == whole:
                return line
        return None

    def _scan(self, token: str) -> int | None:
        """The id of the last line equal to ``token``, found in the bytes."""
        wanted = self._wanted(token)
        if wanted is None:
            return None
        return self._last(wanted, (self._keys == np.uint32(_key(wanted))).nonzero()[0])

    def lookup(self, token: str) -> int | None:
        """The token's id, or None; by scanning the bytes until the dict is worth building."""
        if self._dict is not None:
            return self._dict.get(token)
        if token in self._scanned:
            return self._scanned[token]
        if self._scans >= SCANS_BEFORE_DICT:
            return self._built().get(token)
        self._scans += 1
        found = self._scanned[token] = self._scan(token)
        return found

    @property
    def built(self) -> bool:
        """Whether the dict exists yet (tests and benchmarks check the load did not build it)."""
        return self._dict is not None

    def __getitem__(self, token: str) -> int:
        found = self.lookup(token) if isinstance(token, str) else None
        if found is None:
            raise KeyError(token)
        return found

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.lookup(token) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())
