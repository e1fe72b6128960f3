"""Python's Unicode character data, rendered as a Java class for the phone's tokenizer.

BERT's basic tokenizer decides whitespace, control, punctuation, CJK and accents with
``unicodedata.category``, lower-cases with ``str.lower`` and normalizes (NFC, NFD) with
``unicodedata.normalize``. Java's ``Character.getType``, ``toLowerCase`` and
``java.text.Normalizer`` follow the JDK's (or, on a phone, the Android release's ICU) Unicode
version, which is not Python's: a character assigned in Unicode 14 is "Cn" for Java 17 and a
letter for Python 3.11, and Android 7 ships Unicode 8. So albert-core does not ask Java; it
reads these tables, generated from the very ``unicodedata`` (and the very tokenizer
predicates) the Python side uses. tests/test_android_golden.py fails when the committed Java
file and this generator disagree.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable, Iterable

from albert_edge.tokenizer import _text as bert_text
from albert_edge.tokenizer.bytelevel_bpe import WHITESPACE as BPE_WHITESPACE

JAVA_PACKAGE = "org.albertedge.core"
JAVA_CLASS = "UnicodeTables"
# Java string constants hold at most 65535 UTF-8 bytes; chunks stay well below.
_CHUNK_CHARS = 8000
_MAX_CP = 0x10FFFF
_FINAL_SIGMA_PROBE_CASED = "A"


def _is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


def code_point_ranges(predicate: Callable[[int], bool]) -> list[tuple[int, int]]:
    """Inclusive ``(first, last)`` runs of code points for which ``predicate`` holds."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for cp in range(_MAX_CP + 1):
        if predicate(cp):
            if start is None:
                start = cp
        elif start is not None:
            runs.append((start, cp - 1))
            start = None
    if start is not None:
        runs.append((start, _MAX_CP))
    return runs


def _category(cp: int) -> str:
    return unicodedata.category(chr(cp))


def is_cased(cp: int) -> bool:
    """Unicode's Cased property as CPython's ``str.lower`` sees it (Lowercase | Uppercase | Lt)."""
    ch = chr(cp)
    return ch.islower() or ch.isupper() or _category(cp) == "Lt"


def is_case_ignorable(cp: int) -> bool:
    """Unicode's Case_Ignorable property, read off CPython's own final-sigma rule.

    ``unicodedata`` does not expose Case_Ignorable, but ``str.lower`` uses it: a capital sigma
    after a cased letter becomes final (U+03C2) exactly when the characters between them are
    all case-ignorable. So asking ``("A" + c + "Σ").lower()`` is asking CPython directly.
    """
    if _is_surrogate(cp) or is_cased(cp):
        return False
    return (_FINAL_SIGMA_PROBE_CASED + chr(cp) + "\u03a3").lower()[-1] == "\u03c2"


def lower_map() -> dict[int, str]:
    """Code point -> ``str.lower()`` of it, for every code point that lower-casing changes.

    Context-free: the one context-sensitive rule (final sigma) is applied by the Java code
    with the Cased and Case_Ignorable tables.
    """
    return {
        cp: chr(cp).lower()
        for cp in range(_MAX_CP + 1)
        if not _is_surrogate(cp) and chr(cp).lower() != chr(cp)
    }


_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3


def _is_hangul_syllable(cp: int) -> bool:
    return _HANGUL_FIRST <= cp <= _HANGUL_LAST


def nfd_map() -> dict[int, str]:
    """Code point -> ``NFD(chr(cp))`` where that differs, Hangul syllables excepted (algorithmic).

    Each value is already fully decomposed and canonically ordered, so decomposing a string is
    concatenation followed by one canonical-ordering pass.
    """
    out = {}
    for cp in range(_MAX_CP + 1):
        if _is_surrogate(cp) or _is_hangul_syllable(cp):
            continue
        nfd = unicodedata.normalize("NFD", chr(cp))
        if nfd != chr(cp):
            out[cp] = nfd
    return out


def nfkd_map() -> dict[int, str]:
    """Code point -> ``NFKD(chr(cp))`` where that differs, Hangul syllables excepted (algorithmic).

    ALBERT's SentencePiece preprocessing decomposes each character with NFKD and drops its
    combining marks; the values are fully decomposed and canonically ordered already.
    """
    out = {}
    for cp in range(_MAX_CP + 1):
        if _is_surrogate(cp) or _is_hangul_syllable(cp):
            continue
        nfkd = unicodedata.normalize("NFKD", chr(cp))
        if nfkd != chr(cp):
            out[cp] = nfkd
    return out


def combining_class_runs() -> list[tuple[int, int, int]]:
    """``(first, last, ccc)`` runs of non-zero canonical combining class."""
    runs: list[tuple[int, int, int]] = []
    for cp in range(_MAX_CP + 1):
        ccc = unicodedata.combining(chr(cp))
        if not ccc:
            continue
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == ccc:
            runs[-1] = (runs[-1][0], cp, ccc)
        else:
            runs.append((cp, cp, ccc))
    return runs


def composition_pairs() -> dict[tuple[int, int], int]:
    """``(first, second) -> primary composite`` for NFC, Hangul excepted (algorithmic).

    A character composes iff its canonical decomposition is a pair and NFC leaves it alone,
    which is exactly "not in the composition exclusions" (singletons and non-starter
    decompositions have NFC(c) != c as well).
    """
    pairs = {}
    for cp in range(_MAX_CP + 1):
        if _is_surrogate(cp) or _is_hangul_syllable(cp):
            continue
        decomposition = unicodedata.decomposition(chr(cp))
        if not decomposition or decomposition.startswith("<"):
            continue
        parts = decomposition.split()
        if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
            pairs[(int(parts[0], 16), int(parts[1], 16))] = cp
    return pairs


def range_tables() -> dict[str, list[tuple[int, int]]]:
    """Table name -> code point runs. Names are the Java constant prefixes.

    The BERT_* tables are read off the Python tokenizer's own predicates, so the phone follows
    whatever rule the Python side implements (e.g. which C* categories count as control).
    """
    return {
        "BERT_WHITESPACE": code_point_ranges(lambda cp: bert_text.is_whitespace(chr(cp))),
        "BERT_CONTROL": code_point_ranges(lambda cp: bert_text.is_control(chr(cp))),
        "BERT_PUNCTUATION": code_point_ranges(lambda cp: bert_text.is_punctuation(chr(cp))),
        "BERT_CJK": code_point_ranges(bert_text.is_cjk),
        "NONSPACING_MARK": code_point_ranges(lambda cp: _category(cp) == "Mn"),
        "PYTHON_SPACE": code_point_ranges(lambda cp: chr(cp).isspace()),
        "CASED": code_point_ranges(is_cased),
        "CASE_IGNORABLE": code_point_ranges(is_case_ignorable),
        # Offsets and SentencePiece (token classification): a character and its following marks
        # are one unit; Cc/Cf are what SentencePiece's normaliser drops; str.isdigit for ALBERT's
        # digit-comma re-split.
        "MARK": code_point_ranges(lambda cp: _category(cp)[0] == "M"),
        "CONTROL_OR_FORMAT": code_point_ranges(lambda cp: _category(cp) in ("Cc", "Cf")),
        "PYTHON_DIGIT": code_point_ranges(lambda cp: not _is_surrogate(cp) and chr(cp).isdigit()),
        # Byte-level BPE's GPT-2 pattern: \p{L}, \p{N} and \s (Unicode White_Space).
        "LETTER": code_point_ranges(lambda cp: _category(cp)[0] == "L"),
        "NUMBER": code_point_ranges(lambda cp: _category(cp)[0] == "N"),
        "BPE_WHITESPACE": code_point_ranges(lambda cp: chr(cp) in BPE_WHITESPACE),
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + _CHUNK_CHARS] for i in range(0, len(text), _CHUNK_CHARS)] or [""]


def _java_string_array(name: str, text: str) -> str:
    body = ",\n".join(f'        "{chunk}"' for chunk in _chunks(text))
    return f"    private static final String[] {name} = {{\n{body}\n    }};\n"


def _encode_ranges(runs: Iterable[tuple[int, int]]) -> str:
    """``first-last`` in hex, comma separated (ASCII only, so no escaping is needed)."""
    return ",".join(f"{a:x}-{b:x}" for a, b in runs)


def _encode_ccc(runs: Iterable[tuple[int, int, int]]) -> str:
    """``first-last:ccc`` (hex range, decimal class), comma separated."""
    return ",".join(f"{a:x}-{b:x}:{c}" for a, b, c in runs)


def _encode_pairs(pairs: dict[tuple[int, int], int]) -> str:
    """``first second=composite`` in hex, comma separated, sorted."""
    return ",".join(f"{a:x} {b:x}={c:x}" for (a, b), c in sorted(pairs.items()))


def _encode_lower(mapping: dict[int, str]) -> str:
    """``cp=cp1 cp2`` in hex, comma separated, sorted by code point."""
    return ",".join(f"{cp:x}=" + " ".join(f"{ord(c):x}" for c in out) for cp, out in sorted(mapping.items()))


# The tables parsed once, when the class loads (the generated string fields are their source).
_JAVA_PARSED_TABLES = """    private static final RangeSet BERT_WHITESPACE = RangeSet.parse(BERT_WHITESPACE_RANGES);
    private static final RangeSet BERT_CONTROL = RangeSet.parse(BERT_CONTROL_RANGES);
    private static final RangeSet BERT_PUNCTUATION = RangeSet.parse(BERT_PUNCTUATION_RANGES);
    private static final RangeSet BERT_CJK = RangeSet.parse(BERT_CJK_RANGES);
    private static final RangeSet NONSPACING_MARK = RangeSet.parse(NONSPACING_MARK_RANGES);
    private static final RangeSet PYTHON_SPACE = RangeSet.parse(PYTHON_SPACE_RANGES);
    private static final RangeSet CASED = RangeSet.parse(CASED_RANGES);
    private static final RangeSet CASE_IGNORABLE = RangeSet.parse(CASE_IGNORABLE_RANGES);
    private static final LowerMap LOWER = LowerMap.parse(LOWER_MAP);
    private static final RangeSet MARK = RangeSet.parse(MARK_RANGES);
    private static final RangeSet CONTROL_OR_FORMAT = RangeSet.parse(CONTROL_OR_FORMAT_RANGES);
    private static final RangeSet PYTHON_DIGIT = RangeSet.parse(PYTHON_DIGIT_RANGES);
    private static final RangeSet LETTER = RangeSet.parse(LETTER_RANGES);
    private static final RangeSet NUMBER = RangeSet.parse(NUMBER_RANGES);
    private static final RangeSet BPE_WHITESPACE = RangeSet.parse(BPE_WHITESPACE_RANGES);
    private static final LowerMap NFD = LowerMap.parse(NFD_MAP);
    private static final LowerMap NFKD = LowerMap.parse(NFKD_MAP);
    private static final CombiningClasses CCC = CombiningClasses.parse(COMBINING_CLASS_RUNS, COMPOSITION_PAIRS);"""

# One accessor per table: what the Java tokenizer calls (each names the Python rule it mirrors).
_JAVA_ACCESSORS = """    /** albert_edge.tokenizer._text.is_whitespace: mapped to a space by the clean pass. */
    static boolean isBertWhitespace(int cp) {
        return BERT_WHITESPACE.contains(cp);
    }

    /** albert_edge.tokenizer._text.is_control: dropped by the clean pass. */
    static boolean isBertControl(int cp) {
        return BERT_CONTROL.contains(cp);
    }

    /** albert_edge.tokenizer._text.is_punctuation: split off as its own token. */
    static boolean isBertPunctuation(int cp) {
        return BERT_PUNCTUATION.contains(cp);
    }

    /** albert_edge.tokenizer._text.is_cjk: one token per ideograph. */
    static boolean isBertCjk(int cp) {
        return BERT_CJK.contains(cp);
    }

    /** The is_cjk code point runs, {@code [n][2]} inclusive. */
    static int[][] bertCjkRanges() {
        return BERT_CJK.runs();
    }

    /** unicodedata.category(c) == "Mn": dropped after NFD when stripping accents. */
    static boolean isNonspacingMark(int cp) {
        return NONSPACING_MARK.contains(cp);
    }

    /** c.isspace(): what Python's str.split() splits on. */
    static boolean isPythonSpace(int cp) {
        return PYTHON_SPACE.contains(cp);
    }

    /** Unicode Cased, as str.lower() uses it for the final-sigma rule. */
    static boolean isCased(int cp) {
        return CASED.contains(cp);
    }

    /** Unicode Case_Ignorable, as str.lower() uses it for the final-sigma rule. */
    static boolean isCaseIgnorable(int cp) {
        return CASE_IGNORABLE.contains(cp);
    }

    /** unicodedata.category(c) starts with "M": a mark that joins the character before it. */
    static boolean isMark(int cp) {
        return MARK.contains(cp);
    }

    /** unicodedata.category(c) in ("Cc", "Cf"): what SentencePiece's nmt_nfkc normaliser drops. */
    static boolean isControlOrFormat(int cp) {
        return CONTROL_OR_FORMAT.contains(cp);
    }

    /** c.isdigit(): ALBERT's digit-comma re-split tests it. */
    static boolean isPythonDigit(int cp) {
        return PYTHON_DIGIT.contains(cp);
    }

    /** unicodedata.category(c) starts with "L": GPT-2's \\p{L} (byte-level BPE's pre-tokenizer). */
    static boolean isLetter(int cp) {
        return LETTER.contains(cp);
    }

    /** unicodedata.category(c) starts with "N": GPT-2's \\p{N} (byte-level BPE's pre-tokenizer). */
    static boolean isNumber(int cp) {
        return NUMBER.contains(cp);
    }

    /** Unicode White_Space (bytelevel_bpe.WHITESPACE): GPT-2's \\s. */
    static boolean isBpeWhitespace(int cp) {
        return BPE_WHITESPACE.contains(cp);
    }

    /** unicodedata.normalize("NFKD", chr(cp)) as code points, or null when unchanged (Hangul excepted). */
    static int[] compatibilityDecomposition(int cp) {
        return NFKD.get(cp);
    }

    /** unicodedata.normalize("NFD", chr(cp)) as code points, or null when unchanged (Hangul excepted). */
    static int[] canonicalDecomposition(int cp) {
        return NFD.get(cp);
    }

    /** unicodedata.combining(chr(cp)): the canonical combining class, 0 for starters. */
    static int combiningClass(int cp) {
        return CCC.combiningClass(cp);
    }

    /** The primary composite of (first, second) for NFC, or -1 (Hangul excepted). */
    static int compose(int first, int second) {
        return CCC.compose(first, second);
    }

    /** chr(cp).lower() as code points, or null when lower-casing leaves cp unchanged. */
    static int[] lower(int cp) {
        return LOWER.get(cp);
    }
}
"""


def render_unicode_tables_java() -> str:
    """The full text of ``UnicodeTables.java`` for this Python's ``unicodedata``."""
    tables = range_tables()
    fields = "".join(_java_string_array(f"{name}_RANGES", _encode_ranges(runs)) for name, runs in tables.items())
    fields += _java_string_array("LOWER_MAP", _encode_lower(lower_map()))
    fields += _java_string_array("NFD_MAP", _encode_lower(nfd_map()))
    fields += _java_string_array("NFKD_MAP", _encode_lower(nfkd_map()))
    fields += _java_string_array("COMBINING_CLASS_RUNS", _encode_ccc(combining_class_runs()))
    fields += _java_string_array("COMPOSITION_PAIRS", _encode_pairs(composition_pairs()))
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"""package {JAVA_PACKAGE};

// GENERATED by albert_edge.android.tables (Python {py}, unicodedata {unicodedata.unidata_version}).
// Do not edit: regenerate with `albert-edge android-assets --golden-only DIR`.

/**
 * Python's Unicode character data (unicodedata {unicodedata.unidata_version}) for the tokenizer.
 *
 * <p>The phone must tokenize exactly as the Python package does, so character classes come from
 * Python's tables, not from {{@code Character.getType}}, whose Unicode version is the JDK's or
 * the Android release's.
 */
final class {JAVA_CLASS} {{
    /** The Unicode version these tables were generated from. */
    static final String UNICODE_VERSION = "{unicodedata.unidata_version}";

{fields}
{_JAVA_PARSED_TABLES}

    private {JAVA_CLASS}() {{}}

{_JAVA_ACCESSORS}"""
