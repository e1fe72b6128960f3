package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * RoBERTa's byte-level BPE tokenizes exactly as Python does: every record of
 * golden_bpe_tokenization.jsonl (tests/support/family_goldens_resources.py, from the committed bpe.json).
 */
class ByteLevelBpeGoldenTest {
    private static ByteLevelBpeTokenizer tokenizer() throws Exception {
        return ByteLevelBpeTokenizer.fromAssetBytes(Resources.bytes("bpe.json"), "bpe.json");
    }

    @Test
    void everyGoldenRecordIsReproducedExactly() throws Exception {
        int checked = FamilyGoldens.replay("golden_bpe_tokenization.jsonl", tokenizer());
        assertTrue(checked > 300, "golden file should hold a few hundred cases, found " + checked);
    }

    @Test
    void robertaSpecialsAndPairTemplate() throws Exception {
        ByteLevelBpeTokenizer tok = tokenizer();
        Encoding enc = new Preprocessor(tok, 32).encode("a", "b");
        assertEquals(Arrays.asList("<s>", "a", "</s>", "</s>", "b", "</s>"), enc.tokens);
        assertEquals(tok.clsId(), enc.inputIds[0]);
        assertEquals(tok.sepId(), enc.inputIds[2]);
        assertEquals(tok.sepId(), enc.inputIds[3]);
        assertTrue(Arrays.equals(new int[6], enc.tokenTypeIds));
    }

    @Test
    void gpt2PatternSplitsContractionsAndGivesTheLastSpaceToTheWord() throws Exception {
        assertEquals(Arrays.asList("I", "'m", "Ġ", "Ġgo", "Ġ42", "!?", "Ġ"), pieces("I'm  go 42!? "));
    }

    private static List<String> pieces(String text) {
        List<String> out = new ArrayList<String>();
        int[] cps = CodePoints.of(text);
        for (int[] span : ByteLevelBpeTokenizer.pretokenize(cps)) {
            out.add(CodePoints.fromRange(cps, span[0], span[1]).replace(' ', 'Ġ'));
        }
        return out;
    }

    @Test
    void aBrokenAssetIsOneLineNamingIt() {
        AlbertCoreException e = assertThrows(AlbertCoreException.class, () -> ByteLevelBpeTokenizer.fromAssetBytes(
                "{\"type\":\"bytelevel_bpe\",\"vocab\":{\"a\":0},\"merges\":[]}".getBytes(StandardCharsets.UTF_8), "x.json"));
        assertTrue(e.getMessage().startsWith("x.json: byte-level BPE vocab has no <s>"), e.getMessage());
        assertThrows(AlbertCoreException.class, () -> ByteLevelBpeTokenizer.fromAssetBytes(
                "not json".getBytes(StandardCharsets.UTF_8), "x.json"));
    }

    @Test
    void everyCodePointTokenizesAsInPython() throws Exception {
        java.util.List<String> differing = FamilyGoldens.differingBlocks("golden_bpe_codepoints.json", tokenizer());
        assertTrue(differing.isEmpty(), "blocks that tokenize differently from Python: " + differing);
    }
}
