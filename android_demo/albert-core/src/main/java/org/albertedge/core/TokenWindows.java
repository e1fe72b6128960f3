package org.albertedge.core;

/**
 * Long texts in overlapping windows, as Python's {@code runtime.token_classifier} runs them:
 * windows of {@code max_seq_len - 2} tokens advancing by {@code window - stride}, the last one
 * ending at the text's end; each token takes its logits from the window where it sits farthest
 * from an edge (the first such window on a tie).
 */
public final class TokenWindows {
    private TokenWindows() {}

    /** Python's default stride: a quarter of the window, at most 32 tokens. */
    public static int defaultStride(int window) {
        return Math.min(window / 4, 32);
    }

    /**
     * Token index where each window starts, for {@code n} tokens: step {@code window - stride}, the
     * last window ends at n. Shared by the entity extractor and the QA windows ({@link QaSpans}).
     */
    public static int[] windowStarts(int n, int window, int stride) {
        if (window < 1 || stride < 0 || stride >= window) {
            throw new AlbertCoreException("stride " + stride + ": expected an int in [0, " + window
                    + ") for windows of " + window + " tokens");
        }
        if (n <= window) {
            return new int[] {0};
        }
        int step = window - stride;
        int count = (n - window + step - 1) / step;
        int[] out = new int[count + 1];
        for (int i = 0; i < count; i++) {
            out[i] = i * step;
        }
        out[count] = n - window;
        return out;
    }

    /**
     * {@code [n][labels]} logits: each token from the window where {@code min(i, len - 1 - i)} is
     * largest. {@code windowLogits[w]} is {@code [tokens of window w][labels]}, [CLS]/[SEP] rows dropped.
     */
    public static float[][] merge(int n, int[] starts, float[][][] windowLogits) {
        if (starts.length != windowLogits.length) {
            throw new AlbertCoreException("windows: " + starts.length + " starts but " + windowLogits.length
                    + " logits blocks");
        }
        float[][] out = new float[n][];
        int[] best = new int[n];
        java.util.Arrays.fill(best, -1);
        for (int w = 0; w < starts.length; w++) {
            int length = windowLogits[w].length;
            for (int local = 0; local < length; local++) {
                int margin = Math.min(local, length - 1 - local);
                int index = starts[w] + local;
                if (margin > best[index]) {
                    out[index] = windowLogits[w][local];
                    best[index] = margin;
                }
            }
        }
        for (int i = 0; i < n; i++) {
            if (out[i] == null) {
                throw new AlbertCoreException("windows: token " + i + " is in no window");
            }
        }
        return out;
    }
}
