package org.albertedge.core;

/**
 * BERT's character classes and per-word text passes, mirroring albert_edge.tokenizer._text.
 *
 * <p>Every decision goes through {@link UnicodeTables} (Python's unicodedata), never through
 * {@code Character.getType}: the phone's Unicode version is not Python's.
 */
final class BertText {
    private static final int CAPITAL_SIGMA = 0x03A3;
    private static final int SMALL_SIGMA = 0x03C3;
    private static final int FINAL_SIGMA = 0x03C2;

    private BertText() {}

    /** One token per ideograph: CJK Unified Ideographs, Extensions A-E, compatibility blocks. */
    static boolean isCjk(int cp) {
        return UnicodeTables.isBertCjk(cp);
    }

    /** Mapped to a space: space, tab, newline, carriage return and category Zs. */
    static boolean isWhitespace(int cp) {
        return UnicodeTables.isBertWhitespace(cp);
    }

    /** Dropped: the control categories the Python tokenizer drops (tab, newline, CR excepted). */
    static boolean isControl(int cp) {
        return UnicodeTables.isBertControl(cp);
    }

    /** Split off: non-alphanumeric printable ASCII (33-47, 58-64, 91-96, 123-126) and categories P*. */
    static boolean isPunctuation(int cp) {
        return UnicodeTables.isBertPunctuation(cp);
    }

    /**
     * BERT's clean-text and CJK-spacing pass: drop NUL, U+FFFD and control characters, map
     * whitespace to a space, put spaces around each CJK ideograph.
     */
    static String clean(String text) {
        StringBuilder sb = new StringBuilder(text.length() + 16);
        for (int cp : CodePoints.of(text)) {
            if (cp == 0 || cp == 0xFFFD || isControl(cp)) {
                continue;
            }
            if (isWhitespace(cp)) {
                sb.append(' ');
            } else if (isCjk(cp)) {
                sb.append(' ').appendCodePoint(cp).append(' ');
            } else {
                sb.appendCodePoint(cp);
            }
        }
        return sb.toString();
    }

    /**
     * Python's {@code str.lower()}: full lower-case mappings (U+0130 becomes "i" + U+0307) and
     * the final-sigma rule, both from Python's tables, not from {@code toLowerCase(Locale)}.
     */
    static String lower(String word) {
        int[] cps = CodePoints.of(word);
        StringBuilder sb = new StringBuilder(word.length());
        for (int i = 0; i < cps.length; i++) {
            int cp = cps[i];
            if (cp == CAPITAL_SIGMA) {
                sb.appendCodePoint(isFinalSigma(cps, i) ? FINAL_SIGMA : SMALL_SIGMA);
                continue;
            }
            int[] mapped = UnicodeTables.lower(cp);
            if (mapped == null) {
                sb.appendCodePoint(cp);
            } else {
                for (int m : mapped) {
                    sb.appendCodePoint(m);
                }
            }
        }
        return sb.toString();
    }

    /** CPython's handle_capital_sigma: cased (case-ignorable)* SIGMA not followed by (case-ignorable)* cased. */
    private static boolean isFinalSigma(int[] cps, int i) {
        int j = i - 1;
        while (j >= 0 && UnicodeTables.isCaseIgnorable(cps[j])) {
            j--;
        }
        if (j < 0 || !UnicodeTables.isCased(cps[j])) {
            return false;
        }
        int k = i + 1;
        while (k < cps.length && UnicodeTables.isCaseIgnorable(cps[k])) {
            k++;
        }
        return k == cps.length || !UnicodeTables.isCased(cps[k]);
    }

    /** NFD, then drop nonspacing marks (Mn). */
    static String stripAccents(String word) {
        String nfd = Normalization.nfd(word);
        StringBuilder sb = new StringBuilder(nfd.length());
        for (int cp : CodePoints.of(nfd)) {
            if (!UnicodeTables.isNonspacingMark(cp)) {
                sb.appendCodePoint(cp);
            }
        }
        return sb.toString();
    }

    static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) > 0x7F) {
                return false;
            }
        }
        return true;
    }
}
