package org.albertedge.core;

import java.util.Collections;
import java.util.List;

/**
 * One encoded example, unpadded: every array is {@code [length]}, which is exactly what the
 * model is fed (the .tflite has a dynamic sequence dimension, so no padding to 128).
 */
public final class Encoding {
    public final int[] inputIds;
    public final int[] tokenTypeIds;
    public final int[] attentionMask;
    /** Token strings including [CLS]/[SEP], for display and for golden-file diffs. */
    public final List<String> tokens;
    /** True when tokens were dropped to fit max_seq_len. */
    public final boolean truncated;

    Encoding(int[] inputIds, int[] tokenTypeIds, int[] attentionMask, List<String> tokens, boolean truncated) {
        this.inputIds = inputIds;
        this.tokenTypeIds = tokenTypeIds;
        this.attentionMask = attentionMask;
        this.tokens = Collections.unmodifiableList(tokens);
        this.truncated = truncated;
    }

    public int length() {
        return inputIds.length;
    }

    /**
     * The model input named {@code name} as a {@code [1, length]} int array, so the app binds
     * inputs by tensor name and never by position.
     */
    public int[][] input(String name) {
        if ("input_ids".equals(name)) {
            return new int[][] {inputIds.clone()};
        }
        if ("attention_mask".equals(name)) {
            return new int[][] {attentionMask.clone()};
        }
        if ("token_type_ids".equals(name)) {
            return new int[][] {tokenTypeIds.clone()};
        }
        throw new AlbertCoreException("model input '" + name + "': expected input_ids, attention_mask or token_type_ids");
    }
}
