package org.albertedge.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Named entities from a token-classification model, the Java twin of Python's
 * {@code albert_edge.runtime.TokenClassifier} minus the interpreter: tokenize with offsets, cut the
 * ids into overlapping windows ({@link TokenWindows}), let the caller run each window, merge the
 * logits (most central window wins), softmax and argmax per token, decode the tags
 * ({@link Entities}) and cut each entity out of the original text.
 *
 * <p>Offsets are code points, as in Python (see {@link TokenSpan}); {@link Entity} also carries
 * the UTF-16 indices a Java caller cuts strings with.
 */
public final class EntityExtractor {
    private final TextTokenizer tokenizer;
    private final List<String> labels;
    private final int window;
    private final int stride;

    /** Runs one window through the model: {@code [1, n]} inputs in, {@code [n][labels]} logits out. */
    public interface WindowRunner {
        /**
         * {@code encoding} is [CLS] window [SEP] ({@code <s> window </s>} for RoBERTa and XLM-R; type 0
         * throughout either way), unpadded; return its logits row per position.
         */
        float[][] run(Encoding encoding);
    }

    /** One token with its span, its tag (argmax label) and that label's probability. */
    public static final class TokenTag {
        public final TokenSpan span;
        public final String tag;
        public final double score;

        TokenTag(TokenSpan span, String tag, double score) {
            this.span = span;
            this.tag = tag;
            this.score = score;
        }
    }

    /** One entity: {@code text} is the original text's code points {@code [start, end)}. */
    public static final class Entity {
        public final String label;
        /** Mean over its tokens of the top softmax probability (Hugging Face's "simple"). */
        public final double score;
        /** Code point offsets, as Python's. */
        public final int start;
        public final int end;
        /** The same offsets as UTF-16 indices: {@code text.substring(utf16Start, utf16End)}. */
        public final int utf16Start;
        public final int utf16End;
        public final String text;
        /** Tokens {@code [firstToken, lastToken)}. */
        public final int firstToken;
        public final int lastToken;

        Entity(String label, double score, int start, int end, int utf16Start, int utf16End, String text,
               int firstToken, int lastToken) {
            this.label = label;
            this.score = score;
            this.start = start;
            this.end = end;
            this.utf16Start = utf16Start;
            this.utf16End = utf16End;
            this.text = text;
            this.firstToken = firstToken;
            this.lastToken = lastToken;
        }

        @Override
        public String toString() {
            return label + " [" + start + ", " + end + ") '" + text + "'";
        }
    }

    /** A text ready to run: its tokens and the encodings of its windows. */
    public static final class Prepared {
        public final String text;
        public final List<TokenSpan> tokens;
        public final int[] ids;
        public final int[] windowStarts;
        public final List<Encoding> windows;

        Prepared(String text, List<TokenSpan> tokens, int[] ids, int[] windowStarts, List<Encoding> windows) {
            this.text = text;
            this.tokens = Collections.unmodifiableList(tokens);
            this.ids = ids;
            this.windowStarts = windowStarts;
            this.windows = Collections.unmodifiableList(windows);
        }
    }

    /** {@code stride} negative means Python's default ({@link TokenWindows#defaultStride}). */
    public EntityExtractor(TextTokenizer tokenizer, List<String> labels, int maxSeqLen, int stride) {
        if (labels == null || labels.isEmpty()) {
            throw new AlbertCoreException("labels: a token classifier needs its label names");
        }
        if (maxSeqLen < 3) {
            throw new AlbertCoreException("max_seq_len " + maxSeqLen + " leaves no room for tokens");
        }
        this.tokenizer = tokenizer;
        this.labels = Collections.unmodifiableList(new ArrayList<String>(labels));
        this.window = maxSeqLen - 2;
        this.stride = stride < 0 ? TokenWindows.defaultStride(window) : stride;
        // Refuses a stride outside [0, window) now, not at the first long text.
        TokenWindows.windowStarts(0, window, this.stride);
    }

    /** The extractor a token-classification pack describes (its tokenizer, labels, max_seq_len). */
    public static EntityExtractor fromPack(ModelPack pack) {
        if (!ModelPack.TOKEN_CLASSIFICATION.equals(pack.task) || pack.labels == null) {
            throw new AlbertCoreException("pack task is '" + pack.task + "'; entities need a "
                    + ModelPack.TOKEN_CLASSIFICATION + " model with labels");
        }
        return new EntityExtractor(pack.tokenizer(), pack.labels, pack.maxSeqLen, -1);
    }

    public List<String> labels() {
        return labels;
    }

    public int window() {
        return window;
    }

    public int stride() {
        return stride;
    }

    public TextTokenizer tokenizer() {
        return tokenizer;
    }

    /** Tokens with offsets, their ids, and one [CLS] window [SEP] encoding per window. */
    public Prepared prepare(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        List<TokenSpan> tokens = tokenizer.tokenizeWithOffsets(text);
        List<String> strings = new ArrayList<String>(tokens.size());
        for (TokenSpan t : tokens) {
            strings.add(t.token);
        }
        int[] ids = tokenizer.convertTokensToIds(strings);
        List<Encoding> windows = new ArrayList<Encoding>();
        if (tokens.isEmpty()) {
            return new Prepared(text, tokens, ids, new int[0], windows);
        }
        int[] starts = TokenWindows.windowStarts(ids.length, window, stride);
        for (int start : starts) {
            int end = Math.min(ids.length, start + window);
            int n = end - start + 2;
            int[] row = new int[n];
            row[0] = tokenizer.clsId();
            System.arraycopy(ids, start, row, 1, end - start);
            row[n - 1] = tokenizer.sepId();
            int[] mask = new int[n];
            Arrays.fill(mask, 1);
            List<String> shown = new ArrayList<String>();
            shown.add(tokenizer.clsToken());
            shown.addAll(strings.subList(start, end));
            shown.add(tokenizer.sepToken());
            windows.add(new Encoding(row, new int[n], mask, shown, false));
        }
        return new Prepared(text, tokens, ids, starts, windows);
    }

    /**
     * Each token's tag from the windows' logits; {@code windowLogits[w]} holds window w's rows
     * including its [CLS] and [SEP] (as the model returns them).
     */
    public List<TokenTag> tag(Prepared prepared, float[][][] windowLogits) {
        int n = prepared.tokens.size();
        List<TokenTag> out = new ArrayList<TokenTag>(n);
        if (n == 0) {
            return out;
        }
        float[][][] inner = new float[windowLogits.length][][];
        for (int w = 0; w < windowLogits.length; w++) {
            int expected = prepared.windows.get(w).length();
            if (windowLogits[w].length != expected) {
                throw new AlbertCoreException("logits: window " + w + " has " + windowLogits[w].length
                        + " rows, expected " + expected);
            }
            inner[w] = Arrays.copyOfRange(windowLogits[w], 1, expected - 1);
        }
        float[][] merged = TokenWindows.merge(n, prepared.windowStarts, inner);
        for (int i = 0; i < n; i++) {
            if (merged[i].length != labels.size()) {
                throw new AlbertCoreException("logits: model gives " + merged[i].length + " scores per token but the "
                        + "pack has " + labels.size() + " labels");
            }
            double[] probs = Scores.softmax(merged[i]);
            int best = Scores.argmax(probs);
            out.add(new TokenTag(prepared.tokens.get(i), labels.get(best), probs[best]));
        }
        return out;
    }

    /** Decode tagged tokens into entities cut from {@code text}. */
    public static List<Entity> entities(String text, List<TokenTag> tags) {
        List<String> names = new ArrayList<String>(tags.size());
        for (TokenTag t : tags) {
            names.add(t.tag);
        }
        List<Entity> out = new ArrayList<Entity>();
        for (Entities.TagSpan span : Entities.decodeTags(names)) {
            int start = tags.get(span.first).span.start;
            int end = tags.get(span.last - 1).span.end;
            double sum = 0.0;
            for (int i = span.first; i < span.last; i++) {
                sum += tags.get(i).score;
            }
            int u0 = TokenSpan.utf16Offset(text, start);
            int u1 = TokenSpan.utf16Offset(text, end);
            out.add(new Entity(span.type, sum / (span.last - span.first), start, end, u0, u1, text.substring(u0, u1),
                    span.first, span.last));
        }
        return out;
    }

    /** The whole job: prepare, run each window with {@code runner}, decode. */
    public List<Entity> extract(String text, WindowRunner runner) {
        Prepared prepared = prepare(text);
        float[][][] logits = new float[prepared.windows.size()][][];
        for (int w = 0; w < logits.length; w++) {
            logits[w] = runner.run(prepared.windows.get(w));
        }
        return entities(text, tag(prepared, logits));
    }
}
