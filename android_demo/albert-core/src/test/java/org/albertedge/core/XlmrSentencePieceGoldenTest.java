package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

/**
 * XLM-R's SentencePiece (the model in fairseq's id layout, as a pack carries it) tokenizes exactly as
 * Python does: every record of golden_xlmr_tokenization.jsonl (tests/support/family_goldens_resources.py,
 * from the committed xlmr_spiece.model), with the unigram port ALBERT's models use.
 */
class XlmrSentencePieceGoldenTest {
    private static SentencePieceTokenizer tokenizer(boolean doLowerCase) throws Exception {
        return SentencePieceTokenizer.fromModelBytes(Resources.bytes("xlmr_spiece.model"), doLowerCase,
                "xlmr_spiece.model");
    }

    @Test
    void everyGoldenRecordIsReproducedExactly() throws Exception {
        int checked = FamilyGoldens.replay("golden_xlmr_tokenization.jsonl", tokenizer(false));
        assertTrue(checked > 300, "golden file should hold a few hundred cases, found " + checked);
    }

    @Test
    void aPackThatSaysLowerCaseStillTokenizesCased() throws Exception {
        SentencePieceTokenizer tok = tokenizer(true);
        assertTrue(tok.isFairseq());
        assertFalse(tok.doLowerCase());
        assertEquals(FamilyGoldens.replay("golden_xlmr_tokenization.jsonl", tok),
                FamilyGoldens.replay("golden_xlmr_tokenization.jsonl", tokenizer(false)));
    }

    @Test
    void fairseqSpecialsAndPairTemplate() throws Exception {
        SentencePieceTokenizer tok = tokenizer(false);
        assertEquals(Arrays.asList(0, 1, 2, 3), Arrays.asList(tok.clsId(), tok.padId(), tok.sepId(), tok.unkId()));
        Encoding enc = new Preprocessor(tok, 64).encode("Paris", "Berlin");
        assertEquals("<s>", enc.tokens.get(0));
        int firstSep = enc.tokens.indexOf("</s>");
        assertEquals("</s>", enc.tokens.get(firstSep + 1));
        assertEquals(2, enc.inputIds[firstSep + 1]);
        assertTrue(Arrays.equals(new int[enc.length()], enc.tokenTypeIds));
    }

    @Test
    void albertModelsKeepTheirOwnTemplate() throws Exception {
        SentencePieceTokenizer albert = SentencePieceTokenizer.fromModelBytes(Resources.bytes("spiece.model"), true,
                "spiece.model");
        assertFalse(albert.isFairseq());
        Encoding enc = new Preprocessor(albert, 64).encode("a", "b");
        assertEquals("[CLS]", enc.tokens.get(0));
        assertEquals(1, enc.tokenTypeIds[enc.length() - 1]);
    }

    @Test
    void everyCodePointTokenizesAsInPython() throws Exception {
        java.util.List<String> differing = FamilyGoldens.differingBlocks("golden_xlmr_codepoints.json", tokenizer(false));
        assertTrue(differing.isEmpty(), "blocks that tokenize differently from Python: " + differing);
    }
}
