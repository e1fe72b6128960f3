package org.albertedge.demo;

import android.content.Context;

import java.io.Closeable;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.LatencyStats;
import org.albertedge.core.ModelPack;
import org.albertedge.core.QuestionAnswerer;
import org.tensorflow.lite.Interpreter;

/**
 * A packed extractive-QA .tflite on LiteRT: question and context in, the answer with character
 * offsets and timings out.
 *
 * <p>albert-core's {@link QuestionAnswerer} does everything but the interpreter: the question's
 * tokens (capped), the context's tokens with offsets, {@code [CLS] question [SEP] window [SEP]}
 * inputs with a stride, the most-central start rule, the best span and the answer cut from the
 * context as typed. This class runs each window through the {@code serving_default} signature at
 * its real length ({@code start_logits}/{@code end_logits} {@code [1, length]}), as Python's
 * {@code QuestionAnswerer} does.
 */
public final class AlbertQuestionAnswerer implements Closeable {
    private final Interpreter interpreter;
    private final ModelPack pack;
    private final QuestionAnswerer answerer;
    private final List<String> feeds;
    private final int threads;

    /** One answer: the span, how the context was cut, and where the time went. */
    public static final class Result {
        public final QuestionAnswerer.Answer answer;
        public final int tokens;
        public final double tokenizeMs;
        /** All windows through the interpreter. */
        public final double inferenceMs;
        /** Best-span search and the cut. */
        public final double decodeMs;

        Result(QuestionAnswerer.Answer answer, int tokens, double tokenizeMs, double inferenceMs, double decodeMs) {
            this.answer = answer;
            this.tokens = tokens;
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

    public AlbertQuestionAnswerer(MappedByteBuffer model, String source, int threads) {
        this.pack = ModelPack.read(model, source);
        this.answerer = QuestionAnswerer.fromPack(pack);
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
        List<String> outputs = Arrays.asList(interpreter.getSignatureOutputs(signature));
        if (!outputs.contains(QuestionAnswerer.START_LOGITS) || !outputs.contains(QuestionAnswerer.END_LOGITS)) {
            close();
            throw new AlbertCoreException(source + ": signature outputs " + outputs + " lack "
                    + QuestionAnswerer.START_LOGITS + "/" + QuestionAnswerer.END_LOGITS);
        }
        this.feeds = pack.inputs;
    }

    public static AlbertQuestionAnswerer fromAssets(Context context, int threads) throws IOException {
        return new AlbertQuestionAnswerer(AlbertClassifier.mapAsset(context, AlbertClassifier.MODEL_ASSET),
                AlbertClassifier.MODEL_ASSET, threads);
    }

    public ModelPack pack() {
        return pack;
    }

    public QuestionAnswerer answerer() {
        return answerer;
    }

    public int threads() {
        return threads;
    }

    /** {@code {start_logits[length], end_logits[length]}} of one window. */
    public float[][] run(Encoding window) {
        Map<String, Object> inputs = new HashMap<String, Object>();
        for (String name : feeds) {
            inputs.put(name, window.input(name));
        }
        float[][] start = new float[1][window.length()];
        float[][] end = new float[1][window.length()];
        Map<String, Object> outputs = new HashMap<String, Object>();
        outputs.put(QuestionAnswerer.START_LOGITS, start);
        outputs.put(QuestionAnswerer.END_LOGITS, end);
        interpreter.runSignature(inputs, outputs, AlbertClassifier.SIGNATURE);
        return new float[][] {start[0], end[0]};
    }

    public Result answer(String question, String context) {
        long t0 = System.nanoTime();
        QuestionAnswerer.Prepared prepared = answerer.prepare(question, context);
        long t1 = System.nanoTime();
        List<float[]> starts = new ArrayList<float[]>();
        List<float[]> ends = new ArrayList<float[]>();
        for (Encoding window : prepared.encodings) {
            float[][] out = run(window);
            starts.add(out[0]);
            ends.add(out[1]);
        }
        long t2 = System.nanoTime();
        QuestionAnswerer.Answer answer = answerer.answer(prepared, starts, ends);
        long t3 = System.nanoTime();
        return new Result(answer, prepared.tokens.size(), (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6);
    }

    /** {@code runs} timed answers after {@code warmup} untimed ones. */
    public Benchmark benchmark(String question, String context, int runs, int warmup) {
        if (runs < 1) {
            throw new AlbertCoreException("runs: expected at least 1, got " + runs);
        }
        for (int i = 0; i < warmup; i++) {
            answer(question, context);
        }
        double[] tokenize = new double[runs];
        double[] inference = new double[runs];
        double[] decode = new double[runs];
        Result last = null;
        for (int i = 0; i < runs; i++) {
            last = answer(question, context);
            tokenize[i] = last.tokenizeMs;
            inference[i] = last.inferenceMs;
            decode[i] = last.decodeMs;
        }
        return new Benchmark(new LatencyStats(tokenize), new LatencyStats(inference), new LatencyStats(decode),
                last.tokens, last.answer.windows);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
