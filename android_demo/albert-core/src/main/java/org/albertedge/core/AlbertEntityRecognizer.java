package org.albertedge.core;

import java.io.Closeable;
import java.util.List;

/**
 * A packed token-classification (NER) model: text in, entities with character offsets and timings
 * out. The model runs behind an {@link InferenceEngine}; everything else is here.
 *
 * <p>{@link EntityExtractor} does the text side: tokens with offsets, overlapping windows of
 * max_seq_len - 2 tokens (each token's logits from its most central window), BIO/BIOES/BILOU/IO
 * decoding, offsets into the typed text. This class runs each {@code [CLS] window [SEP]} ({@code <s>
 * window </s>} for RoBERTa and XLM-R packs) at its real length (logits {@code [1, length, labels]}), as Python's {@code TokenClassifier} does.
 */
public final class AlbertEntityRecognizer implements Closeable {
    private static final String LOGITS = "logits";

    private final ModelRunner runner;
    private final ModelPack pack;
    private final EntityExtractor extractor;
    private final int numLabels;

    /** One recognition: the entities, how the text was cut, and where the time went. */
    public static final class Result {
        public final List<EntityExtractor.Entity> entities;
        public final int tokens;
        public final int windows;
        public final double tokenizeMs;
        /** All windows through the engine. */
        public final double inferenceMs;
        /** Merge, softmax, tag decoding and offsets. */
        public final double decodeMs;

        Result(List<EntityExtractor.Entity> entities, int tokens, int windows, double tokenizeMs, double inferenceMs,
               double decodeMs) {
            this.entities = entities;
            this.tokens = tokens;
            this.windows = windows;
            this.tokenizeMs = tokenizeMs;
            this.inferenceMs = inferenceMs;
            this.decodeMs = decodeMs;
        }
    }

    /**
     * A recognizer for a token-classification {@code pack} run by {@code engine}, which it owns from
     * here on ({@link #close} closes it, and so does a failed check).
     */
    public AlbertEntityRecognizer(ModelPack pack, InferenceEngine engine) {
        this(pack, engine, fromPack(pack, engine));
    }

    /** {@code extractor} with non-default settings (e.g. the window stride) for the same pack. */
    public AlbertEntityRecognizer(ModelPack pack, InferenceEngine engine, EntityExtractor extractor) {
        this.pack = pack;
        this.extractor = extractor;
        this.numLabels = extractor.labels().size();
        this.runner = new ModelRunner(engine, pack, LOGITS);
    }

    private static EntityExtractor fromPack(ModelPack pack, InferenceEngine engine) {
        try {
            return EntityExtractor.fromPack(pack);
        } catch (AlbertCoreException e) {
            engine.close();
            throw e;
        }
    }

    public ModelPack pack() {
        return pack;
    }

    public EntityExtractor extractor() {
        return extractor;
    }

    /** Logits {@code [length][num_labels]} for one window, [CLS] and [SEP] rows included. */
    public float[][] run(Encoding window) {
        int length = window.length();
        float[] flat = runner.run(window, length * numLabels).get(LOGITS);
        float[][] rows = new float[length][numLabels];
        for (int i = 0; i < length; i++) {
            System.arraycopy(flat, i * numLabels, rows[i], 0, numLabels);
        }
        return rows;
    }

    public Result recognize(String text) {
        long t0 = System.nanoTime();
        EntityExtractor.Prepared prepared = extractor.prepare(text);
        long t1 = System.nanoTime();
        float[][][] logits = new float[prepared.windows.size()][][];
        for (int w = 0; w < logits.length; w++) {
            logits[w] = run(prepared.windows.get(w));
        }
        long t2 = System.nanoTime();
        List<EntityExtractor.Entity> entities = EntityExtractor.entities(text, extractor.tag(prepared, logits));
        long t3 = System.nanoTime();
        return new Result(entities, prepared.tokens.size(), logits.length, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
                (t3 - t2) / 1e6);
    }

    /** {@code runs} timed recognitions of {@code text} after {@code warmup} untimed ones. */
    public WindowBenchmark benchmark(final String text, int runs, int warmup) {
        return WindowBenchmark.measure(() -> {
            Result r = recognize(text);
            return new WindowBenchmark.Pass(r.tokenizeMs, r.inferenceMs, r.decodeMs, r.tokens, r.windows);
        }, runs, warmup);
    }

    @Override
    public void close() {
        runner.close();
    }
}
