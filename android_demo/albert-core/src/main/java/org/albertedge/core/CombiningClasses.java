package org.albertedge.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/** Canonical combining classes (runs) and NFC composition pairs, parsed from UnicodeTables. */
final class CombiningClasses {
    private final int[] firsts;
    private final int[] lasts;
    private final int[] classes;
    private final Map<Long, Integer> pairs;

    private CombiningClasses(int[] firsts, int[] lasts, int[] classes, Map<Long, Integer> pairs) {
        this.firsts = firsts;
        this.lasts = lasts;
        this.classes = classes;
        this.pairs = pairs;
    }

    /**
     * @param cccChunks {@code "first-last:ccc,..."} (hex range, decimal class)
     * @param pairChunks {@code "first second=composite,..."} (hex)
     */
    static CombiningClasses parse(String[] cccChunks, String[] pairChunks) {
        String[] runs = RangeSet.join(cccChunks).split(",");
        int[] firsts = new int[runs.length];
        int[] lasts = new int[runs.length];
        int[] classes = new int[runs.length];
        for (int i = 0; i < runs.length; i++) {
            int dash = runs[i].indexOf('-');
            int colon = runs[i].indexOf(':');
            firsts[i] = Integer.parseInt(runs[i].substring(0, dash), 16);
            lasts[i] = Integer.parseInt(runs[i].substring(dash + 1, colon), 16);
            classes[i] = Integer.parseInt(runs[i].substring(colon + 1));
        }
        Map<Long, Integer> pairs = new HashMap<Long, Integer>();
        for (String entry : RangeSet.join(pairChunks).split(",")) {
            int space = entry.indexOf(' ');
            int eq = entry.indexOf('=');
            int first = Integer.parseInt(entry.substring(0, space), 16);
            int second = Integer.parseInt(entry.substring(space + 1, eq), 16);
            pairs.put(key(first, second), Integer.parseInt(entry.substring(eq + 1), 16));
        }
        return new CombiningClasses(firsts, lasts, classes, pairs);
    }

    private static long key(int first, int second) {
        return ((long) first << 21) | second;
    }

    int combiningClass(int cp) {
        int i = Arrays.binarySearch(firsts, cp);
        if (i >= 0) {
            return classes[i];
        }
        int run = -i - 2;
        return run >= 0 && cp <= lasts[run] ? classes[run] : 0;
    }

    int compose(int first, int second) {
        Integer composite = pairs.get(key(first, second));
        return composite == null ? -1 : composite;
    }
}
