package org.albertedge.demo;

import android.content.Context;
import android.content.res.AssetFileDescriptor;

import java.io.Closeable;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.LatencyStats;
import org.albertedge.core.ModelPack;
import org.albertedge.core.Preprocessor;
import org.albertedge.core.Scores;
import org.tensorflow.lite.Interpreter;

/**
 * A packed albert-edge .tflite on LiteRT: text in, ranked labels and timings out.
 *
 * <p>The model is memory-mapped straight out of the APK (the asset is stored uncompressed), its
 * pack (vocab, labels, settings) is read from the same mapping, and inputs are bound by name
 * through the {@code serving_default} signature at their real length: the export has dynamic
 * batch and sequence dimensions, so nothing is padded to max_seq_len.
 */
public final class AlbertClassifier implements Closeable {
    public static final String MODEL_ASSET = "model.tflite";
    public static final String SIGNATURE = "serving_default";
    private static final String LOGITS = "logits";

    private final Interpreter interpreter;
    private final ModelPack pack;
    private final Preprocessor preprocessor;
    private final List<String> feeds;
    private final int numLabels;
    private final int threads;

    /** One classification: the encoding, logits, ranked labels, and the two timings. */
    public static final class Result {
        public final Encoding encoding;
        public final float[] logits;
        public final List<Scores.Ranked> ranked;
        public final double tokenizeMs;
        public final double inferenceMs;

        Result(Encoding encoding, float[] logits, List<Scores.Ranked> ranked, double tokenizeMs, double inferenceMs) {
            this.encoding = encoding;
            this.logits = logits;
            this.ranked = ranked;
            this.tokenizeMs = tokenizeMs;
            this.inferenceMs = inferenceMs;
        }
    }

    /** Latency samples of a benchmark run, in milliseconds. */
    public static final class Benchmark {
        public final LatencyStats tokenize;
        /** Wall time of runSignature: input copy + resize check + invoke + output copy. */
        public final LatencyStats inference;
        /** Interpreter.invoke alone, as reported by LiteRT: the number comparable to benchmark_model. */
        public final LatencyStats nativeInvoke;
        public final int sequenceLength;

        Benchmark(LatencyStats tokenize, LatencyStats inference, LatencyStats nativeInvoke, int sequenceLength) {
            this.tokenize = tokenize;
            this.inference = inference;
            this.nativeInvoke = nativeInvoke;
            this.sequenceLength = sequenceLength;
        }
    }

    public AlbertClassifier(MappedByteBuffer model, String source, int threads) {
        this.pack = ModelPack.read(model, source);
        if (pack.labels == null) {
            throw new AlbertCoreException(source + ": pack has no labels; this demo shows a classification");
        }
        this.preprocessor = pack.preprocessor();
        this.numLabels = pack.labels.size();
        this.threads = threads;
        Interpreter.Options options = new Interpreter.Options();
        options.setNumThreads(threads);
        this.interpreter = new Interpreter(model, options);
        if (!Arrays.asList(interpreter.getSignatureKeys()).contains(SIGNATURE)) {
            close();
            throw new AlbertCoreException(source + ": model has no '" + SIGNATURE + "' signature (signatures: "
                    + Arrays.toString(interpreter.getSignatureKeys()) + ")");
        }
        List<String> inputs = Arrays.asList(interpreter.getSignatureInputs(SIGNATURE));
        if (!inputs.containsAll(pack.inputs) || !pack.inputs.containsAll(inputs)) {
            close();
            throw new AlbertCoreException(source + ": signature inputs " + inputs + " differ from the pack's "
                    + pack.inputs);
        }
        if (!Arrays.asList(interpreter.getSignatureOutputs(SIGNATURE)).contains(LOGITS)) {
            close();
            throw new AlbertCoreException(source + ": signature has no '" + LOGITS + "' output");
        }
        this.feeds = pack.inputs;
    }

    /** Map an uncompressed asset (see noCompress in app/build.gradle.kts) without copying it. */
    public static MappedByteBuffer mapAsset(Context context, String name) throws IOException {
        AssetFileDescriptor fd = context.getAssets().openFd(name);
        try {
            FileInputStream in = new FileInputStream(fd.getFileDescriptor());
            try {
                FileChannel channel = in.getChannel();
                return channel.map(FileChannel.MapMode.READ_ONLY, fd.getStartOffset(), fd.getDeclaredLength());
            } finally {
                in.close();
            }
        } finally {
            fd.close();
        }
    }

    public static AlbertClassifier fromAssets(Context context, int threads) throws IOException {
        return new AlbertClassifier(mapAsset(context, MODEL_ASSET), MODEL_ASSET, threads);
    }

    public ModelPack pack() {
        return pack;
    }

    public Preprocessor preprocessor() {
        return preprocessor;
    }

    public int threads() {
        return threads;
    }

    /** Logits {@code [num_labels]} for one encoding, inputs bound by signature name. */
    public float[] run(Encoding encoding) {
        Map<String, Object> inputs = new HashMap<String, Object>();
        for (String name : feeds) {
            inputs.put(name, encoding.input(name));
        }
        float[][] logits = new float[1][numLabels];
        Map<String, Object> outputs = new HashMap<String, Object>();
        outputs.put(LOGITS, logits);
        interpreter.runSignature(inputs, outputs, SIGNATURE);
        return logits[0];
    }

    public Result classify(String text) {
        long t0 = System.nanoTime();
        Encoding encoding = preprocessor.encode(text);
        long t1 = System.nanoTime();
        float[] logits = run(encoding);
        long t2 = System.nanoTime();
        return new Result(encoding, logits, Scores.topK(logits, pack.labels, numLabels), (t1 - t0) / 1e6,
                (t2 - t1) / 1e6);
    }

    /**
     * {@code runs} timed classifications of {@code text} after {@code warmup} untimed ones (the
     * first invocations allocate tensors and warm caches, as benchmark_model's warm-up does).
     */
    public Benchmark benchmark(String text, int runs, int warmup) {
        if (runs < 1) {
            throw new AlbertCoreException("runs: expected at least 1, got " + runs);
        }
        Encoding encoding = preprocessor.encode(text);
        for (int i = 0; i < warmup; i++) {
            run(encoding);
        }
        double[] tokenize = new double[runs];
        double[] inference = new double[runs];
        double[] invoke = new double[runs];
        for (int i = 0; i < runs; i++) {
            long t0 = System.nanoTime();
            encoding = preprocessor.encode(text);
            long t1 = System.nanoTime();
            run(encoding);
            long t2 = System.nanoTime();
            tokenize[i] = (t1 - t0) / 1e6;
            inference[i] = (t2 - t1) / 1e6;
            Long nativeNanos = interpreter.getLastNativeInferenceDurationNanoseconds();
            invoke[i] = nativeNanos == null || nativeNanos < 0 ? inference[i] : nativeNanos / 1e6;
        }
        return new Benchmark(new LatencyStats(tokenize), new LatencyStats(inference), new LatencyStats(invoke),
                encoding.length());
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
