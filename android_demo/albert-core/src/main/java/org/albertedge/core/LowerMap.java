package org.albertedge.core;

import java.util.Arrays;

/** Code point -> its lower-case code points, for the code points lower-casing changes. */
final class LowerMap {
    private final int[] keys;
    private final int[][] values;

    private LowerMap(int[] keys, int[][] values) {
        this.keys = keys;
        this.values = values;
    }

    /** Parse {@code "cp=cp1 cp2,cp=cp1,..."} (hex, sorted by cp), split across string chunks. */
    static LowerMap parse(String[] chunks) {
        String[] entries = RangeSet.join(chunks).split(",");
        int[] keys = new int[entries.length];
        int[][] values = new int[entries.length][];
        for (int i = 0; i < entries.length; i++) {
            int eq = entries[i].indexOf('=');
            keys[i] = Integer.parseInt(entries[i].substring(0, eq), 16);
            String[] out = entries[i].substring(eq + 1).split(" ");
            values[i] = new int[out.length];
            for (int j = 0; j < out.length; j++) {
                values[i][j] = Integer.parseInt(out[j], 16);
            }
        }
        return new LowerMap(keys, values);
    }

    int[] get(int cp) {
        int i = Arrays.binarySearch(keys, cp);
        return i >= 0 ? values[i] : null;
    }
}
