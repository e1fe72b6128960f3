package org.albertedge.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Token ids -> encoder inputs, the Java twin of Python's {@code albert_edge.tokenizer.Preprocessor}:
 * {@code [CLS] a [SEP]} or {@code [CLS] a [SEP] b [SEP]}, token_type_ids 0 then 1, attention mask
 * of ones, at most maxSeqLen positions; pairs truncated longest-first (b loses on a tie). The
 * tokenizer names its specials and pair template (RoBERTa and XLM-R: {@code <s> a </s></s> b </s>},
 * type ids 0 throughout).
 */
public final class Preprocessor {
    private final TextTokenizer tokenizer;
    private final int maxSeqLen;

    public Preprocessor(TextTokenizer tokenizer, int maxSeqLen) {
        if (maxSeqLen < 2) {
            throw new AlbertCoreException("max_seq_len: expected an int >= 2 ([CLS] and [SEP] need two), got "
                    + maxSeqLen);
        }
        this.tokenizer = tokenizer;
        this.maxSeqLen = maxSeqLen;
    }

    public TextTokenizer tokenizer() {
        return tokenizer;
    }

    public int maxSeqLen() {
        return maxSeqLen;
    }

    public Encoding encode(String textA) {
        return encode(textA, null);
    }

    /** {@code textB} may be null for a single text. */
    public Encoding encode(String textA, String textB) {
        List<String> tokensA = tokens(textA, "text_a");
        List<String> tokensB = textB == null ? null : tokens(textB, "text_b");
        int keepA;
        int keepB;
        int middle = tokenizer.pairSeparators();
        if (tokensB == null) {
            keepA = Math.min(tokensA.size(), maxSeqLen - 2);
            keepB = 0;
        } else {
            int budget = maxSeqLen - 2 - middle;
            if (budget < 2) {
                throw new AlbertCoreException("max_seq_len: " + maxSeqLen + " leaves no room for a pair (need >= "
                        + (4 + middle) + ")");
            }
            int[] keep = longestFirstLengths(tokensA.size(), tokensB.size(), budget);
            keepA = keep[0];
            keepB = keep[1];
        }
        boolean truncated = keepA < tokensA.size() || (tokensB != null && keepB < tokensB.size());
        List<String> tokens = new ArrayList<String>();
        tokens.add(tokenizer.clsToken());
        tokens.addAll(tokensA.subList(0, keepA));
        tokens.add(tokenizer.sepToken());
        int firstSegment = tokens.size();
        if (tokensB != null) {
            for (int k = 1; k < middle; k++) {
                tokens.add(tokenizer.sepToken());
            }
            tokens.addAll(tokensB.subList(0, keepB));
            tokens.add(tokenizer.sepToken());
        }
        int n = tokens.size();
        int[] ids = tokenizer.convertTokensToIds(tokens);
        // Specials by id, not by vocab lookup of the string, as on the Python side.
        ids[0] = tokenizer.clsId();
        ids[firstSegment - 1] = tokenizer.sepId();
        if (tokensB != null) {
            for (int k = 1; k < middle; k++) {
                ids[firstSegment - 1 + k] = tokenizer.sepId();
            }
            ids[n - 1] = tokenizer.sepId();
        }
        int[] typeIds = new int[n];
        int[] mask = new int[n];
        for (int i = 0; i < n; i++) {
            typeIds[i] = i < firstSegment ? 0 : tokenizer.pairTypeId();
            mask[i] = 1;
        }
        return new Encoding(ids, typeIds, mask, tokens, truncated);
    }

    private List<String> tokens(String text, String what) {
        if (text == null) {
            throw new AlbertCoreException(what + ": expected a string, got null");
        }
        List<String> tokens = tokenizer.tokenize(text);
        if (tokens.isEmpty()) {
            String shown = text.codePointCount(0, text.length()) <= 20 ? text
                    : text.substring(0, text.offsetByCodePoints(0, 20)) + "...";
            throw new AlbertCoreException(what + ": text '" + shown
                    + "' has no tokens (empty, or only whitespace/control characters)");
        }
        return tokens;
    }

    /**
     * Segment lengths after removing one token at a time from the end of the longer segment
     * (b on a tie): the closed form of that loop, as on the Python side.
     */
    static int[] longestFirstLengths(int lenA, int lenB, int budget) {
        int excess = lenA + lenB - budget;
        if (excess <= 0) {
            return new int[] {lenA, lenB};
        }
        int gap = Math.min(excess, Math.abs(lenA - lenB));
        if (lenA > lenB) {
            lenA -= gap;
        } else {
            lenB -= gap;
        }
        excess -= gap;
        return new int[] {lenA - excess / 2, lenB - (excess + 1) / 2};
    }
}
