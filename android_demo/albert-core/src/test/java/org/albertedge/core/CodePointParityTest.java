package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * Every Unicode code point (surrogates excepted), between "A" and "Σb", tokenizes as in Python:
 * golden_codepoints.json holds one SHA-256 per block of 4096 code points per casing mode.
 */
class CodePointParityTest {
    private static void checkMode(String key, boolean doLowerCase) throws Exception {
        check("golden_codepoints.json", key, Resources.vocab(doLowerCase));
    }

    private static void check(String file, String key, TextTokenizer tok) throws Exception {
        JSONObject golden = new JSONObject(Resources.text(file));
        JSONArray context = golden.getJSONArray("context");
        int block = golden.getInt("block");
        JSONArray digests = golden.getJSONArray(key);
        assertEquals(0x110000 / block, digests.length());
        for (int b = 0; b < digests.length(); b++) {
            assertEquals(digests.getString(b),
                    TokenizerDigest.blockDigest(tok, context.getString(0), context.getString(1), b, block),
                    key + ": code points U+" + Integer.toHexString(b * block) + "..U+"
                            + Integer.toHexString((b + 1) * block - 1) + " tokenize differently from Python");
        }
    }

    @Test
    void everyCodePointLowerCasedTokenizesAsInPython() throws Exception {
        checkMode("lower", true);
    }

    @Test
    void everyCodePointCasedTokenizesAsInPython() throws Exception {
        checkMode("cased", false);
    }

    /** SentencePiece (spiece.model, lower-cased): NFKD, Python's lower(), the nmt_nfkc map, unknowns. */
    @Test
    void everyCodePointSegmentsAsInPythonSentencePiece() throws Exception {
        check("golden_sp_codepoints.json", "lower", Resources.spiece(true));
    }
}
