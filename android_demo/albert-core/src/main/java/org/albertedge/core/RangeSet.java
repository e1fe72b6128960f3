package org.albertedge.core;

import java.util.Arrays;

/** A set of code points stored as sorted inclusive runs; lookup is a binary search. */
final class RangeSet {
    private final int[] firsts;
    private final int[] lasts;

    private RangeSet(int[] firsts, int[] lasts) {
        this.firsts = firsts;
        this.lasts = lasts;
    }

    /** Parse {@code "first-last,first-last,..."} (hex), split across string chunks. */
    static RangeSet parse(String[] chunks) {
        String text = join(chunks);
        if (text.isEmpty()) {
            return new RangeSet(new int[0], new int[0]);
        }
        String[] runs = text.split(",");
        int[] firsts = new int[runs.length];
        int[] lasts = new int[runs.length];
        for (int i = 0; i < runs.length; i++) {
            int dash = runs[i].indexOf('-');
            firsts[i] = Integer.parseInt(runs[i].substring(0, dash), 16);
            lasts[i] = Integer.parseInt(runs[i].substring(dash + 1), 16);
        }
        return new RangeSet(firsts, lasts);
    }

    static String join(String[] chunks) {
        StringBuilder sb = new StringBuilder();
        for (String chunk : chunks) {
            sb.append(chunk);
        }
        return sb.toString();
    }

    /** The runs as {@code [n][2]} inclusive {first, last} pairs. */
    int[][] runs() {
        int[][] out = new int[firsts.length][];
        for (int i = 0; i < firsts.length; i++) {
            out[i] = new int[] {firsts[i], lasts[i]};
        }
        return out;
    }

    boolean contains(int cp) {
        int i = Arrays.binarySearch(firsts, cp);
        if (i >= 0) {
            return true;
        }
        int run = -i - 2;
        return run >= 0 && cp <= lasts[run];
    }
}
