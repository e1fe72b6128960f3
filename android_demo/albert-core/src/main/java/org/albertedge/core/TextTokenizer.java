package org.albertedge.core;

import java.util.List;

/**
 * What the preprocessor and the entity extractor need from a tokenizer: WordPiece (vocab.txt) and
 * SentencePiece (spiece.model) both provide it, as Python's two tokenizer classes do.
 */
public interface TextTokenizer {
    /** Text -> tokens, without [CLS]/[SEP]. An empty text gives an empty list. */
    List<String> tokenize(String text);

    /**
     * Text -> tokens with the characters each came from, {@code tokenize(text)}'s tokens exactly.
     * Offsets are code points (Python's str indices); {@link TokenSpan#utf16Start} converts them.
     */
    List<TokenSpan> tokenizeWithOffsets(String text);

    /** Tokens -> ids; a token the vocabulary lacks maps to the unknown id. */
    int[] convertTokensToIds(List<String> tokens);

    int clsId();

    int sepId();

    int unkId();

    int padId();

    int vocabSize();

    boolean doLowerCase();

    /** The token string shown first ({@code [CLS]}; RoBERTa and XLM-R: {@code <s>}). */
    default String clsToken() {
        return "[CLS]";
    }

    /** The token string that ends a segment ({@code [SEP]}; RoBERTa and XLM-R: {@code </s>}). */
    default String sepToken() {
        return "[SEP]";
    }

    /** Separators between the two texts of a pair: 1 ({@code a [SEP] b}), RoBERTa and XLM-R 2 ({@code a </s></s> b}). */
    default int pairSeparators() {
        return 1;
    }

    /** token_type_id of the second text and its separators: 1, RoBERTa and XLM-R 0 (their tokenizers give none). */
    default int pairTypeId() {
        return 1;
    }
}
