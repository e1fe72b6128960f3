package org.albertedge.core;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A packed extractive-QA model: question and context in, the answer with character offsets and
 * timings out. The model runs behind an {@link InferenceEngine}; everything else is here.
 *
 * <p>{@link QuestionAnswerer} does the text side: the question's tokens (capped), the context's
 * tokens with offsets, {@code [CLS] question [SEP] window [SEP]} inputs ({@code <s> question </s></s> window
 * </s>}, type 0, for RoBERTa and XLM-R packs) with a stride, the
 * most-central start rule, the best span and the answer cut from the context as typed. This class
 * runs each window at its real length ({@code start_logits}/{@code end_logits} {@code [1, length]}),
 * as Python's {@code QuestionAnswerer} does.
 */
public final class AlbertQuestionAnswerer implements Closeable {
    private final ModelRunner runner;
    private final ModelPack pack;
    private final QuestionAnswerer answerer;

    /** One answer: the span, how the context was cut, and where the time went. */
    public static final class Result {
        public final QuestionAnswerer.Answer answer;
        public final int tokens;
        public final double tokenizeMs;
        /** All windows through the engine. */
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

    /**
     * An answerer for a question-answering {@code pack} run by {@code engine}, which it owns from here
     * on ({@link #close} closes it, and so does a failed check).
     */
    public AlbertQuestionAnswerer(ModelPack pack, InferenceEngine engine) {
        this(pack, engine, fromPack(pack, engine));
    }

    /** {@code answerer} with non-default settings (stride, answer and question caps) for the same pack. */
    public AlbertQuestionAnswerer(ModelPack pack, InferenceEngine engine, QuestionAnswerer answerer) {
        this.pack = pack;
        this.answerer = answerer;
        this.runner = new ModelRunner(engine, pack, QuestionAnswerer.START_LOGITS, QuestionAnswerer.END_LOGITS);
    }

    private static QuestionAnswerer fromPack(ModelPack pack, InferenceEngine engine) {
        try {
            return QuestionAnswerer.fromPack(pack);
        } catch (AlbertCoreException e) {
            engine.close();
            throw e;
        }
    }

    public ModelPack pack() {
        return pack;
    }

    public QuestionAnswerer answerer() {
        return answerer;
    }

    /** {@code {start_logits[length], end_logits[length]}} of one window. */
    public float[][] run(Encoding window) {
        int length = window.length();
        Map<String, float[]> out = runner.run(window, length, length);
        return new float[][] {out.get(QuestionAnswerer.START_LOGITS), out.get(QuestionAnswerer.END_LOGITS)};
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
        runner.close();
    }
}
