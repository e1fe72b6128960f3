package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** NFC and NFD from Python's tables equal unicodedata.normalize on combining-heavy text. */
class NormalizationTest {
    @Test
    void goldenNfcAndNfdMatchPython() throws Exception {
        List<String> mismatches = new ArrayList<String>();
        List<JSONObject> golden = Resources.jsonLines("golden_normalization.jsonl");
        for (JSONObject g : golden) {
            String text = g.getString("text");
            if (!g.getString("nfc").equals(Normalization.nfc(text))) {
                mismatches.add("NFC " + JSONObject.quote(text));
            }
            if (!g.getString("nfd").equals(Normalization.nfd(text))) {
                mismatches.add("NFD " + JSONObject.quote(text));
            }
        }
        assertTrue(golden.size() > 1000, "golden_normalization.jsonl should hold many texts");
        assertTrue(mismatches.isEmpty(), mismatches.size() + " differ, e.g. "
                + mismatches.subList(0, Math.min(5, mismatches.size())));
    }

    @Test
    void hangulSyllableDecomposesToJamoAndComposesBack() {
        assertEquals("\u1112\u1161\u11ab", Normalization.nfd("\ud55c"));
        assertEquals("\ud55c", Normalization.nfc("\u1112\u1161\u11ab"));
    }

    @Test
    void compositionExclusionStaysDecomposed() {
        // U+0958 DEVANAGARI LETTER QA is excluded from composition: NFC gives KA + NUKTA.
        assertEquals("\u0915\u093c", Normalization.nfc("\u0958"));
    }

    @Test
    void marksAreReorderedByCombiningClassBeforeComposing() {
        // a + dot below (220) + circumflex (230) -> U+1EAD whichever order the marks were typed in.
        assertEquals("\u1ead", Normalization.nfc("a\u0302\u0323"));
        assertEquals("\u1ead", Normalization.nfc("a\u0323\u0302"));
    }
}
