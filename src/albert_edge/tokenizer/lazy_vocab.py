"""A vocab.txt's token -> id map that answers from the file's text until building the dict pays.

An app's first answer looks up a few dozen tokens, but building the dict of a 21,128-token vocab
(split the text, hash every line) cost 3.6-4.0 ms of CPU of every model load: a quarter of the
sample's time from file to first answer. Looking a token up in the text itself is one ``str.rfind``
of ``"\\n" + token + "\\n"`` and one ``str.count`` of the newlines before it (C loops over the
text, tens of microseconds each). After ``SCANS_BEFORE_DICT`` such lookups (a few ms of scans, about
what the dict costs) the dict is built and every later lookup is a hash.

The answers are the dict's exactly: lines split on ``\\n`` only, a trailing empty line dropped, a token
listed twice keeps its last id (``rfind``), and a key holding ``\\n`` is no line at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

# Lookups answered by scanning before the dict is built: ~2-3 ms of scans on the sample's vocab.
SCANS_BEFORE_DICT = 128


class LazyVocab(Mapping[str, int]):
    """``dict(zip(lines, range(len(lines))))`` of a vocab text, without building it up front."""

    def __init__(self, text: str) -> None:
        """``text``: the vocab file's text without ``\\r`` (a CRLF file is split eagerly by the caller)."""
        # Framed by newlines so that every line, the first and the last too, reads "\n" + token + "\n".
        self._framed = "\n" + text if text.endswith("\n") else "\n" + text + "\n"
        self.line_count = self._framed.count("\n") - 1
        self._dict: dict[str, int] | None = None
        self._scans = 0
        # Answers found by scanning, kept: tokenize asks "in vocab?" and then the id of the same token.
        self._scanned: dict[str, int | None] = {}

    def lines(self) -> list[str]:
        """The tokens in id order (one per line)."""
        return self._framed[1:-1].split("\n")

    def _built(self) -> dict[str, int]:
        if self._dict is None:
            lines = self.lines()
            self._dict = dict(zip(lines, range(len(lines))))
        return self._dict

    def lookup(self, token: str) -> int | None:
        """The token's id, or None; by scanning the text until the dict is worth building."""
        if self._dict is not None:
            return self._dict.get(token)
        if token in self._scanned:
            return self._scanned[token]
        if self._scans >= SCANS_BEFORE_DICT:
            return self._built().get(token)
        self._scans += 1
        position = -1 if "\n" in token else self._framed.rfind("\n" + token + "\n")
        found = None if position < 0 else self._framed.count("\n", 0, position)
        self._scanned[token] = found
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
