package org.albertedge.core;

import java.io.Closeable;

/**
 * A packed feature-extraction model: text in, one sentence embedding out, the Java twin of Python's
 * {@code TextEmbedder} for one text. The model runs behind an {@link InferenceEngine}.
 *
 * <p>The pack's {@code task_config} says how to pool (cls / mean / max), whether to L2-normalise,
 * and whether the graph already did both (its output is then {@code sentence_embedding} [1, H]);
 * otherwise the graph returns {@code last_hidden_state} [1, length, H] and {@link Pooling} pools it
 * here. A pack without pooling settings is mean-pooled, sentence-transformers' default, as in Python.
 */
public final class AlbertEmbedder implements Closeable {
    static final String SENTENCE_EMBEDDING = "sentence_embedding";
    static final String LAST_HIDDEN_STATE = "last_hidden_state";

    private final ModelRunner runner;
    private final ModelPack pack;
    private final Preprocessor preprocessor;
    private final String pooling;
    private final boolean normalize;
    private final boolean pooledInGraph;

    /** One embedding: the vector, the encoding it came from, and the two timings. */
    public static final class Result {
        public final float[] embedding;
        public final Encoding encoding;
        public final double tokenizeMs;
        /** The engine run plus pooling and normalisation. */
        public final double inferenceMs;

        Result(float[] embedding, Encoding encoding, double tokenizeMs, double inferenceMs) {
            this.embedding = embedding;
            this.encoding = encoding;
            this.tokenizeMs = tokenizeMs;
            this.inferenceMs = inferenceMs;
        }
    }

    /**
     * An embedder for a feature-extraction {@code pack} run by {@code engine}, which it owns from here
     * on ({@link #close} closes it, and so does a failed check). The settings are checked as Python's
     * {@code FeatureExtraction.from_settings} checks them.
     */
    public AlbertEmbedder(ModelPack pack, InferenceEngine engine) {
        String source = pack.source();
        Object mode = pack.taskSetting("pooling", "none");
        Object norm = pack.taskSetting("normalize", Boolean.FALSE);
        Object inGraph = pack.taskSetting("pooling_in_graph", !"none".equals(mode));
        if (!ModelPack.FEATURE_EXTRACTION.equals(pack.task)) {
            engine.close();
            throw new AlbertCoreException(source + ": pack task is '" + pack.task + "'; embeddings need a "
                    + ModelPack.FEATURE_EXTRACTION + " model");
        }
        if (!Pooling.MODES.contains(mode) || !(norm instanceof Boolean) || !(inGraph instanceof Boolean)
                || ("none".equals(mode) && (Boolean) norm)) {
            engine.close();
            throw new AlbertCoreException(source + ": pack task_config pooling " + mode + ", normalize " + norm
                    + ", pooling_in_graph " + inGraph + ": expected pooling in " + Pooling.MODES
                    + " and boolean normalize / pooling_in_graph");
        }
        this.pack = pack;
        this.preprocessor = pack.preprocessor();
        this.pooling = "none".equals(mode) ? Pooling.MEAN : (String) mode;
        this.normalize = (Boolean) norm;
        this.pooledInGraph = (Boolean) inGraph && !"none".equals(mode) && pack.outputs.contains(SENTENCE_EMBEDDING);
        this.runner = new ModelRunner(engine, pack, pooledInGraph ? SENTENCE_EMBEDDING : LAST_HIDDEN_STATE);
    }

    public ModelPack pack() {
        return pack;
    }

    public Preprocessor preprocessor() {
        return preprocessor;
    }

    /** cls, mean or max: how the hidden states are (or were, in the graph) pooled. */
    public String pooling() {
        return pooling;
    }

    /** Whether embeddings are unit vectors (then cosine similarity is a dot product). */
    public boolean normalized() {
        return normalize;
    }

    /** The {@code [H]} embedding of one encoding. */
    public float[] run(Encoding encoding) {
        double[] vector;
        if (pooledInGraph) {
            float[] out = runner.run(encoding, -1).get(SENTENCE_EMBEDDING);
            vector = new double[out.length];
            for (int k = 0; k < out.length; k++) {
                vector[k] = out[k];
            }
        } else {
            float[] hidden = runner.run(encoding, -1).get(LAST_HIDDEN_STATE);
            int length = encoding.length();
            if (hidden.length == 0 || hidden.length % length != 0) {
                throw new AlbertCoreException(pack.source() + ": output '" + LAST_HIDDEN_STATE + "' has "
                        + hidden.length + " values, not [" + length + ", hidden]");
            }
            vector = Pooling.pool(hidden, encoding.attentionMask, hidden.length / length, pooling);
            if (normalize) {
                vector = Pooling.l2Normalize(vector);
            }
        }
        float[] out = new float[vector.length];
        for (int k = 0; k < out.length; k++) {
            if (Double.isNaN(vector[k]) || Double.isInfinite(vector[k])) {
                throw new AlbertCoreException(pack.source() + ": embedding output has non-finite values");
            }
            out[k] = (float) vector[k];
        }
        if (out.length == 0) {
            throw new AlbertCoreException(pack.source() + ": embedding output is empty");
        }
        return out;
    }

    /** One text at its real token length (truncated to max_seq_len); an empty text is refused. */
    public Result embed(String text) {
        if (text == null || ModelPack.pythonStrip(text).isEmpty()) {
            throw new AlbertCoreException("text: text is empty");
        }
        long t0 = System.nanoTime();
        Encoding encoding = preprocessor.encode(text);
        long t1 = System.nanoTime();
        float[] vector = run(encoding);
        long t2 = System.nanoTime();
        return new Result(vector, encoding, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    }

    /** Cosine similarity of two embeddings, in [-1, 1] (norms floored as {@link Pooling#l2Normalize}). */
    public static double cosine(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new AlbertCoreException("embeddings: widths " + a.length + " and " + b.length + " differ");
        }
        double[] x = new double[a.length];
        double[] y = new double[b.length];
        for (int k = 0; k < a.length; k++) {
            x[k] = a[k];
            y[k] = b[k];
        }
        x = Pooling.l2Normalize(x);
        y = Pooling.l2Normalize(y);
        double dot = 0.0;
        for (int k = 0; k < x.length; k++) {
            dot += x[k] * y[k];
        }
        return dot;
    }

    @Override
    public void close() {
        runner.close();
    }
}
