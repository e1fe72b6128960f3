package org.albertedge.core;

import java.io.Closeable;
import java.util.List;

/**
 * A packed sequence classifier: text in, ranked labels and timings out. The model runs behind an
 * {@link InferenceEngine} (on Android, a LiteRT interpreter); everything else is here.
 *
 * <p>The pack (vocab, labels, settings) is read from the model file itself, and inputs are bound by
 * name at their real length, one text per call: the export's sequence dimension is dynamic (its batch is 1),
 * so nothing is padded to max_seq_len.
 */
public final class AlbertClassifier implements Closeable {
    private static final String LOGITS = "logits";

    private final ModelRunner runner;
    private final ModelPack pack;
    private final Preprocessor preprocessor;
    private final int numLabels;

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
        /** Wall time of one engine run: input copy + resize check + invoke + output copy. */
        public final LatencyStats inference;
        /**
         * The runtime's own invoke time ({@link InferenceEngine#lastRunNanos}; LiteRT's native invoke,
         * the number comparable to benchmark_model); the wall time when the engine does not measure it.
         */
        public final LatencyStats nativeInvoke;
        public final int sequenceLength;

        Benchmark(LatencyStats tokenize, LatencyStats inference, LatencyStats nativeInvoke, int sequenceLength) {
            this.tokenize = tokenize;
            this.inference = inference;
            this.nativeInvoke = nativeInvoke;
            this.sequenceLength = sequenceLength;
        }
    }

    /**
     * A classifier for {@code pack} run by {@code engine}, which it owns from here on: {@link #close}
     * closes it, and so does a failed check (a sequence-classification pack with labels; the engine's
     * inputs must be the pack's, with a {@code logits} output).
     */
    public AlbertClassifier(ModelPack pack, InferenceEngine engine) {
        if (!ModelPack.SEQUENCE_CLASSIFICATION.equals(pack.task) || pack.labels == null) {
            engine.close();
            throw new AlbertCoreException(pack.source() + ": pack task is '" + pack.task + "'; a classifier needs a "
                    + ModelPack.SEQUENCE_CLASSIFICATION + " model with labels");
        }
        this.pack = pack;
        this.preprocessor = pack.preprocessor();
        this.numLabels = pack.labels.size();
        this.runner = new ModelRunner(engine, pack, LOGITS);
    }

    public ModelPack pack() {
        return pack;
    }

    public Preprocessor preprocessor() {
        return preprocessor;
    }

    /** Logits {@code [num_labels]} for one encoding, inputs bound by name. */
    public float[] run(Encoding encoding) {
        return runner.run(encoding, numLabels).get(LOGITS);
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
            long nativeNanos = runner.engine().lastRunNanos();
            invoke[i] = nativeNanos < 0 ? inference[i] : nativeNanos / 1e6;
        }
        return new Benchmark(new LatencyStats(tokenize), new LatencyStats(inference), new LatencyStats(invoke),
                encoding.length());
    }

    @Override
    public void close() {
        runner.close();
    }
}
