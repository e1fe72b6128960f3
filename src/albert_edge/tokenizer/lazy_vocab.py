"""A vocab.txt's token -> id map that answers from the file's bytes until building the dict pays.

An app's first answer looks up a few dozen tokens, but building the dict of a 21,128-token vocab
(split the text, hash every line) cost 3.6-4.0 ms of CPU of every model load: a quarter of the
sample's time from file to first answer. So the load keeps the vocab's UTF-8 bytes and, from one numpy
pass over them, where each line starts and a key per line (its length in bytes and its first byte).
A lookup compares the key column once, then the token's remaining bytes on the few lines left, and
answers the last line that matches. The first version scanned the decoded text with ``str.rfind``
and ``str.count``: the sample's vocab holds a character past U+FFFF, so Python stores its text four
bytes a character, and the reverse search took 90-130 us a token (1-1.7 ms of the first answer).
After ``SCANS_BEFORE_DICT`` lookups the dict is built and every later lookup is a hash.

The answers are the dict's exactly: lines split on ``\\n`` only, a trailing empty line dropped, a token
listed twice keeps its last id, and a key holding ``\\n`` is no line at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

# Lookups answered by scanning before the dict is built.
SCANS_BEFORE_DICT = 128
# Line lengths at or past this share one key (int32 keys hold length << 8).
_LONG = (1 << 23) - 1


class LazyVocab(Mapping[str, int]):
    """``dict(zip(lines, range(len(lines))))`` of a vocab text, without building it up front."""

    def __init__(self, text: str, utf8: bytes | None = None) -> None:
        """``text``: the vocab file's text without ``\\r`` (a CRLF file is split eagerly by the caller);
        ``utf8``: the bytes it was decoded from, when the caller has them (else ``text`` is encoded)."""
        raw = text.encode("utf-8") if utf8 is None else bytes(utf8)
        # Framed by newlines so that every line, the first and the last too, lies between two of them.
        self._framed = b"\n" + raw if raw.endswith(b"\n") else b"\n" + raw + b"\n"
        self._bytes = np.frombuffer(self._framed, np.uint8)
        # A multi-byte UTF-8 character never holds the byte 0x0A: these are the text's line breaks.
        breaks = (self._bytes == 10).nonzero()[0].astype(np.int32)
        self._starts = breaks[:-1] + 1
        # Length << 8 | first byte (an empty line's "first byte" is the newline after it: length 0 tells), in
        # int32: half the bytes each lookup compares. A line of _LONG bytes or more keys as _LONG, and a token that
        # long is answered by the dict, so a shared key never stands for a length. Computed in place: every
        # temporary array of a fresh process is new memory, faulted in page by page.
        keys = breaks[1:]
        keys -= self._starts
        np.minimum(keys, _LONG, out=keys)
        keys <<= 8
        keys |= self._bytes[self._starts]
        self._keys = keys
        self.line_count = len(self._starts)
        self._dict: dict[str, int] | None = None
        self._scans = 0
        # Answers found by scanning, kept: tokenize asks "in vocab?" and then the id of the same token.
        self._scanned: dict[str, int | None] = {}

    def lines(self) -> list[str]:
        """The tokens in id order (one per line)."""
        return self._framed[1:-1].decode("utf-8").split("\n")

    def piece_limits(self) -> tuple[int, int]:
        """(longest line not starting with "##", longest "##" line without its "##"), in characters.

        What WordPiece's greedy split needs to skip candidates longer than any token; from the dict it cost a
        pass over every key (and the dict's build) on the first word not in the vocab as a whole. Here: one
        numpy pass, a character being a byte that is not a UTF-8 continuation byte (the text is valid UTF-8).
        """
        # Each line from its start to the next line's start holds its own characters and its newline (a cumsum of
        # the bool mask cast to int32 took 1-4 ms; reduceat of its bytes 0.7).
        lengths = np.add.reduceat(((self._bytes & 0xC0) != 0x80).view(np.uint8), self._starts, dtype=np.int32) - 1
        second = np.minimum(self._starts + 1, len(self._bytes) - 1)
        cont = (lengths >= 2) & (self._bytes[self._starts] == 35) & (self._bytes[second] == 35)
        starts, conts = lengths[~cont], lengths[cont]
        return (int(starts.max()) if len(starts) else 0), (int(conts.max()) if len(conts) else 2) - 2

    def _built(self) -> dict[str, int]:
        if self._dict is None:
            lines = self.lines()
            self._dict = dict(zip(lines, range(len(lines))))
        return self._dict

    def _scan(self, token: str) -> int | None:
        """The id of the last line equal to ``token``, found in the bytes."""
        if "\n" in token:
            return None
        try:
            wanted = token.encode("utf-8")
        except UnicodeEncodeError:   # a lone surrogate: no line of decoded UTF-8 holds one
            return None
        if len(wanted) >= _LONG:
            return self._built().get(token)
        lines = (self._keys == (len(wanted) << 8 | (wanted[0] if wanted else 10))).nonzero()[0]
        for k in range(1, len(wanted)):
            if not len(lines):
                return None
            lines = lines[self._bytes[self._starts[lines] + k] == wanted[k]]
        return int(lines[-1]) if len(lines) else None

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
