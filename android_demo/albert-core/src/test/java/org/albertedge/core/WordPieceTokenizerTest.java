package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.junit.jupiter.api.Test;

/** Behaviours that a char-based (UTF-16) port gets wrong, pinned one by one. */
class WordPieceTokenizerTest {
    private static final String VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n\uD840\uDC00\n中\nab\n##c\ni\n\uD83D\uDE00\n##\uD83D\uDE00\n";

    private static WordPieceTokenizer small() {
        return WordPieceTokenizer.fromVocabText(VOCAB, true, "small");
    }

    @Test
    void extensionBIdeographIsOneTokenNotTwoSurrogates() {
        assertEquals(Arrays.asList("\uD840\uDC00", "中"), small().tokenize("\uD840\uDC00中"));
    }

    @Test
    void wordLengthCapCountsCodePointsNotChars() {
        StringBuilder astral = new StringBuilder();
        for (int i = 0; i < 60; i++) {
            astral.append("\uD83D\uDE00");
        }
        // 60 code points is under the cap of 100 although it is 120 UTF-16 chars.
        List<String> pieces = small().tokenize(astral.toString());
        assertEquals(60, pieces.size());
        assertEquals("##\uD83D\uDE00", pieces.get(59));
    }

    @Test
    void wordOverOneHundredCodePointsIsOneUnkEvenWhenCoverable() {
        StringBuilder longWord = new StringBuilder("ab");
        for (int i = 0; i < 99; i++) {
            longWord.append('c');
        }
        assertEquals(Collections.singletonList("[UNK]"), small().tokenize(longWord.toString()));
        assertEquals(Arrays.asList("ab", "##c"), small().tokenize("abc"));
    }

    @Test
    void dottedCapitalILowerCasesLikePythonThenLosesItsDot() {
        assertEquals(Collections.singletonList("i"), small().tokenize("\u0130"));
    }

    @Test
    void finalSigmaFollowsPythonsContextRule() {
        assertEquals("\u03bf\u03b4\u03c5\u03c3\u03c3\u03b5\u03c5\u03c2", BertText.lower("\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3"));
        assertEquals("\u03c3", BertText.lower("\u03a3"));
        assertEquals("a\u03c2.", BertText.lower("A\u03a3."));
    }

    @Test
    void unicode14LetterIsKeptAlthoughJava17CallsItUnassigned() {
        // U+1E290 TOTO LETTER PA is Lo in Unicode 14 (Python 3.11), unassigned (Cn) in Java 17.
        assertEquals(Collections.singletonList("[UNK]"), small().tokenize("\uD878\uDE90"));
    }

    @Test
    void lineSeparatorSplitsWordsAsPythonStrSplitDoes() {
        assertEquals(Arrays.asList("ab", "ab"), small().tokenize("ab\u2028ab"));
    }

    @Test
    void crlfVocabGivesSameIdsAsLf() {
        WordPieceTokenizer crlf = WordPieceTokenizer.fromVocabText(VOCAB.replace("\n", "\r\n"), true, "crlf");
        List<String> tokens = Arrays.asList("ab", "##c", "中");
        assertTrue(Arrays.equals(small().convertTokensToIds(tokens), crlf.convertTokensToIds(tokens)));
    }

    @Test
    void vocabWithoutClsIsRefusedNamingTheSource() {
        AlbertCoreException e = assertThrows(AlbertCoreException.class,
                () -> WordPieceTokenizer.fromVocabText("[UNK]\n[SEP]\n", true, "bad-vocab.txt"));
        assertTrue(e.getMessage().startsWith("bad-vocab.txt: vocab has no [CLS]"), e.getMessage());
    }

    @Test
    void invalidUtf8VocabIsRefused() {
        byte[] bad = "[CLS]\n[SEP]\n[UNK]\n\u00ff".getBytes(StandardCharsets.ISO_8859_1);
        assertThrows(AlbertCoreException.class, () -> WordPieceTokenizer.fromVocabBytes(bad, true, "v"));
    }

    @Test
    void pairBudgetTooSmallIsRefused() {
        assertThrows(AlbertCoreException.class, () -> new Preprocessor(small(), 4).encode("ab", "ab"));
    }

    @Test
    void longestFirstTruncationTakesFromTheLongerThenFromBOnTies() {
        assertArrayEquals2(new int[] {3, 2}, Preprocessor.longestFirstLengths(10, 2, 5));
        assertArrayEquals2(new int[] {2, 3}, Preprocessor.longestFirstLengths(2, 10, 5));
        assertArrayEquals2(new int[] {3, 2}, Preprocessor.longestFirstLengths(4, 4, 5));
    }

    @Test
    void encodingBindsInputsByName() {
        Encoding enc = new Preprocessor(small(), 16).encode("ab", "中");
        assertEquals(Arrays.asList("[CLS]", "ab", "[SEP]", "中", "[SEP]"), enc.tokens);
        assertTrue(Arrays.equals(new int[] {0, 0, 0, 1, 1}, enc.input("token_type_ids")[0]));
        assertThrows(AlbertCoreException.class, () -> enc.input("position_ids"));
    }

    private static void assertArrayEquals2(int[] want, int[] got) {
        assertTrue(Arrays.equals(want, got), Arrays.toString(want) + " != " + Arrays.toString(got));
    }
}
