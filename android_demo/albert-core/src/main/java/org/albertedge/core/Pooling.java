package org.albertedge.core;

import java.util.Arrays;
import java.util.List;

/**
 * Hidden states to one sentence embedding, the Java twin of Python's
 * {@code albert_edge.tasks.feature_extraction.pool} and {@code l2_normalize} (sentence-transformers'
 * Pooling and Normalize modules): the same modes, the same floors, float64 arithmetic.
 */
public final class Pooling {
    public static final String CLS = "cls";
    public static final String MEAN = "mean";
    public static final String MAX = "max";
    /** The modes a pack may name; "none" (no pooling settings) is pooled as {@link #MEAN}. */
    public static final List<String> MODES = Arrays.asList("none", CLS, MEAN, MAX);
    /** sentence-transformers' value of a masked token before the max. */
    static final double MAX_POOL_MASKED = -1e9;
    /** The mean's floor on the token count. */
    static final double MEAN_POOL_MIN_COUNT = 1e-9;
    /** torch.nn.functional.normalize's floor on the norm. */
    static final double NORM_EPS = 1e-12;

    private Pooling() {}

    /**
     * {@code hidden} is {@code [length, width]} row-major, {@code mask} its {@code [length]} 0/1
     * attention mask; returns the {@code [width]} embedding pooled by {@code mode} (cls, mean, max).
     */
    public static double[] pool(float[] hidden, int[] mask, int width, String mode) {
        int length = mask.length;
        if (width < 1 || hidden.length != length * width) {
            throw new AlbertCoreException("hidden states: " + hidden.length + " values are not [" + length
                    + ", width >= 1]");
        }
        double[] out = new double[width];
        if (CLS.equals(mode)) {
            for (int k = 0; k < width; k++) {
                out[k] = hidden[k];
            }
            return out;
        }
        if (MEAN.equals(mode)) {
            double count = 0.0;
            for (int i = 0; i < length; i++) {
                if (mask[i] != 0) {
                    count += mask[i];
                    for (int k = 0; k < width; k++) {
                        out[k] += (double) hidden[i * width + k] * mask[i];
                    }
                }
            }
            double divisor = Math.max(count, MEAN_POOL_MIN_COUNT);
            for (int k = 0; k < width; k++) {
                out[k] /= divisor;
            }
            return out;
        }
        if (MAX.equals(mode)) {
            Arrays.fill(out, Double.NEGATIVE_INFINITY);
            for (int i = 0; i < length; i++) {
                for (int k = 0; k < width; k++) {
                    double v = mask[i] > 0 ? hidden[i * width + k] : MAX_POOL_MASKED;
                    out[k] = Math.max(out[k], v);
                }
            }
            return out;
        }
        throw new AlbertCoreException("pooling mode '" + mode + "': expected one of cls, mean, max");
    }

    /** {@code x} divided by its L2 norm, the norm floored at 1e-12 (a zero vector stays zero). */
    public static double[] l2Normalize(double[] x) {
        double sum = 0.0;
        for (double v : x) {
            sum += v * v;
        }
        double norm = Math.max(Math.sqrt(sum), NORM_EPS);
        double[] out = new double[x.length];
        for (int k = 0; k < x.length; k++) {
            out[k] = x[k] / norm;
        }
        return out;
    }
}
