"""BERT basic tokenization + greedy longest-match WordPiece over a ``vocab.txt``.

This is the tokenizer of the Chinese ALBERT/BERT checkpoints (brightmart albert_zh,
bert-base-chinese). It reproduces Hugging Face's Python ``BertTokenizer`` (Google BERT's
``FullTokenizer`` plus HF's NFC and C* rules) exactly, in the same order: clean text (drop
NUL, U+FFFD, category C*; map whitespace to space) and put spaces around every CJK
ideograph; split on whitespace (``str.split``, as BERT does); per word, NFC, then
lower-case and strip accents (NFD, drop Mn) when ``do_lower_case``; split off each
punctuation char; WordPiece each piece with ``##`` continuations, ``[UNK]`` for a piece
that cannot be covered or is longer than 100 chars. A literal "[SEP]" in the text is
text, not a special token (user input must not forge segment boundaries). The Rust
``tokenizers`` BertTokenizer differs in a few corners, listed and tested in
tests/test_tokenizer_wordpiece_hf_parity.py.

Speed: the clean/CJK pass is one ``str.translate`` (a C loop over a lazily filled table),
and the per-word work is memoised: a whitespace-separated word always maps to the same
pieces, and in Chinese text the words are mostly single ideographs that repeat.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import filterfalse
from operator import methodcaller
from collections.abc import Mapping
from pathlib import Path

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer.lazy_vocab import LazyVocab
from albert_edge.tokenizer._text import (
    CLEAN_TABLE,
    check_utf8,
    decode_asset,
    ensure_text,
    split_on_punctuation,
    strip_accents_nfd,
)

_NON_SPACE = re.compile(r"\S+")
REQUIRED_SPECIALS = ("[CLS]", "[SEP]", "[UNK]")
MAX_INPUT_CHARS_PER_WORD = 100
# Bounds the memo so a long-running app tokenizing unbounded text cannot grow without limit.
_CACHE_LIMIT = 1 << 17


class WordPieceTokenizer:
    """Text -> WordPiece tokens and ids for a BERT-style ``vocab.txt`` (one token per line).

    Line ``i`` of the file is token id ``i``; ``vocab_size`` is the number of lines, which
    is what the checkpoint's embedding matrix is sized for.
    """

    kind = "wordpiece"

    def __init__(self, tokens: list[str], do_lower_case: bool = True, source: str = "<vocab>") -> None:
        tokens = list(tokens)
        # A token listed twice keeps its last id, as in Hugging Face's load_vocab (dict() keeps the
        # last value too; built from zip it is a C loop, 3x faster than a comprehension on 21k tokens).
        self._setup(dict(zip(tokens, range(len(tokens)))), len(tokens), tokens, do_lower_case, source)

    def _setup(self, vocab: Mapping[str, int], vocab_size: int, tokens: list[str] | None,
               do_lower_case: bool, source: str) -> None:
        """Everything but the vocab's own construction; ``tokens`` None: split from a LazyVocab when asked."""
        self.source = source
        self.do_lower_case = do_lower_case
        self._tokens = tokens
        self.vocab: Mapping[str, int] = vocab
        missing = [t for t in REQUIRED_SPECIALS if t not in self.vocab]
        if missing:
            raise TokenizerError(f"{source}: vocab has no {', '.join(missing)} token (expected a BERT vocab.txt)")
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        # [PAD] is id 0 in every BERT vocab; a vocab without it pads with 0 as BERT's
        # input pipeline does (the attention mask hides it either way).
        self.pad_id = self.vocab.get("[PAD]", 0)
        self.vocab_size = vocab_size
        # Longest start / continuation piece: found on the first word not in the vocab as a whole
        # (Chinese text rarely has one), so loading a model does not scan 21k tokens for them.
        self._piece_limits: tuple[int, int] | None = None
        self._word_cache: dict[str, tuple[str, ...]] = {}

    @property
    def _id_to_token(self) -> list[str]:
        """Tokens in id order; split from the vocab text on first use when the load kept only the text."""
        if self._tokens is None:
            assert isinstance(self.vocab, LazyVocab)
            self._tokens = self.vocab.lines()
        return self._tokens

    def _limits(self) -> tuple[int, int]:
        """(longest start piece, longest ``##`` continuation without its ``##``), computed once."""
        if self._piece_limits is None and isinstance(self.vocab, LazyVocab):
            self._piece_limits = self.vocab.piece_limits()   # no dict built, no pass over its keys
        if self._piece_limits is None:
            continuation = methodcaller("startswith", "##")
            starts = max(map(len, filterfalse(continuation, self.vocab)), default=0)
            conts = max(map(len, filter(continuation, self.vocab)), default=2) - 2
            self._piece_limits = (starts, conts)
        return self._piece_limits

    @classmethod
    def from_vocab_file(cls, path: str | Path, do_lower_case: bool = True) -> "WordPieceTokenizer":
        """Load ``vocab.txt`` from disk (UTF-8, one token per line)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise TokenizerError(f"{path}: cannot read vocab file ({exc.strerror or exc})") from None
        return cls.from_vocab_text(decode_asset(data, str(path), "vocab"), do_lower_case, source=str(path))

    @classmethod
    def from_vocab_text(cls, text: str, do_lower_case: bool = True, source: str = "<pack>",
                        utf8: bytes | None = None) -> "WordPieceTokenizer":
        """Build from the text of a ``vocab.txt`` (e.g. read out of a model pack).

        Lines are split on ``\\n`` only (not ``str.splitlines``: BERT vocabs contain tokens
        such as U+2028 that ``splitlines`` would break on); a trailing ``\\r`` is dropped so
        a CRLF file gives the same tokens. ``utf8``: the bytes ``text`` was decoded from, when the caller
        has them (the lookups read bytes; encoding the text again costs about what decoding it did).
        """
        if not isinstance(text, str):
            raise TokenizerError(f"{source}: vocab must be text, got {type(text).__name__}")
        if text and (b"\r" not in utf8 if utf8 is not None else "\r" not in text):
            return cls._lazy(LazyVocab(text, utf8), do_lower_case, source)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        # Per-line work only for a CRLF file: the comprehension costs 1 ms of every load on 21k lines.
        tokens = [line[:-1] if line.endswith("\r") else line for line in lines] if "\r" in text else lines
        if not tokens:
            raise TokenizerError(f"{source}: vocab is empty (expected one token per line)")
        return cls(tokens, do_lower_case=do_lower_case, source=source)

    @classmethod
    def from_vocab_bytes(cls, data: bytes, do_lower_case: bool = True, source: str = "<pack>",
                         kind: str = "vocab.txt") -> "WordPieceTokenizer":
        """Build from a ``vocab.txt``'s bytes (a model pack's member): ``from_vocab_text`` of their UTF-8 text, with
        the same errors. A LF-only vocab is checked to be UTF-8 and kept as bytes: no decoded copy is made."""
        if data and b"\r" not in data:
            check_utf8(data, source, kind)
            return cls._lazy(LazyVocab(None, data), do_lower_case, source)
        return cls.from_vocab_text(decode_asset(data, source, kind), do_lower_case, source, utf8=data)

    @classmethod
    def _lazy(cls, vocab: LazyVocab, do_lower_case: bool, source: str) -> "WordPieceTokenizer":
        """No dict at load: the first answer's few lookups scan the bytes (tokenizer/lazy_vocab.py)."""
        tokenizer = cls.__new__(cls)
        tokenizer._setup(vocab, vocab.line_count, None, do_lower_case, source)
        return tokenizer

    def tokenize(self, text: str | bytes) -> list[str]:
        """Text -> WordPiece tokens (no [CLS]/[SEP]). ``""`` gives ``[]``.

        Bytes are decoded as UTF-8; None, non-strings and invalid UTF-8 raise TokenizerError.
        """
        text = ensure_text(text, "text")
        cache = self._word_cache
        out: list[str] = []
        for word in text.translate(CLEAN_TABLE).split():
            pieces = cache.get(word)
            if pieces is None:
                pieces = self._tokenize_word(word)
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[word] = pieces
            out.extend(pieces)
        return out

    def tokenize_with_offsets(self, text: str | bytes) -> list[tuple[str, int, int]]:
        """Text -> (token, start, end) with ``text[start:end]`` the characters the token came from.

        The tokens are exactly ``tokenize(text)``'s. Offsets index the ORIGINAL string (after UTF-8
        decoding of bytes), so an app can cut an entity out of what the user typed. A ``##`` piece
        covers the characters it continues with; ``[UNK]`` covers its whole punctuation-free part.
        Normalisation is tracked per base character and its following combining marks, so "é"
        typed as e + U+0301 maps back to both code points, and a character that lower-cases to
        two (U+0130) gives its span to whichever pieces hold them. Hugging Face's
        ``BertTokenizerFast(return_offsets_mapping=True)`` is the judge
        (tests/test_tokenizer_offsets.py).
        """
        text = ensure_text(text, "text")
        out: list[tuple[str, int, int]] = []
        # Clean per character (the same table as tokenize) and keep each output char's origin.
        chars: list[str] = []
        owner: list[int] = []
        for index, ch in enumerate(text):
            mapped = CLEAN_TABLE[ord(ch)]
            if mapped:
                chars.extend(mapped)
                owner.extend([index] * len(mapped))
        cleaned = "".join(chars)
        for match in _NON_SPACE.finditer(cleaned):
            a, b = match.span()
            word = cleaned[a:b]
            pieces = self._word_cache.get(word) or self._tokenize_word(word)
            out.extend(self._piece_offsets(word, owner[a:b], pieces))
        return out

    def _normalise_char(self, text: str) -> str:
        """_tokenize_word's per-character normalisation (NFC, lower case, accents stripped)."""
        if not text.isascii():
            text = unicodedata.normalize("NFC", text)
        if self.do_lower_case:
            text = text.lower()
            if not text.isascii():
                text = strip_accents_nfd(text)
        return text

    def _normalise_units(self, word: str, owner: list[int]) -> tuple[str, list[tuple[int, int]]]:
        """The word normalised as _tokenize_word does, with each normalised character's [start, end)
        in the original text.

        Units are a character with its following combining marks. When normalising the unit's
        characters one by one gives the same string, each output character keeps its own origin
        (a stripped accent simply vanishes, as in Hugging Face's alignments); otherwise (NFC
        composed e + U+0301 into one character) every output character spans the whole unit.
        """
        units: list[tuple[str, list[int]]] = []
        for ch, origin in zip(word, owner):
            if units and unicodedata.category(ch)[0] == "M":
                units[-1][1].append(origin)
                units[-1] = (units[-1][0] + ch, units[-1][1])
            else:
                units.append((ch, [origin]))
        norm: list[str] = []
        spans: list[tuple[int, int]] = []
        for unit, origins in units:
            whole = self._normalise_char(unit)
            singles = [self._normalise_char(ch) for ch in unit]
            if "".join(singles) == whole:
                for piece, origin in zip(singles, origins):
                    spans.extend([(origin, origin + 1)] * len(piece))
            else:
                spans.extend([(origins[0], origins[-1] + 1)] * len(whole))
            norm.append(whole)
        return "".join(norm), spans

    def _piece_offsets(self, word: str, owner: list[int], pieces: tuple[str, ...]) -> list[tuple[str, int, int]]:
        """Offsets of one word's pieces: walk the normalised word as _tokenize_word splits it."""
        normalised, spans = self._normalise_units(word, owner)
        # The word-level normalisation differs from the per-unit one only where context matters
        # (a final capital sigma lower-cases to "ς"): same length, so the per-unit spans hold.
        parts: list[tuple[int, int]] = []  # (start, end) in ``normalised`` of each punctuation-free part
        for sub in _NON_SPACE.finditer(normalised):
            start = sub.start()
            for part in split_on_punctuation(sub.group()):
                parts.append((start, start + len(part)))
                start += len(part)
        out: list[tuple[str, int, int]] = []
        queue = list(pieces)
        for start, end in parts:
            cursor = start
            while queue and cursor < end:
                piece = queue.pop(0)
                width = end - cursor if piece == "[UNK]" else len(piece) - (2 if piece.startswith("##") else 0)
                stop = min(end, cursor + max(width, 1))
                out.append((piece, spans[cursor][0], spans[stop - 1][1]))
                cursor = stop
        # Defensive: pieces left over (impossible when the walk matches _tokenize_word) keep the
        # word's span rather than vanish.
        out.extend((piece, owner[0], owner[-1] + 1) for piece in queue)
        return out

    def _tokenize_word(self, word: str) -> tuple[str, ...]:
        """One whitespace-free word (after cleaning) -> its WordPiece tokens."""
        if len(word) == 1 and ("\u4e00" <= word <= "\u9fff" or "\u3400" <= word <= "\u4dbf"):
            # A unified ideograph, BERT's one-character word in Chinese text, is its own normal form (no
            # decomposition, no case, no mark, not punctuation): the calls below cost a fresh process 5-8 us for
            # each new character, 0.1-0.15 ms of the sample's first encode.
            return tuple(self._wordpiece(word))
        if not word.isascii():
            # Hugging Face composes (NFC) before anything else so that "é" typed as e + U+0301
            # matches the vocab's "é"; it also maps compatibility ideographs (U+F900 -> U+8C48).
            word = unicodedata.normalize("NFC", word)
        if self.do_lower_case:
            word = word.lower()
            if not word.isascii():
                word = strip_accents_nfd(word)
        pieces: list[str] = []
        # Accent stripping can leave only marks that vanish, or expose new whitespace.
        for sub in word.split():
            for part in split_on_punctuation(sub):
                pieces.extend(self._wordpiece(part))
        return tuple(pieces)

    def _wordpiece(self, word: str) -> list[str]:
        """Greedy longest-match-first split of one punctuation-free word."""
        n = len(word)
        if n > MAX_INPUT_CHARS_PER_WORD:
            return ["[UNK]"]
        vocab = self.vocab
        if word in vocab:
            return [word]
        pieces: list[str] = []
        start = 0
        max_start, max_cont = self._limits()
        while start < n:
            # No vocab entry is longer than the longest one, so longer candidates are skipped.
            limit = max_start if start == 0 else max_cont
            end = min(n, start + limit)
            found = None
            while end > start:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in vocab:
                    found = sub
                    break
                end -= 1
            if found is None:
                return ["[UNK]"]
            pieces.append(found)
            start = end
        return pieces

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        """Tokens -> ids; a token not in the vocab maps to ``unk_id``."""
        vocab, unk = self.vocab, self.unk_id
        return [vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        """Ids -> tokens; an id outside the vocab is an error naming it."""
        for i in ids:
            if not 0 <= i < self.vocab_size:
                raise TokenizerError(f"{self.source}: token id {i} outside vocab of {self.vocab_size}")
        return [self._id_to_token[i] for i in ids]

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(source={self.source!r}, vocab_size={self.vocab_size}, do_lower_case={self.do_lower_case})"
