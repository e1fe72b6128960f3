package org.albertedge.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Helpers that treat a Java String as what Python's str is: a sequence of code points.
 *
 * <p>Java's char is a UTF-16 unit, so "one char" splits a CJK Extension B ideograph or an emoji
 * in two. Every loop in albert-core goes through these so lengths (e.g. the 100-character cap on
 * a word) count what Python's len() counts.
 */
final class CodePoints {
    private CodePoints() {}

    /** The code points of {@code s}, in order. Lone surrogates come through as themselves, like Python. */
    static int[] of(String s) {
        int[] out = new int[s.codePointCount(0, s.length())];
        int n = 0;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            out[n++] = cp;
            i += Character.charCount(cp);
        }
        return out;
    }

    static String fromRange(int[] cps, int start, int end) {
        return new String(cps, start, end - start);
    }

    /**
     * Python's {@code str.split()} with no arguments: split on runs of {@code str.isspace()}
     * characters, drop empty pieces.
     */
    static List<String> splitOnPythonWhitespace(String s) {
        List<String> out = new ArrayList<String>();
        int[] cps = of(s);
        int start = -1;
        for (int i = 0; i < cps.length; i++) {
            if (UnicodeTables.isPythonSpace(cps[i])) {
                if (start >= 0) {
                    out.add(fromRange(cps, start, i));
                    start = -1;
                }
            } else if (start < 0) {
                start = i;
            }
        }
        if (start >= 0) {
            out.add(fromRange(cps, start, cps.length));
        }
        return out;
    }
}
