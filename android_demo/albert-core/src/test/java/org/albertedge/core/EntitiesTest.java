package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** Tag decoding and window cutting equal Python's (golden_decoding.json) and read like the rules. */
class EntitiesTest {
    private static String spans(List<Entities.TagSpan> spans) {
        List<String> out = new ArrayList<String>();
        for (Entities.TagSpan s : spans) {
            out.add(s.toString());
        }
        return out.toString();
    }

    private static String decode(String... tags) {
        return spans(Entities.decodeTags(Arrays.asList(tags)));
    }

    @Test
    void everyGoldenTagSequenceDecodesAsInPython() throws Exception {
        JSONObject golden = new JSONObject(Resources.text("golden_decoding.json"));
        JSONArray cases = golden.getJSONArray("tags");
        assertTrue(cases.length() >= 300);
        for (int i = 0; i < cases.length(); i++) {
            JSONObject c = cases.getJSONObject(i);
            List<Entities.TagSpan> got = Entities.decodeTags(Resources.strings(c.getJSONArray("tags")));
            JSONArray want = c.getJSONArray("entities");
            assertEquals(want.length(), got.size(), c.toString());
            for (int k = 0; k < got.size(); k++) {
                JSONArray w = want.getJSONArray(k);
                assertEquals(w.getInt(0), got.get(k).first, c.toString());
                assertEquals(w.getInt(1), got.get(k).last, c.toString());
                assertEquals(w.getString(2), got.get(k).type, c.toString());
            }
        }
    }

    @Test
    void everyGoldenWindowGridEqualsPython() throws Exception {
        JSONArray windows = new JSONObject(Resources.text("golden_decoding.json")).getJSONArray("windows");
        for (int i = 0; i < windows.length(); i++) {
            JSONObject w = windows.getJSONObject(i);
            assertArrayEquals(Resources.ints(w.getJSONArray("starts")),
                    TokenWindows.windowStarts(w.getInt("n"), w.getInt("window"), w.getInt("stride")), w.toString());
        }
    }

    @Test
    void bioBioesBilouAndIoGiveTheSameEntity() {
        String want = "[(1, 3, PER), (4, 5, LOC)]";
        assertEquals(want, decode("O", "B-PER", "I-PER", "O", "B-LOC"));
        assertEquals(want, decode("O", "B-PER", "E-PER", "O", "S-LOC"));
        assertEquals(want, decode("O", "B-PER", "L-PER", "O", "U-LOC"));
        assertEquals(want, decode("O", "PER", "PER", "O", "LOC"));
    }

    @Test
    void strayInsideStartsAnEntityAndATypeChangeSplitsOne() {
        assertEquals("[(0, 2, PER), (2, 3, LOC)]", decode("I-PER", "I-PER", "I-LOC"));
        assertEquals("[(0, 1, PER), (1, 2, PER)]", decode("E-PER", "E-PER"));
        assertEquals("[(0, 1, PER), (1, 2, PER)]", decode("B-PER", "B-PER"));
    }

    @Test
    void pythonUpperCaseRulesApplyToPrefixes() {
        // Python's "\u0131".upper() is "I" and "\u017f".upper() is "S"; a bare "B-" is an IO type.
        assertEquals("[(0, 2, PER)]", decode("b_PER", "\u0131-PER"));
        assertEquals("[(0, 1, LOC)]", decode("\u017f-LOC"));
        assertEquals("[(0, 1, B-)]", decode("B-"));
    }

    @Test
    void centralWindowWinsAndTiesKeepTheEarlierWindow() {
        float[][][] logits = new float[2][4][];
        for (int w = 0; w < 2; w++) {
            for (int i = 0; i < 4; i++) {
                logits[w][i] = new float[] {w};
            }
        }
        // Windows [0, 4) and [2, 6): token 2 has margin 1 in the first, 0 in the second; token 3
        // margin 0 in the first and 1 in the second.
        float[][] merged = TokenWindows.merge(6, new int[] {0, 2}, logits);
        assertEquals(0f, merged[2][0]);
        assertEquals(1f, merged[3][0]);
        assertArrayEquals(new int[] {0, 3, 6}, TokenWindows.windowStarts(10, 4, 1));
    }
}
