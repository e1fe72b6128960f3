package org.albertedge.demo;

import android.content.Context;

import java.io.Closeable;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.ModelPack;
import org.albertedge.core.QuestionAnswerer;

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
    private final WindowedInterpreter interpreter;
    private final ModelPack pack;
    private final QuestionAnswerer answerer;
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

    public AlbertQuestionAnswerer(MappedByteBuffer model, String source, int threads) {
        this.pack = ModelPack.read(model, source);
        this.answerer = QuestionAnswerer.fromPack(pack);
        this.threads = threads;
        this.interpreter = new WindowedInterpreter(model, source, threads, pack);
        List<String> outputs = interpreter.outputs;
        if (!outputs.contains(QuestionAnswerer.START_LOGITS) || !outputs.contains(QuestionAnswerer.END_LOGITS)) {
            close();
            throw new AlbertCoreException(source + ": signature outputs " + outputs + " lack "
                    + QuestionAnswerer.START_LOGITS + "/" + QuestionAnswerer.END_LOGITS);
        }
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
        float[][] start = new float[1][window.length()];
        float[][] end = new float[1][window.length()];
        Map<String, Object> outputs = new HashMap<String, Object>();
        outputs.put(QuestionAnswerer.START_LOGITS, start);
        outputs.put(QuestionAnswerer.END_LOGITS, end);
        interpreter.run(window, outputs);
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
    public WindowBenchmark benchmark(final String question, final String context, int runs, int warmup) {
        return WindowBenchmark.measure(() -> {
            Result r = answer(question, context);
            return new WindowBenchmark.Pass(r.tokenizeMs, r.inferenceMs, r.decodeMs, r.tokens, r.answer.windows);
        }, runs, warmup);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
