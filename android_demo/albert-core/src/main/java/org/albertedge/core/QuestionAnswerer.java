package org.albertedge.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Extractive question answering from strings, the Java twin of Python's
 * {@code albert_edge.runtime.QuestionAnswerer} minus the interpreter: tokenize the question (its
 * first {@code maxQuestionTokens} tokens) and the context with offsets, cut the context into
 * {@code [CLS] question [SEP] window [SEP]} inputs (RoBERTa and XLM-R: {@code <s> question </s></s> window
 * </s>}, type 0 throughout; {@link QaSpans}: stride, most-central start rule),
 * let the caller run each window, pick the best span (at most {@code maxAnswerTokens}) and cut the
 * answer out of the context as typed.
 *
 * <p>Offsets are code points, as in Python (see {@link TokenSpan}); {@link Answer} also carries the
 * UTF-16 indices a Java caller cuts strings with. Golden-tested end to end against Python's
 * {@code QuestionAnswerer} on a real model's logits by {@code QuestionAnswererGoldenTest}.
 */
public final class QuestionAnswerer {
    public static final String START_LOGITS = "start_logits";
    public static final String END_LOGITS = "end_logits";

    private final TextTokenizer tokenizer;
    private final int maxSeqLen;
    private final int stride;
    private final int maxAnswerTokens;
    private final int maxQuestionTokens;

    /** Runs one window through the model: {@code [1, n]} inputs in, {@code {startLogits[n], endLogits[n]}} out. */
    public interface SpanRunner {
        /** {@code encoding} is [CLS] question [SEP] window [SEP] (or the tokenizer's template), unpadded. */
        float[][] run(Encoding encoding);
    }

    /** The answer: {@code text} is the context's code points {@code [start, end)}; empty when there is none. */
    public static final class Answer {
        public final String text;
        /** Code point offsets into the context, as Python's. */
        public final int start;
        public final int end;
        /** The same offsets as UTF-16 indices: {@code context.substring(utf16Start, utf16End)}. */
        public final int utf16Start;
        public final int utf16End;
        /** p(start) * p(end) within the answer's window (softmaxes over its context tokens). */
        public final double score;
        /** Context tokens [firstToken, lastToken] (inclusive); -1 without an answer. */
        public final int firstToken;
        public final int lastToken;
        /** How many windows were run. */
        public final int windows;

        Answer(String text, int start, int end, int utf16Start, int utf16End, double score, int firstToken,
               int lastToken, int windows) {
            this.text = text;
            this.start = start;
            this.end = end;
            this.utf16Start = utf16Start;
            this.utf16End = utf16End;
            this.score = score;
            this.firstToken = firstToken;
            this.lastToken = lastToken;
            this.windows = windows;
        }

        @Override
        public String toString() {
            return "[" + start + ", " + end + ") '" + text + "' score " + score;
        }
    }

    /** A question and context ready to run: their tokens and the encodings of the context's windows. */
    public static final class Prepared {
        public final String question;
        public final String context;
        public final int[] questionIds;
        public final List<TokenSpan> tokens;
        public final int[] ids;
        public final List<QaSpans.Window> windows;
        public final List<Encoding> encodings;

        Prepared(String question, String context, int[] questionIds, List<TokenSpan> tokens, int[] ids,
                 List<QaSpans.Window> windows, List<Encoding> encodings) {
            this.question = question;
            this.context = context;
            this.questionIds = questionIds;
            this.tokens = Collections.unmodifiableList(tokens);
            this.ids = ids;
            this.windows = Collections.unmodifiableList(windows);
            this.encodings = Collections.unmodifiableList(encodings);
        }
    }

    /** Python's default question cap: 64 tokens, at most half the sequence. */
    public static int defaultMaxQuestionTokens(int maxSeqLen) {
        return Math.min(QaSpans.MAX_QUESTION_TOKENS, (maxSeqLen - 3) / 2);
    }

    /**
     * {@code stride} negative: half a window, at most 128 (Python's None); {@code maxQuestionTokens}
     * negative: {@link #defaultMaxQuestionTokens}. The same checks as Python's constructor.
     */
    public QuestionAnswerer(TextTokenizer tokenizer, int maxSeqLen, int stride, int maxAnswerTokens,
                            int maxQuestionTokens) {
        if (maxSeqLen < 5) {
            throw new AlbertCoreException("max_seq_len " + maxSeqLen + " leaves no room for a question and context");
        }
        if (maxAnswerTokens < 1) {
            throw new AlbertCoreException("max_answer_tokens " + maxAnswerTokens + ": expected an int >= 1");
        }
        int cap = maxQuestionTokens < 0 ? defaultMaxQuestionTokens(maxSeqLen) : maxQuestionTokens;
        if (cap < 1) {
            throw new AlbertCoreException("max_question_tokens " + cap + ": expected an int >= 1");
        }
        // The longest question's context window: max_seq_len minus <s>/[CLS], the question, its separators
        // (</s></s> in RoBERTa's template) and the last one; Python's constructor makes the same two checks.
        int shortestWindow = maxSeqLen - 2 - tokenizer.pairSeparators() - cap;
        if (shortestWindow < 1) {
            throw new AlbertCoreException("max_question_tokens " + cap + ": leaves no context in max_seq_len "
                    + maxSeqLen);
        }
        if (stride >= shortestWindow) {
            throw new AlbertCoreException("stride " + stride + ": expected an int in [0, " + shortestWindow
                    + "): the context window is " + shortestWindow + " tokens after a " + cap
                    + "-token question (max_seq_len " + maxSeqLen + ")");
        }
        this.tokenizer = tokenizer;
        this.maxSeqLen = maxSeqLen;
        this.stride = stride < 0 ? -1 : stride;
        this.maxAnswerTokens = maxAnswerTokens;
        this.maxQuestionTokens = cap;
    }

    /** The answerer a question-answering pack describes (its tokenizer, max_seq_len; Python's defaults). */
    public static QuestionAnswerer fromPack(ModelPack pack) {
        if (!ModelPack.QUESTION_ANSWERING.equals(pack.task)) {
            throw new AlbertCoreException("pack task is '" + pack.task + "'; answers need a "
                    + ModelPack.QUESTION_ANSWERING + " model");
        }
        if (!pack.outputs.contains(START_LOGITS) || !pack.outputs.contains(END_LOGITS)) {
            throw new AlbertCoreException("pack outputs are " + pack.outputs + "; a question-answering model needs "
                    + START_LOGITS + " and " + END_LOGITS);
        }
        return new QuestionAnswerer(pack.tokenizer(), pack.maxSeqLen, -1, QaSpans.MAX_ANSWER_TOKENS, -1);
    }

    public TextTokenizer tokenizer() {
        return tokenizer;
    }

    public int maxSeqLen() {
        return maxSeqLen;
    }

    /** -1 means the default (half a window, at most 128). */
    public int stride() {
        return stride;
    }

    public int maxAnswerTokens() {
        return maxAnswerTokens;
    }

    public int maxQuestionTokens() {
        return maxQuestionTokens;
    }

    /** Question ids (capped), context tokens with offsets and one encoding per context window. */
    public Prepared prepare(String question, String context) {
        if (question == null || context == null) {
            throw new AlbertCoreException((question == null ? "question" : "context") + ": expected a string, got null");
        }
        List<String> asked = tokenizer.tokenize(question);
        asked = new ArrayList<String>(asked.subList(0, Math.min(asked.size(), maxQuestionTokens)));
        if (asked.isEmpty()) {
            throw new AlbertCoreException("question: has no tokens");
        }
        int[] questionIds = tokenizer.convertTokensToIds(asked);
        List<TokenSpan> tokens = tokenizer.tokenizeWithOffsets(context);
        List<String> strings = new ArrayList<String>(tokens.size());
        for (TokenSpan t : tokens) {
            strings.add(t.token);
        }
        int[] ids = tokenizer.convertTokensToIds(strings);
        List<QaSpans.Window> windows = new ArrayList<QaSpans.Window>();
        List<Encoding> encodings = new ArrayList<Encoding>();
        if (tokens.isEmpty()) {
            // Nothing to answer from: Python answers without running the model.
            return new Prepared(question, context, questionIds, tokens, ids, windows, encodings);
        }
        int separators = tokenizer.pairSeparators();
        windows.addAll(QaSpans.windows(ids.length, questionIds.length, maxSeqLen, stride, separators));
        for (QaSpans.Window w : windows) {
            int[] row = QaSpans.inputIds(tokenizer.clsId(), tokenizer.sepId(), questionIds, ids, w);
            int[] mask = new int[row.length];
            Arrays.fill(mask, 1);
            List<String> shown = new ArrayList<String>(row.length);
            shown.add(tokenizer.clsToken());
            shown.addAll(asked);
            for (int k = 0; k < separators; k++) {
                shown.add(tokenizer.sepToken());
            }
            shown.addAll(strings.subList(w.first, w.first + w.length));
            shown.add(tokenizer.sepToken());
            encodings.add(new Encoding(row, QaSpans.tokenTypeIds(w, tokenizer.pairTypeId()), mask, shown, false));
        }
        return new Prepared(question, context, questionIds, tokens, ids, windows, encodings);
    }

    /** The answer from each window's start and end logits over its whole sequence ([CLS] to the last [SEP]). */
    public Answer answer(Prepared prepared, List<float[]> startLogits, List<float[]> endLogits) {
        int n = prepared.windows.size();
        if (startLogits.size() != n || endLogits.size() != n) {
            throw new AlbertCoreException("logits: " + startLogits.size() + "/" + endLogits.size()
                    + " start/end rows for " + n + " windows");
        }
        if (prepared.tokens.isEmpty()) {
            return new Answer("", 0, 0, 0, 0, 0.0, -1, -1, 0);
        }
        for (int k = 0; k < n; k++) {
            int expected = prepared.encodings.get(k).length();
            for (float[] row : new float[][] {startLogits.get(k), endLogits.get(k)}) {
                if (row.length != expected) {
                    throw new AlbertCoreException("logits: window " + k + " has " + row.length
                            + " start/end logits, expected " + expected);
                }
                for (float v : row) {
                    if (Float.isNaN(v) || Float.isInfinite(v)) {
                        throw new AlbertCoreException("logits: the model produced non-finite logits; its weights "
                                + "are corrupt");
                    }
                }
            }
        }
        QaSpans.Span span = QaSpans.bestSpan(startLogits, endLogits, prepared.windows, maxAnswerTokens);
        if (span == null) {
            return new Answer("", 0, 0, 0, 0, 0.0, -1, -1, n);
        }
        int start = prepared.tokens.get(span.start).start;
        int end = prepared.tokens.get(span.end).end;
        String context = prepared.context;
        int u0 = TokenSpan.utf16Offset(context, start);
        int u1 = TokenSpan.utf16Offset(context, end);
        return new Answer(context.substring(u0, u1), start, end, u0, u1, span.score, span.start, span.end, n);
    }

    /** The whole job: prepare, run each window with {@code runner}, pick the answer. */
    public Answer answer(String question, String context, SpanRunner runner) {
        Prepared prepared = prepare(question, context);
        List<float[]> starts = new ArrayList<float[]>();
        List<float[]> ends = new ArrayList<float[]>();
        for (Encoding encoding : prepared.encodings) {
            float[][] out = runner.run(encoding);
            if (out == null || out.length != 2) {
                throw new AlbertCoreException("runner: expected {start_logits, end_logits} for a window");
            }
            starts.add(out[0]);
            ends.add(out[1]);
        }
        return answer(prepared, starts, ends);
    }
}
