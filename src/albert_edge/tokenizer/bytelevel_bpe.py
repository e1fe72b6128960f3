"""Byte-level BPE (GPT-2 / RoBERTa), written out so that a port can follow it step by step.

The specification, in the order it runs (Hugging Face ``tokenizers``' ``ByteLevel`` pre-tokenizer with
``use_regex=True`` and its ``BPE`` model, equal to OpenAI's GPT-2 ``encoder.py``):

1. **No normalisation** (RoBERTa is cased). With ``add_prefix_space``, one space is put in front of a
   text that does not start with whitespace.
2. **Pre-tokenize** with GPT-2's pattern, ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``,
   scanned left to right, first alternative that matches wins (``_pretokenize`` spells out each one).
   ``\\p{L}`` is a character whose Unicode general category starts with L, ``\\p{N}`` with N, ``\\s``
   Unicode White_Space (``WHITESPACE`` below, not Python's ``str.isspace``).
3. **Bytes to symbols**: each pre-token's UTF-8 bytes become printable characters through GPT-2's
   ``bytes_to_unicode`` table (bytes ``!``..``~``, ``¡``..``¬``, ``®``..``ÿ`` map to themselves, the other 68
   to U+0100 onwards in byte order; so a space is ``Ġ``).
4. **BPE**: start from single symbols; while some adjacent pair is in the merges, merge every
   occurrence (left to right, not overlapping) of the pair with the lowest rank (its line in
   ``merges.txt``); stop when no adjacent pair has a rank.
5. **Ids**: each resulting symbol string's id in the vocab (``<unk>``'s id if absent, which a
   byte-level vocab with all 256 byte symbols never needs).

Text that spells a special token (``<s>``, ``</s>``, ``<mask>``, ...) is tokenized as text; Hugging
Face's tokenizer maps such a spelling to the special id (its added-token matching), the one known
difference. Specials (what the Preprocessor adds): ``<s>`` text ``</s>``, pairs ``<s> a </s></s> b </s>`` (RoBERTa's
``RobertaProcessing``); ``<pad>`` pads. The pack stores the vocab and merges as one JSON object
(``bpe.json``: ``{"type": "bytelevel_bpe", "add_prefix_space": bool, "vocab": {symbol: id},
"merges": ["a b", ...]}``), read from a ``tokenizer.json`` (model type BPE with a ByteLevel
pre-tokenizer) or from ``vocab.json`` + ``merges.txt``.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer._text import ensure_text

KIND = "bytelevel_bpe"
BPE_VOCAB_JSON = "vocab.json"
BPE_MERGES = "merges.txt"
SPECIALS = {"cls": "<s>", "sep": "</s>", "pad": "<pad>", "unk": "<unk>"}
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")
#: Unicode White_Space (PropList.txt): what the pattern's ``\s`` matches.
WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                       "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (step 3)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


_BYTE_SYMBOL = bytes_to_unicode()


def _kind(ch: str) -> str:
    """"s" whitespace, "L" letter, "N" number, "o" anything else."""
    if ch in WHITESPACE:
        return "s"
    cat = unicodedata.category(ch)[0]
    return cat if cat in ("L", "N") else "o"


def _run(text: str, start: int, kind: str) -> int:
    """End of the run of characters of ``kind`` from ``start``."""
    end = start
    while end < len(text) and _kind(text[end]) == kind:
        end += 1
    return end


def _pretokenize(text: str) -> list[tuple[int, int]]:
    """GPT-2's pattern as (start, end) spans of ``text`` (step 2)."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "'":
            word = next((c for c in _CONTRACTIONS if text.startswith(c, i + 1)), None)
            if word is not None:
                spans.append((i, i + 1 + len(word)))
                i += 1 + len(word)
                continue
        lead = 1 if ch == " " and i + 1 < len(text) and _kind(text[i + 1]) != "s" else 0
        kind = _kind(text[i + lead])
        if kind != "s":  # ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
            end = _run(text, i + lead, kind)
        else:  # `\s+(?!\S)`, else `\s+`: a run followed by a non-space gives its last one to that word
            end = _run(text, i, "s")
            if end < len(text) and end - i > 1:
                end -= 1
        spans.append((i, end))
        i = end
    return spans


class ByteLevelBPETokenizer:
    """Text -> byte-level BPE symbols and ids, RoBERTa style (see the module docstring)."""

    kind = KIND
    cls_token, sep_token = SPECIALS["cls"], SPECIALS["sep"]
    pair_separators = 2
    pair_type_id = 0  # RoBERTa's tokenizer gives no token types
    do_lower_case = False

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]], add_prefix_space: bool = False,
                 source: str = "<bpe>") -> None:
        self.source = source
        self.vocab = dict(vocab)
        self.add_prefix_space = bool(add_prefix_space)
        self.ranks = {pair: rank for rank, pair in enumerate(merges)}
        self.vocab_size = len(self.vocab)
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        missing = [t for t in SPECIALS.values() if t not in self.vocab]
        if missing:
            raise TokenizerError(f"{source}: byte-level BPE vocab has no {', '.join(missing)} (expected RoBERTa's specials)")
        self.cls_id, self.sep_id = self.vocab[SPECIALS["cls"]], self.vocab[SPECIALS["sep"]]
        self.pad_id, self.unk_id = self.vocab[SPECIALS["pad"]], self.vocab[SPECIALS["unk"]]
        self._bpe = lru_cache(maxsize=65536)(self._merge)

    @classmethod
    def from_asset(cls, data: bytes, source: str = "<pack>") -> "ByteLevelBPETokenizer":
        """From the pack's ``bpe.json`` bytes (``asset_bytes``' format)."""
        try:
            obj = json.loads(bytes(data).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise TokenizerError(f"{source}: byte-level BPE asset is not UTF-8 JSON ({type(exc).__name__})") from None
        if not isinstance(obj, dict) or obj.get("type") != KIND:
            raise TokenizerError(f"{source}: not a byte-level BPE asset (expected an object with type {KIND!r})")
        vocab, merges = obj.get("vocab"), obj.get("merges")
        if not isinstance(vocab, dict) or not all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()):
            raise TokenizerError(f"{source}: byte-level BPE 'vocab' must map symbols to integer ids")
        if not isinstance(merges, list) or not all(isinstance(m, str) and len(m.split(" ")) == 2 for m in merges):
            raise TokenizerError(f"{source}: byte-level BPE 'merges' must be a list of 'left right' strings")
        return cls(vocab, [tuple(m.split(" ")) for m in merges],  # type: ignore[misc]
                   bool(obj.get("add_prefix_space", False)), source)

    def _merge(self, word: str) -> tuple[str, ...]:
        """Step 4 on one pre-token's symbols."""
        parts = list(word)
        while len(parts) > 1:
            ranked = [(self.ranks.get((a, b)), k) for k, (a, b) in enumerate(zip(parts, parts[1:]))]
            best = min((r for r, _ in ranked if r is not None), default=None)
            if best is None:
                break
            pair = next((parts[k], parts[k + 1]) for r, k in ranked if r == best)
            merged: list[str] = []
            k = 0
            while k < len(parts):
                if k + 1 < len(parts) and (parts[k], parts[k + 1]) == pair:
                    merged.append(parts[k] + parts[k + 1])
                    k += 2
                else:
                    merged.append(parts[k])
                    k += 1
            parts = merged
        return tuple(parts)

    def _prepared(self, text: str | bytes) -> str:
        text = ensure_text(text, "text")
        if self.add_prefix_space and text and text[0] not in WHITESPACE:
            text = " " + text
        return text

    def tokenize(self, text: str | bytes) -> list[str]:
        """Text -> symbols (no ``<s>`` / ``</s>``). ``""`` gives ``[]``."""
        return [symbol for symbol, _, _ in self._symbols(self._prepared(text))]

    def _symbols(self, text: str) -> list[tuple[str, int, int]]:
        """(symbol, first character, end character) in ``text``: a symbol spans the characters its bytes came from."""
        out: list[tuple[str, int, int]] = []
        for start, end in _pretokenize(text):
            owner: list[int] = []  # character index of each UTF-8 byte
            encoded = ""
            for index in range(start, end):
                raw = text[index].encode("utf-8", "surrogatepass")
                encoded += "".join(_BYTE_SYMBOL[b] for b in raw)
                owner.extend([index] * len(raw))
            offset = 0
            for symbol in self._bpe(encoded):
                out.append((symbol, owner[offset], owner[offset + len(symbol) - 1] + 1))
                offset += len(symbol)
        return out

    def tokenize_with_offsets(self, text: str | bytes) -> list[tuple[str, int, int]]:
        """Text -> (symbol, start, end) with ``text[start:end]`` the characters the symbol came from, less
        the spaces (U+0020) at either end (``trim_offsets``, as RoBERTa's tokenizer reports them); a
        symbol of spaces only gets the empty span at its end."""
        prepared = self._prepared(text)
        shift = len(prepared) - len(ensure_text(text, "text"))
        out = []
        for symbol, start, end in self._symbols(prepared):
            while start < end and prepared[start] == " ":
                start += 1
            while end > start and prepared[end - 1] == " ":
                end -= 1
            out.append((symbol, max(start - shift, 0), max(end - shift, 0)))
        return out

    def convert_tokens_to_ids(self, tokens: list[str]) -> list[int]:
        """Symbols -> ids; an unknown symbol maps to ``<unk>``."""
        return [self.vocab.get(t, self.unk_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        """Ids -> symbols; an id outside the vocab is an error naming it."""
        missing = [i for i in ids if i not in self._id_to_token]
        if missing:
            raise TokenizerError(f"{self.source}: token id {missing[0]} is not in the vocab of {self.vocab_size}")
        return [self._id_to_token[i] for i in ids]

    def __repr__(self) -> str:
        return f"ByteLevelBPETokenizer(source={self.source!r}, vocab_size={self.vocab_size})"


def asset_bytes(vocab: dict[str, int], merges: list[str], add_prefix_space: bool) -> bytes:
    """The pack's ``bpe.json``: keys sorted, so one tokenizer always packs to the same bytes."""
    return json.dumps({"type": KIND, "add_prefix_space": add_prefix_space, "vocab": vocab, "merges": merges},
                      ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def asset_from_tokenizer_json(data: Any, source: str) -> bytes | None:
    """``bpe.json`` bytes from a parsed ``tokenizer.json`` holding byte-level BPE; None if it holds another model."""
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        return None
    if data.get("normalizer") not in (None, {}):
        raise TokenizerError(f"{source}: a byte-level BPE tokenizer with a normalizer ({data['normalizer'].get('type')}) "
                             "is not supported (RoBERTa's has none)")
    pre = data.get("pre_tokenizer") or {}
    levels = [pre] if pre.get("type") == "ByteLevel" else [p for p in pre.get("pretokenizers", []) if p.get("type") == "ByteLevel"]
    if not levels:
        raise TokenizerError(f"{source}: a BPE tokenizer without a ByteLevel pre-tokenizer is not byte-level BPE")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    vocab = dict(model.get("vocab") or {})
    for added in data.get("added_tokens") or []:
        vocab.setdefault(added["content"], added["id"])
    return asset_bytes(vocab, merges, bool(levels[0].get("add_prefix_space", False)))


def asset_from_vocab_merges(vocab_path: Path) -> bytes:
    """``bpe.json`` bytes from GPT-2/RoBERTa's ``vocab.json`` and the ``merges.txt`` beside it (its
    ``#version`` line skipped); ``add_prefix_space`` False, as RoBERTa's tokenizer has it."""
    from albert_edge.inputs.jsonfile import load_json_file

    merges_path = vocab_path.parent / BPE_MERGES
    if not merges_path.is_file():
        raise TokenizerError(f"{vocab_path}: byte-level BPE needs {BPE_MERGES} beside it")
    vocab = load_json_file(vocab_path, TokenizerError)
    if not isinstance(vocab, dict):
        raise TokenizerError(f"{vocab_path}: expected a JSON object of symbol -> id")
    try:
        lines = merges_path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenizerError(f"{merges_path}: cannot read merges ({type(exc).__name__})") from None
    merges = [line for line in lines if line.strip() and not line.startswith("#version")]
    return asset_bytes(vocab, merges, False)
