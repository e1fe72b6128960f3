package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The phone tokenizes exactly as Python does: every line of golden_tokenization.jsonl (written by
 * albert_edge.android.goldens from albert_edge.tokenizer) must come out identical.
 */
class GoldenTokenizationTest {
    private static List<JSONObject> golden;
    private static WordPieceTokenizer lower;
    private static WordPieceTokenizer cased;

    @BeforeAll
    static void load() throws Exception {
        golden = Resources.jsonLines("golden_tokenization.jsonl");
        lower = Resources.vocab(true);
        cased = Resources.vocab(false);
    }

    private static String describe(JSONObject g) {
        return "text_a=" + JSONObject.quote(g.optString("text_a")) + " text_b="
                + (g.isNull("text_b") ? "null" : JSONObject.quote(g.optString("text_b"))) + " max_seq_len="
                + g.optInt("max_seq_len") + " lower=" + g.optBoolean("do_lower_case");
    }

    @Test
    void everyGoldenEncodingIsReproducedExactly() throws Exception {
        List<String> mismatches = new ArrayList<String>();
        int checked = 0;
        for (JSONObject g : golden) {
            if (g.has("error")) {
                continue;
            }
            Preprocessor pre = new Preprocessor(g.getBoolean("do_lower_case") ? lower : cased, g.getInt("max_seq_len"));
            Encoding enc = pre.encode(g.getString("text_a"), g.isNull("text_b") ? null : g.getString("text_b"));
            checked++;
            String differs = Resources.encodingMismatch(g, enc);
            if (differs != null) {
                mismatches.add(describe(g) + differs);
            }
        }
        assertTrue(checked > 400, "golden file should hold a few hundred encodable cases, found " + checked);
        assertTrue(mismatches.isEmpty(), mismatches.size() + " of " + checked + " golden encodings differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(10, mismatches.size()))));
    }

    @Test
    void inputsPythonRefusesAreRefusedToo() throws Exception {
        int refused = 0;
        for (JSONObject g : golden) {
            if (!g.has("error")) {
                continue;
            }
            Preprocessor pre = new Preprocessor(g.getBoolean("do_lower_case") ? lower : cased, g.getInt("max_seq_len"));
            String b = g.isNull("text_b") ? null : g.getString("text_b");
            try {
                pre.encode(g.getString("text_a"), b);
            } catch (AlbertCoreException expected) {
                refused++;
                continue;
            }
            throw new AssertionError("Java encoded an input Python refuses: " + describe(g));
        }
        assertTrue(refused > 0, "golden file should include inputs with no tokens");
    }

    @Test
    void goldenCoversEveryCjkRangeAndAstralText() throws Exception {
        int[][] cjk = UnicodeTables.bertCjkRanges();
        boolean[] seen = new boolean[cjk.length];
        for (JSONObject g : golden) {
            for (int cp : CodePoints.of(g.getString("text_a"))) {
                for (int r = 0; r < seen.length; r++) {
                    if (cp >= cjk[r][0] && cp <= cjk[r][1]) {
                        seen[r] = true;
                    }
                }
            }
        }
        for (int r = 0; r < seen.length; r++) {
            assertTrue(seen[r], "no golden text uses CJK range " + Integer.toHexString(cjk[r][0]));
        }
    }

    @Test
    void goldenTruncatesBothSinglesAndPairs() throws Exception {
        int singles = 0;
        int pairs = 0;
        for (JSONObject g : golden) {
            if (g.optBoolean("truncated")) {
                if (g.isNull("text_b")) {
                    singles++;
                } else {
                    pairs++;
                }
            }
        }
        assertTrue(singles > 0 && pairs > 0, "truncated singles=" + singles + " pairs=" + pairs);
    }
}
