package org.albertedge.core;

/**
 * Unicode NFD and NFC from Python's tables (UnicodeTables), so the phone normalizes exactly as
 * {@code unicodedata.normalize} does whatever ICU its Android release ships.
 *
 * <p>The algorithms are UAX #15's: full canonical decomposition (Hangul syllables
 * algorithmically), canonical ordering of combining marks, then canonical composition with
 * the blocking rule. Tables, not code, carry the Unicode version.
 */
final class Normalization {
    private static final int S_BASE = 0xAC00;
    private static final int L_BASE = 0x1100;
    private static final int V_BASE = 0x1161;
    private static final int T_BASE = 0x11A7;
    private static final int L_COUNT = 19;
    private static final int V_COUNT = 21;
    private static final int T_COUNT = 28;
    private static final int N_COUNT = V_COUNT * T_COUNT;
    private static final int S_COUNT = L_COUNT * N_COUNT;

    private Normalization() {}

    static String nfd(String s) {
        int[] cps = decompose(CodePoints.of(s));
        return new String(cps, 0, cps.length);
    }

    static String nfc(String s) {
        int[] cps = decompose(CodePoints.of(s));
        int n = compose(cps);
        return new String(cps, 0, n);
    }

    /**
     * {@code unicodedata.normalize("NFKD", chr(cp))} as code points: Hangul syllables
     * algorithmically, everything else from Python's table (already fully decomposed and ordered).
     */
    static int[] nfkdOf(int cp) {
        int s = cp - S_BASE;
        if (s >= 0 && s < S_COUNT) {
            int t = s % T_COUNT;
            int l = L_BASE + s / N_COUNT;
            int v = V_BASE + (s % N_COUNT) / T_COUNT;
            return t == 0 ? new int[] {l, v} : new int[] {l, v, T_BASE + t};
        }
        int[] mapped = UnicodeTables.compatibilityDecomposition(cp);
        return mapped == null ? new int[] {cp} : mapped;
    }

    /** Full canonical decomposition followed by canonical ordering. */
    private static int[] decompose(int[] input) {
        int[] out = new int[input.length * 4 + 4];
        int n = 0;
        for (int cp : input) {
            if (out.length - n < 4) {
                out = java.util.Arrays.copyOf(out, out.length * 2);
            }
            int s = cp - S_BASE;
            if (s >= 0 && s < S_COUNT) {
                out[n++] = L_BASE + s / N_COUNT;
                out[n++] = V_BASE + (s % N_COUNT) / T_COUNT;
                int t = s % T_COUNT;
                if (t != 0) {
                    out[n++] = T_BASE + t;
                }
                continue;
            }
            int[] mapped = UnicodeTables.canonicalDecomposition(cp);
            if (mapped == null) {
                out[n++] = cp;
            } else {
                if (out.length - n < mapped.length) {
                    out = java.util.Arrays.copyOf(out, (out.length + mapped.length) * 2);
                }
                for (int m : mapped) {
                    out[n++] = m;
                }
            }
        }
        int[] result = java.util.Arrays.copyOf(out, n);
        reorder(result);
        return result;
    }

    /** Stable sort of each run of non-starters by combining class (insertion sort: runs are short). */
    private static void reorder(int[] cps) {
        for (int i = 1; i < cps.length; i++) {
            int cp = cps[i];
            int ccc = UnicodeTables.combiningClass(cp);
            if (ccc == 0) {
                continue;
            }
            int j = i - 1;
            while (j >= 0) {
                int prev = UnicodeTables.combiningClass(cps[j]);
                if (prev <= ccc) {
                    break;
                }
                cps[j + 1] = cps[j];
                j--;
            }
            cps[j + 1] = cp;
        }
    }

    /** Canonical composition in place; returns the new length. */
    private static int compose(int[] cps) {
        if (cps.length == 0) {
            return 0;
        }
        int starterPos = 0;
        int starter = cps[0];
        int lastClass = UnicodeTables.combiningClass(starter);
        if (lastClass != 0) {
            // No starter yet: nothing may compose with what precedes the first starter.
            lastClass = 256;
        }
        int out = 1;
        for (int i = 1; i < cps.length; i++) {
            int cp = cps[i];
            int ccc = UnicodeTables.combiningClass(cp);
            int composite = composePair(starter, cp);
            if (composite >= 0 && (lastClass < ccc || lastClass == 0)) {
                cps[starterPos] = composite;
                starter = composite;
                continue;
            }
            if (ccc == 0) {
                starterPos = out;
                starter = cp;
            }
            lastClass = ccc;
            cps[out++] = cp;
        }
        return out;
    }

    private static int composePair(int first, int second) {
        int l = first - L_BASE;
        if (l >= 0 && l < L_COUNT) {
            int v = second - V_BASE;
            if (v >= 0 && v < V_COUNT) {
                return S_BASE + (l * V_COUNT + v) * T_COUNT;
            }
        }
        int s = first - S_BASE;
        if (s >= 0 && s < S_COUNT && s % T_COUNT == 0) {
            int t = second - T_BASE;
            if (t > 0 && t < T_COUNT) {
                return first + t;
            }
        }
        return UnicodeTables.compose(first, second);
    }
}
