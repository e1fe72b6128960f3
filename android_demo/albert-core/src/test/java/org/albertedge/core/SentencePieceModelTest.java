package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** The pure-Java SentencePiece model: specials from the proto, and damaged models fail by name. */
class SentencePieceModelTest {
    @Test
    void albertLayoutGivesSpecialIdsFromTheModel() throws Exception {
        SentencePieceTokenizer tok = Resources.spiece(true);
        assertEquals(0, tok.padId());
        assertEquals(1, tok.unkId());
        assertEquals(2, tok.clsId());
        assertEquals(3, tok.sepId());
        // A character the model never saw is one unknown piece; consecutive ones merge into one.
        List<String> pieces = tok.tokenize("\u2603\u2604");
        assertEquals(1, Arrays.stream(tok.convertTokensToIds(pieces)).filter(id -> id == 1).count());
    }

    @Test
    void userDefinedSymbolsStayWholeAndUnsplit() throws Exception {
        SentencePieceTokenizer tok = Resources.spiece(false);
        assertTrue(tok.tokenize("(a-b).").containsAll(Arrays.asList("(", "-", ")", ".")));
    }

    @Test
    void damagedModelsRaiseAlbertCoreExceptionOrStillWork() throws Exception {
        byte[] model = Resources.bytes("spiece.model");
        Random rng = new Random(20240613);
        int refused = 0;
        for (int i = 0; i < 300; i++) {
            byte[] bad = i < 100 ? Arrays.copyOf(model, rng.nextInt(model.length)) : model.clone();
            if (i >= 100) {
                for (int k = 0; k < 1 + rng.nextInt(8); k++) {
                    bad[rng.nextInt(bad.length)] = (byte) rng.nextInt(256);
                }
            }
            try {
                SentencePieceTokenizer tok = SentencePieceTokenizer.fromModelBytes(bad, true, "bad.model");
                tok.tokenizeWithOffsets("The quick brown fox, 1,000 ``dogs'' Zoë 北京 😀");
            } catch (AlbertCoreException expected) {
                assertTrue(expected.getMessage().startsWith("bad.model: "), expected.getMessage());
                refused++;
            }
        }
        assertTrue(refused > 50, "truncated models should mostly be refused, refused " + refused);
    }

    @Test
    void bpeModelsAreRefusedByName() {
        // pieces { piece: "a" }, trainer_spec { model_type: BPE (2) }
        byte[] bpe = {0x0A, 0x03, 0x0A, 0x01, 'a', 0x12, 0x02, 0x18, 0x02};
        String message = assertThrows(AlbertCoreException.class, () -> SentencePieceModel.parse(bpe, "bpe.model"))
                .getMessage();
        assertTrue(message.contains("not unigram"), message);
    }
}
