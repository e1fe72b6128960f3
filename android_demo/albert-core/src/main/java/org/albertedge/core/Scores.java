package org.albertedge.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/** Logits -> probabilities and labels, computed as the Python side computes them (float64). */
public final class Scores {
    private Scores() {}

    /** One ranked class: its index, label and probability. */
    public static final class Ranked {
        public final int index;
        public final String label;
        public final double probability;

        Ranked(int index, String label, double probability) {
            this.index = index;
            this.label = label;
            this.probability = probability;
        }
    }

    /** Numerically stable softmax: subtract the max so exp never overflows ({@code [num_labels]}). */
    public static double[] softmax(float[] logits) {
        if (logits.length == 0) {
            throw new AlbertCoreException("logits: expected at least one value, got none");
        }
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            if (Float.isNaN(v)) {
                throw new AlbertCoreException("logits: NaN in model output (the model or its input is broken)");
            }
            max = Math.max(max, v);
        }
        double[] out = new double[logits.length];
        double sum = 0.0;
        for (int i = 0; i < logits.length; i++) {
            out[i] = Math.exp((double) logits[i] - max);
            sum += out[i];
        }
        for (int i = 0; i < out.length; i++) {
            out[i] /= sum;
        }
        return out;
    }

    /** Index of the largest value; the first one on a tie, like numpy.argmax. */
    public static int argmax(double[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }

    /** The k most probable classes, best first (ties keep label order). */
    public static List<Ranked> topK(float[] logits, List<String> labels, int k) {
        if (labels.size() != logits.length) {
            throw new AlbertCoreException("logits: model gives " + logits.length + " scores but the pack has "
                    + labels.size() + " labels");
        }
        final double[] probs = softmax(logits);
        Integer[] order = new Integer[probs.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, new Comparator<Integer>() {
            @Override
            public int compare(Integer a, Integer b) {
                int byProb = Double.compare(probs[b], probs[a]);
                return byProb != 0 ? byProb : Integer.compare(a, b);
            }
        });
        List<Ranked> out = new ArrayList<Ranked>();
        for (int i = 0; i < Math.min(k, order.length); i++) {
            out.add(new Ranked(order[i], labels.get(order[i]), probs[order[i]]));
        }
        return out;
    }
}
