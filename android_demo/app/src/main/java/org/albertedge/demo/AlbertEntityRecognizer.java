package org.albertedge.demo;

import android.content.Context;

import java.io.Closeable;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.EntityExtractor;
import org.albertedge.core.LatencyStats;
import org.albertedge.core.ModelPack;
import org.tensorflow.lite.Interpreter;

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

    private final Interpreter interpreter;
    private final ModelPack pack;
    private final EntityExtractor extractor;
    private final List<String> feeds;
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

    /** Latency samples of a benchmark run, in milliseconds. */
    public static final class Benchmark {
        public final LatencyStats tokenize;
        public final LatencyStats inference;
        public final LatencyStats decode;
        public final int tokens;
        public final int windows;

        Benchmark(LatencyStats tokenize, LatencyStats inference, LatencyStats decode, int tokens, int windows) {
            this.tokenize = tokenize;
            this.inference = inference;
            this.decode = decode;
            this.tokens = tokens;
            this.windows = windows;
        }
    }

    public AlbertEntityRecognizer(MappedByteBuffer model, String source, int threads) {
        this.pack = ModelPack.read(model, source);
        this.extractor = EntityExtractor.fromPack(pack);
        this.numLabels = pack.labels.size();
        this.threads = threads;
        Interpreter.Options options = new Interpreter.Options();
        options.setNumThreads(threads);
        this.interpreter = new Interpreter(model, options);
        String signature = AlbertClassifier.SIGNATURE;
        if (!Arrays.asList(interpreter.getSignatureKeys()).contains(signature)) {
            close();
            throw new AlbertCoreException(source + ": model has no '" + signature + "' signature (signatures: "
                    + Arrays.toString(interpreter.getSignatureKeys()) + ")");
        }
        List<String> inputs = Arrays.asList(interpreter.getSignatureInputs(signature));
        if (!inputs.containsAll(pack.inputs) || !pack.inputs.containsAll(inputs)) {
            close();
            throw new AlbertCoreException(source + ": signature inputs " + inputs + " differ from the pack's "
                    + pack.inputs);
        }
        if (!Arrays.asList(interpreter.getSignatureOutputs(signature)).contains(LOGITS)) {
            close();
            throw new AlbertCoreException(source + ": signature has no '" + LOGITS + "' output");
        }
        this.feeds = pack.inputs;
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
        Map<String, Object> inputs = new HashMap<String, Object>();
        for (String name : feeds) {
            inputs.put(name, window.input(name));
        }
        float[][][] logits = new float[1][window.length()][numLabels];
        Map<String, Object> outputs = new HashMap<String, Object>();
        outputs.put(LOGITS, logits);
        interpreter.runSignature(inputs, outputs, AlbertClassifier.SIGNATURE);
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
    public Benchmark benchmark(String text, int runs, int warmup) {
        if (runs < 1) {
            throw new AlbertCoreException("runs: expected at least 1, got " + runs);
        }
        for (int i = 0; i < warmup; i++) {
            recognize(text);
        }
        double[] tokenize = new double[runs];
        double[] inference = new double[runs];
        double[] decode = new double[runs];
        Result last = null;
        for (int i = 0; i < runs; i++) {
            last = recognize(text);
            tokenize[i] = last.tokenizeMs;
            inference[i] = last.inferenceMs;
            decode[i] = last.decodeMs;
        }
        return new Benchmark(new LatencyStats(tokenize), new LatencyStats(inference), new LatencyStats(decode),
                last.tokens, last.windows);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
