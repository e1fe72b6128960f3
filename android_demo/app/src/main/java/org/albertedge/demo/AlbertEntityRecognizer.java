package org.albertedge.demo;

import android.content.Context;

import java.io.Closeable;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.EntityExtractor;
import org.albertedge.core.ModelPack;

/**
 * A packed token-classification (NER) .tflite on LiteRT: text in, entities with character
 * offsets and timings out.
 *
 * <p>albert-core's {@link EntityExtractor} does everything but the interpreter: tokens with
 * offsets, overlapping windows of max_seq_len - 2 tokens (each token's logits from its most
 * central window), BIO/BIOES/BILOU/IO decoding, offsets into the typed text. This class runs each
 * {@code [CLS] window [SEP]} through the {@code serving_default} signature at its real length
 * (logits {@code [1, length, labels]}), as Python's {@code TokenClassifier} does.
 */
public final class AlbertEntityRecognizer implements Closeable {
    private static final String LOGITS = "logits";

    private final WindowedInterpreter interpreter;
    private final ModelPack pack;
    private final EntityExtractor extractor;
    private final int numLabels;
    private final int threads;

    /** One recognition: the entities, how the text was cut, and where the time went. */
    public static final class Result {
        public final List<EntityExtractor.Entity> entities;
        public final int tokens;
        public final int windows;
        public final double tokenizeMs;
        /** All windows through the interpreter. */
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

    public AlbertEntityRecognizer(MappedByteBuffer model, String source, int threads) {
        this.pack = ModelPack.read(model, source);
        this.extractor = EntityExtractor.fromPack(pack);
        this.numLabels = pack.labels.size();
        this.threads = threads;
        this.interpreter = new WindowedInterpreter(model, source, threads, pack);
        if (!interpreter.outputs.contains(LOGITS)) {
            close();
            throw new AlbertCoreException(source + ": signature has no '" + LOGITS + "' output");
        }
    }

    public static AlbertEntityRecognizer fromAssets(Context context, int threads) throws IOException {
        return new AlbertEntityRecognizer(AlbertClassifier.mapAsset(context, AlbertClassifier.MODEL_ASSET),
                AlbertClassifier.MODEL_ASSET, threads);
    }

    public ModelPack pack() {
        return pack;
    }

    public EntityExtractor extractor() {
        return extractor;
    }

    public int threads() {
        return threads;
    }

    /** Logits {@code [length][num_labels]} for one window, [CLS] and [SEP] rows included. */
    public float[][] run(Encoding window) {
        float[][][] logits = new float[1][window.length()][numLabels];
        Map<String, Object> outputs = new HashMap<String, Object>();
        outputs.put(LOGITS, logits);
        interpreter.run(window, outputs);
        return logits[0];
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
        interpreter.close();
    }
}
