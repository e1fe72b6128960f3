package org.albertedge.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Extractive question answering around the model, as Python's {@code albert_edge.tasks.qa_spans}:
 * question/context windows, the max-context rule, the best span and the answer cut from the context.
 *
 * <p>A model input is {@code [CLS] question [SEP] context-window [SEP]} with token types 0 then 1; with
 * RoBERTa's and XLM-R's template ({@code pairSeparators} 2, {@code pairTypeId} 0) it is
 * {@code <s> question </s></s> context-window </s>}, token type 0 throughout, as Python's
 * {@code encode_windows} builds it from the same tokenizer attributes. Windows hold
 * {@code maxSeqLen - 2 - pairSeparators - questionLength} context tokens; consecutive windows share
 * {@code stride} tokens (default half a window, at most 128). A span may only start at a token whose
 * most central window (largest distance to either edge, earlier window on ties) is the current one,
 * ends at or after its start, inside the context, at most {@code maxAnswerTokens} long; the best
 * has the largest start + end logit over all windows (the earliest on ties, as numpy's argmax).
 * Token offsets are code-point indices into the context (Python's), converted for Java strings.
 * Golden-tested against Python by {@code QaSpansGoldenTest}.
 */
public final class QaSpans {
    public static final int MAX_ANSWER_TOKENS = 30;
    public static final int MAX_QUESTION_TOKENS = 64;
    public static final int MAX_STRIDE = 128;

    private QaSpans() {}

    /** One model input's place in the context: tokens [first, first + length) at sequence position offset. */
    public static final class Window {
        public final int first;
        public final int length;
        public final int offset;
        public final boolean[] maxContext;

        Window(int first, int length, int offset, boolean[] maxContext) {
            this.first = first;
            this.length = length;
            this.offset = offset;
            this.maxContext = maxContext;
        }
    }

    /** Context tokens [start, end] (inclusive), found in window {@code window}; score is p(start) * p(end) there. */
    public static final class Span {
        public final int start;
        public final int end;
        public final double logit;
        public final double score;
        public final int window;

        Span(int start, int end, double logit, double score, int window) {
            this.start = start;
            this.end = end;
            this.logit = logit;
            this.score = score;
            this.window = window;
        }
    }

    /** BERT's windows ({@code [CLS] q [SEP] window [SEP]}); stride -1: default. */
    public static List<Window> windows(int contextTokens, int questionTokens, int maxSeqLen, int stride) {
        return windows(contextTokens, questionTokens, maxSeqLen, stride, 1);
    }

    /**
     * The windows covering {@code contextTokens} after a question of {@code questionTokens} and
     * {@code pairSeparators} separators ({@link TextTokenizer#pairSeparators}); stride -1: default.
     */
    public static List<Window> windows(int contextTokens, int questionTokens, int maxSeqLen, int stride,
                                       int pairSeparators) {
        int window = maxSeqLen - 2 - pairSeparators - questionTokens;
        if (window < 1) {
            throw new IllegalArgumentException("max_seq_len " + maxSeqLen + " leaves no room for context after a "
                    + questionTokens + "-token question");
        }
        int overlap = stride < 0 ? Math.min(window / 2, MAX_STRIDE) : Math.min(stride, window - 1);
        // The one window cutter of both span tasks (Python: tasks.qa_spans.window_starts).
        int[] starts = TokenWindows.windowStarts(contextTokens, window, overlap);
        int[] best = new int[contextTokens];
        int[] owner = new int[contextTokens];
        java.util.Arrays.fill(best, -1);
        for (int k = 0; k < starts.length; k++) {
            int length = Math.min(window, contextTokens - starts[k]);
            for (int local = 0; local < length; local++) {
                int margin = Math.min(local, length - 1 - local);
                if (margin > best[starts[k] + local]) {
                    best[starts[k] + local] = margin;
                    owner[starts[k] + local] = k;
                }
            }
        }
        List<Window> out = new ArrayList<Window>();
        for (int k = 0; k < starts.length; k++) {
            int length = Math.min(window, contextTokens - starts[k]);
            boolean[] mask = new boolean[length];
            for (int local = 0; local < length; local++) {
                mask[local] = owner[starts[k] + local] == k;
            }
            out.add(new Window(starts[k], length, questionTokens + 1 + pairSeparators, mask));
        }
        return out;
    }

    /**
     * {@code [CLS] question [SEP] context[first:first+length] [SEP]}, with as many separators after the
     * question as the window's offset leaves room for ({@code </s></s>} in RoBERTa's template).
     */
    public static int[] inputIds(int clsId, int sepId, int[] question, int[] context, Window w) {
        int[] ids = new int[w.offset + w.length + 1];
        int p = 0;
        ids[p++] = clsId;
        for (int id : question) {
            ids[p++] = id;
        }
        while (p < w.offset) {
            ids[p++] = sepId;
        }
        for (int i = 0; i < w.length; i++) {
            ids[p++] = context[w.first + i];
        }
        ids[p] = sepId;
        return ids;
    }

    /**
     * Token types: 0 up to the context, {@code pairTypeId} ({@link TextTokenizer#pairTypeId}) for the
     * context and its last separator: BERT's 0s then 1s, RoBERTa's and XLM-R's 0s throughout.
     */
    public static int[] tokenTypeIds(Window w, int pairTypeId) {
        int[] types = new int[w.offset + w.length + 1];
        for (int i = w.offset; i < types.length; i++) {
            types[i] = pairTypeId;
        }
        return types;
    }

    private static double[] logSoftmax(float[] logits, int from, int length) {
        double top = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < length; i++) {
            top = Math.max(top, logits[from + i]);
        }
        double sum = 0.0;
        for (int i = 0; i < length; i++) {
            sum += Math.exp(logits[from + i] - top);
        }
        double log = Math.log(sum);
        double[] out = new double[length];
        for (int i = 0; i < length; i++) {
            out[i] = logits[from + i] - top - log;
        }
        return out;
    }

    /** The best span of one window from its start/end logits over the whole sequence; null if none. */
    public static Span bestInWindow(float[] start, float[] end, Window w, int index, int maxAnswerTokens) {
        int bestI = -1;
        int bestJ = -1;
        double best = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < w.length; i++) {
            if (!w.maxContext[i]) {
                continue;
            }
            double s = start[w.offset + i];
            for (int j = i; j < w.length && j - i < maxAnswerTokens; j++) {
                double total = s + (double) end[w.offset + j];
                if (total > best) {
                    best = total;
                    bestI = i;
                    bestJ = j;
                }
            }
        }
        if (bestI < 0) {
            return null;
        }
        double score = Math.exp(logSoftmax(start, w.offset, w.length)[bestI] + logSoftmax(end, w.offset, w.length)[bestJ]);
        return new Span(w.first + bestI, w.first + bestJ, best, score, index);
    }

    /** The span with the largest start + end logit over all windows (the earliest window on ties). */
    public static Span bestSpan(List<float[]> starts, List<float[]> ends, List<Window> windows, int maxAnswerTokens) {
        Span best = null;
        for (int k = 0; k < windows.size(); k++) {
            Span span = bestInWindow(starts.get(k), ends.get(k), windows.get(k), k, maxAnswerTokens);
            if (span != null && (best == null || span.logit > best.logit)) {
                best = span;
            }
        }
        return best;
    }

    /** {@code context} between code-point offsets [start, end), as Python's {@code context[start:end]}. */
    public static String cut(String context, int start, int end) {
        int from = context.offsetByCodePoints(0, start);
        return context.substring(from, context.offsetByCodePoints(from, end - start));
    }
}
