package org.albertedge.core;

import java.util.Arrays;

/**
 * Percentiles and a histogram of latency samples, defined as numpy defines them
 * ({@code numpy.percentile} linear interpolation, {@code numpy.histogram} equal-width bins), so
 * the phone's p50/p90 read the same way as {@code albert-edge bench}'s.
 */
public final class LatencyStats {
    private final double[] sorted;

    /** @param samplesMs latencies in milliseconds, at least one */
    public LatencyStats(double[] samplesMs) {
        if (samplesMs.length == 0) {
            throw new AlbertCoreException("latency samples: expected at least one, got none");
        }
        sorted = samplesMs.clone();
        Arrays.sort(sorted);
    }

    public int count() {
        return sorted.length;
    }

    public double min() {
        return sorted[0];
    }

    public double max() {
        return sorted[sorted.length - 1];
    }

    public double mean() {
        double sum = 0.0;
        for (double v : sorted) {
            sum += v;
        }
        return sum / sorted.length;
    }

    /** numpy.percentile(samples, q) with the default "linear" method; q in [0, 100]. */
    public double percentile(double q) {
        if (!(q >= 0.0 && q <= 100.0)) {
            throw new AlbertCoreException("percentile: expected q in [0, 100], got " + q);
        }
        double rank = q / 100.0 * (sorted.length - 1);
        int lo = (int) Math.floor(rank);
        int hi = Math.min(lo + 1, sorted.length - 1);
        double t = rank - lo;
        double a = sorted[lo];
        double b = sorted[hi];
        // numpy's lerp: the form it uses for t >= 0.5 keeps the result exact at t == 1.
        return t >= 0.5 ? b - (b - a) * (1.0 - t) : a + (b - a) * t;
    }

    public double p50() {
        return percentile(50.0);
    }

    public double p90() {
        return percentile(90.0);
    }

    /** Bin edges, {@code [bins + 1]}: numpy.histogram's linspace(min, max, bins + 1). */
    public double[] binEdges(int bins) {
        checkBins(bins);
        double first = min();
        double last = max();
        if (first == last) {
            first -= 0.5;
            last += 0.5;
        }
        double[] edges = new double[bins + 1];
        double step = (last - first) / bins;
        for (int i = 0; i <= bins; i++) {
            edges[i] = first + i * step;
        }
        edges[bins] = last;
        return edges;
    }

    /** Counts per bin, {@code [bins]}: numpy.histogram(samples, bins); the last bin includes the max. */
    public int[] histogram(int bins) {
        double[] edges = binEdges(bins);
        double first = edges[0];
        double norm = bins / (edges[bins] - first);
        int[] counts = new int[bins];
        for (double v : sorted) {
            int i = (int) Math.floor((v - first) * norm);
            if (i >= bins) {
                i = bins - 1;
            }
            // Floating-point rounding can put a value one bin off; the edges decide, as in numpy.
            if (i > 0 && v < edges[i]) {
                i--;
            } else if (i < bins - 1 && v >= edges[i + 1]) {
                i++;
            }
            counts[i]++;
        }
        return counts;
    }

    /**
     * The histogram as monospace text, one line per bin: {@code "  4.10-  4.35 ms |#####    12"}.
     * Bars are scaled so the fullest bin is {@code width} characters.
     */
    public String textHistogram(int bins, int width) {
        if (width < 1) {
            throw new AlbertCoreException("histogram width: expected at least 1, got " + width);
        }
        int[] counts = histogram(bins);
        double[] edges = binEdges(bins);
        int most = 0;
        for (int c : counts) {
            most = Math.max(most, c);
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < bins; i++) {
            int bar = (int) Math.round((double) counts[i] * width / most);
            sb.append(String.format(java.util.Locale.ROOT, "%7.2f-%7.2f ms |", edges[i], edges[i + 1]));
            for (int j = 0; j < width; j++) {
                sb.append(j < bar ? '#' : ' ');
            }
            sb.append(String.format(java.util.Locale.ROOT, " %d\n", counts[i]));
        }
        return sb.toString();
    }

    private static void checkBins(int bins) {
        if (bins < 1) {
            throw new AlbertCoreException("histogram bins: expected at least 1, got " + bins);
        }
    }
}
