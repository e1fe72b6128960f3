"""The inputs and file names every Android golden shares: android, android_ner and android_qa.

The asset writer (:mod:`albert_edge.android.goldens`) and the NER and QA golden writers
(:mod:`albert_edge.android.ner`, :mod:`albert_edge.android.qa`) read the same sentences, feed the
same edge and random texts, record tokenizations the same way and write the same JSONL; those
shared pieces live here so that each writer imports them rather than one another.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from albert_edge.errors import DataError, TokenizerError
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer
from albert_edge.inputs.userfile import read_user_bytes

GOLDEN_TOKENIZATION = "golden_tokenization.jsonl"
GOLDEN_LOGITS = "golden_logits.jsonl"
GOLDEN_LATENCY = "golden_latency.json"
GOLDEN_PACK = "golden_pack.json"
GOLDEN_CODEPOINTS = "golden_codepoints.json"
GOLDEN_NORMALIZATION = "golden_normalization.jsonl"
GOLDEN_NER = "golden_ner.jsonl"  # written by albert_edge.android.ner
PACK_FIXTURE = "pack_fixture.tflite"
PACK_METADATA_FIXTURE = "pack_fixture_metadata.tflite"
SENTENCES_FILE = "golden_sentences.txt"
VOCAB_FILE = "vocab.txt"
ASSET_MODEL = "model.tflite"


@dataclass(frozen=True)
class GoldenCase:
    """One tokenizer input: a text or a pair, the sequence budget and the casing rule."""

    text_a: str
    text_b: str | None = None
    max_seq_len: int = 128
    do_lower_case: bool = True


# Inputs where a Java port of BERT's basic tokenizer typically goes wrong. Each line says why.
EDGE_TEXTS: tuple[str, ...] = (
    "这个手机很好用，Battery life is GREAT！",  # mixed Chinese/English, full-width punctuation
    "Café Déjà Vu, naïve façade, Ångström, Ελληνικά, ÀÉÎÕÜ",  # accents stripped only when lower-casing
    "İstanbul İZMİR",  # U+0130: Python lower() gives i + U+0307 (two code points)
    "ΟΔΥΣΣΕΥΣ ΣΑΣ Σ. ΑΣ'Σ",  # final sigma depends on the neighbours (Cased / Case_Ignorable)
    "ǅemal ǈubljana ß ẞ ﬁ ﬀ",  # title-case digraphs, sharp s, ligatures
    "表情😀👍🏽🇨🇳很❤️！",  # emoji: astral code points, skin-tone modifier, ZWJ-free flags, VS16
    "全角标点：「你好」『世界』【测试】（括号）《书名》〈尖〉……——～！？；，。、",  # full-width / CJK punctuation
    "ＡＢＣ１２３ｘｙｚ＠＃＄％",  # full-width Latin and digits (NFD does not fold them)
    # CJK Extensions A-E, compatibility ideographs (F900 block, 2F800 supplement)
    (
        "\u3400\u3401\u4db5 \U00020000\U00020001\U0002a6b2 \U0002a700\U0002b734 \U0002b740\U0002b81d "
        "\U0002b820\U0002cea1 \uf900\uf901\ufa2d \U0002f800\U0002f801\U0002fa1d"
    ),
    "𰀀𰀁 𲎯 ㄅㄆ ぁあ アイ 가나 ꀀ",  # Ext G (not BERT-Chinese), bopomofo, kana, hangul, Yi
    # a word over 100 characters becomes one [UNK]
    (
        "超长单词supercalifragilisticexpialidociouspneumonoultramicroscopicsilicovolcanoconiosis"
        "antidisestablishmentarianismfloccinaucinihilipilification结束"
    ),
    "unaffable unbelievable reprogramming 1234567890 3.14159 2,000,000",  # ## continuations, digits
    "tab\there\nnewline\r\ncrlf\u3000ideographic\u00a0nbsp\u2028linesep\u2029parasep\u0085nel",  # whitespace kinds
    "zero\u200bwidth\u200dzwj\u00adsoft\ufeffbom\u200eLRM\x00nul\ufffdrepl\x7fdel\x1bESC",  # Cf/Cc and U+FFFD removed
    "\ue000私用\U000f0000平面 \u0378未分配 \U0001fa7c新 \U00010570\U00010597 \U0001e290",  # Co, Cn, Unicode 14 letters
    "combining: e\u0301 a\u0308 n\u0303 \u0915\u093f \u0e01\u0e34 \u05d0\u05b8",  # Mn marks after base letters
    "[CLS] [SEP] [UNK] [MASK] ##ing <s> </s>",  # special-token spellings are plain text here
    "www.example.com/path?q=1&x=y email@test.cn $100 #tag @user 50% ^_^ `code` ~tilde| {brace}",
    "¿Qué? ¡Sí! «quotes» “curly” ‘single’ †‡•‰′″‹›⁂ § ¶ © ® ™ ° ± × ÷",  # P* beyond ASCII, and So/Sm
    "Ⅻ ① ⑩ ⒈ ㈠ ㊣ ℃ ℉ ㎏ ㎡",  # compatibility forms NFD leaves alone
    "العربية עברית हिन्दी ไทย 日本語の文章です。한국어 문장입니다.",  # other scripts
    "   ",  # only whitespace: no tokens (an error for the preprocessor)
    "\u200b\u200b",  # only format characters: no tokens
    "a",  # shortest real input
)


# Code point pools for the random texts: where Unicode data (categories, case mappings,
# decompositions) is dense or differs between Unicode versions.
_RANDOM_POOLS: tuple[tuple[int, int], ...] = (
    (0x20, 0x7E),  # ASCII: BERT's ASCII punctuation ranges
    (0x80, 0x24F),  # Latin-1 and Latin Extended: accents, NBSP, soft hyphen, C1 controls
    (0x300, 0x36F),  # combining diacritics (Mn)
    (0x370, 0x3FF),  # Greek: sigma rules
    (0x400, 0x4FF),  # Cyrillic
    (0x10A0, 0x10FF),  # Georgian: case pairs added in Unicode 11
    (0x13A0, 0x13FF),  # Cherokee: lower-case maps to upper block
    (0x1E00, 0x1EFF),  # Latin Extended Additional: precomposed letters
    (0x2000, 0x206F),  # general punctuation, spaces, format characters
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7A3),  # Hangul syllables (NFD decomposes them)
    (0xF900, 0xFAFF),  # CJK compatibility ideographs (NFC maps them)
    (0xFF00, 0xFFEF),  # full-width forms
    (0x10400, 0x1044F),  # Deseret: astral case pairs
    (0x10570, 0x105BF),  # Vithkuqi: new in Unicode 14
    (0x1F300, 0x1FAFF),  # emoji
    (0x20000, 0x2A6DF),  # CJK Extension B
    (0x2F800, 0x2FA1F),  # CJK compatibility supplement
    (0x0, 0x10FFFF),  # anywhere: unassigned and private-use code points
)
RANDOM_SEED = 20240603


def random_texts(count: int = 120, seed: int = RANDOM_SEED) -> list[str]:
    """Seeded random strings over code points where a Java port is likely to differ from Python.

    Surrogates are skipped (they cannot be written as UTF-8); spaces are mixed in so texts have
    several words.
    """
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 40)):
            if rng.random() < 0.15:
                chars.append(" ")
                continue
            lo, hi = rng.choice(_RANDOM_POOLS)
            cp = rng.randint(lo, hi)
            while is_surrogate(cp):
                cp = rng.randint(lo, hi)
            chars.append(chr(cp))
        texts.append("".join(chars))
    return texts


def is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


def read_sentences(path: str | Path) -> list[str]:
    """Non-empty stripped lines of a UTF-8 text file (split on \\n only, like the vocab)."""
    try:
        # Bounded while reading: a device (/dev/zero) or endless pipe is refused instead of hanging.
        text = read_user_bytes(path, 64 << 20, DataError, "sentences file").decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{path}: sentences file is not UTF-8") from None
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        raise DataError(f"{path}: sentences file has no non-empty lines")
    return lines


def tokenization_record(case: GoldenCase, tokenizer: WordPieceTokenizer) -> dict[str, Any]:
    """One golden line. An input the preprocessor refuses records ``"error": message`` instead of ids."""
    record: dict[str, Any] = {
        "text_a": case.text_a,
        "text_b": case.text_b,
        "max_seq_len": case.max_seq_len,
        "do_lower_case": case.do_lower_case,
    }
    try:
        enc = Preprocessor(tokenizer, case.max_seq_len).encode(case.text_a, case.text_b)
    except TokenizerError as exc:
        # The Java preprocessor must refuse the same inputs; the message is for humans.
        record["error"] = str(exc)
        return record
    record.update(
        tokens=enc.tokens,
        input_ids=enc.input_ids,
        token_type_ids=enc.token_type_ids,
        attention_mask=enc.attention_mask,
        truncated=enc.truncated,
    )
    return record


# Characters str.splitlines() (and many editors) treat as line breaks; json.dumps leaves them raw
# when ensure_ascii=False, which would split one JSONL record across "lines".
_LINE_BREAK_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


def render_jsonl(records: Iterable[dict[str, Any]]) -> str:
    """One compact JSON object per line, UTF-8 (not \\u-escaped, so diffs are readable)."""
    return "".join(
        json.dumps(r, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAK_ESCAPES) + "\n" for r in records
    )


# Every code point is tokenized between these, so casing context (final sigma), punctuation
# splitting and word joining are exercised, not just the character in isolation.
CODEPOINT_CONTEXT = ("A", "\u03a3b")
CODEPOINT_BLOCK = 4096
