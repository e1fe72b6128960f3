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

import unicodedata
from pathlib import Path

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer._text import (
    CLEAN_TABLE,
    decode_asset,
    ensure_text,
    split_on_punctuation,
    strip_accents_nfd,
)

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
        self.source = source
        self.do_lower_case = do_lower_case
        self._id_to_token = list(tokens)
        # A token listed twice keeps its last id, as in Hugging Face's load_vocab.
        self.vocab: dict[str, int] = {tok: i for i, tok in enumerate(tokens)}
        missing = [t for t in REQUIRED_SPECIALS if t not in self.vocab]
        if missing:
            raise TokenizerError(f"{source}: vocab has no {', '.join(missing)} token (expected a BERT vocab.txt)")
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        # [PAD] is id 0 in every BERT vocab; a vocab without it pads with 0 as BERT's
        # input pipeline does (the attention mask hides it either way).
        self.pad_id = self.vocab.get("[PAD]", 0)
        self.vocab_size = len(tokens)
        self._max_start_len = max((len(t) for t in self.vocab if not t.startswith("##")), default=0)
        self._max_cont_len = max((len(t) - 2 for t in self.vocab if t.startswith("##")), default=0)
        self._word_cache: dict[str, tuple[str, ...]] = {}

    @classmethod
    def from_vocab_file(cls, path: str | Path, do_lower_case: bool = True) -> "WordPieceTokenizer":
        """Load ``vocab.txt`` from disk (UTF-8, one token per line)."""
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise TokenizerError(f"{path}: cannot read vocab file ({exc.strerror or exc})") from None
        return cls.from_vocab_text(decode_asset(data, str(path), "vocab"), do_lower_case, source=str(path))

    @classmethod
    def from_vocab_text(cls, text: str, do_lower_case: bool = True, source: str = "<pack>") -> "WordPieceTokenizer":
        """Build from the text of a ``vocab.txt`` (e.g. read out of a model pack).

        Lines are split on ``\\n`` only (not ``str.splitlines``: BERT vocabs contain tokens
        such as U+2028 that ``splitlines`` would break on); a trailing ``\\r`` is dropped so
        a CRLF file gives the same tokens.
        """
        if not isinstance(text, str):
            raise TokenizerError(f"{source}: vocab must be text, got {type(text).__name__}")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        tokens = [line[:-1] if line.endswith("\r") else line for line in lines]
        if not tokens:
            raise TokenizerError(f"{source}: vocab is empty (expected one token per line)")
        return cls(tokens, do_lower_case=do_lower_case, source=source)

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

    def _tokenize_word(self, word: str) -> tuple[str, ...]:
        """One whitespace-free word (after cleaning) -> its WordPiece tokens."""
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
        while start < n:
            # No vocab entry is longer than the longest one, so longer candidates are skipped.
            limit = self._max_start_len if start == 0 else self._max_cont_len
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
