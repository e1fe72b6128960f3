package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;

/**
 * Replays a golden file of albert_edge.android.family_goldens (tokens, ids, type ids, mask,
 * truncation, single texts' code point offsets; refusals) against a Java tokenizer: the judge of
 * the byte-level BPE and XLM-R SentencePiece ports.
 */
final class FamilyGoldens {
    private FamilyGoldens() {}

    private static String describe(JSONObject g) {
        return "text_a=" + JSONObject.quote(g.optString("text_a")) + " text_b="
                + (g.isNull("text_b") ? "null" : JSONObject.quote(g.optString("text_b"))) + " max_seq_len="
                + g.optInt("max_seq_len");
    }

    private static List<String> offsets(List<TokenSpan> spans) {
        List<String> out = new ArrayList<String>();
        for (TokenSpan s : spans) {
            out.add(s.start + ":" + s.end);
        }
        return out;
    }

    private static List<String> offsets(JSONArray pairs) throws Exception {
        List<String> out = new ArrayList<String>();
        for (int i = 0; i < pairs.length(); i++) {
            out.add(pairs.getJSONArray(i).getInt(0) + ":" + pairs.getJSONArray(i).getInt(1));
        }
        return out;
    }

    /** Every record reproduced exactly; returns how many encodings were checked. */
    static int replay(String golden, TextTokenizer tokenizer) throws Exception {
        List<String> mismatches = new ArrayList<String>();
        int checked = 0;
        for (JSONObject g : Resources.jsonLines(golden)) {
            Preprocessor pre = new Preprocessor(tokenizer, g.getInt("max_seq_len"));
            String b = g.isNull("text_b") ? null : g.getString("text_b");
            if (g.has("error")) {
                try {
                    pre.encode(g.getString("text_a"), b);
                    mismatches.add(describe(g) + "\n  python refused it, java encoded it");
                } catch (AlbertCoreException expected) {
                    checked++;
                }
                continue;
            }
            Encoding enc = pre.encode(g.getString("text_a"), b);
            checked++;
            String differs = Resources.encodingMismatch(g, enc);
            if (differs != null) {
                mismatches.add(describe(g) + differs);
            }
            if (g.has("offsets")) {
                List<String> wantOffsets = offsets(g.getJSONArray("offsets"));
                List<String> got = offsets(tokenizer.tokenizeWithOffsets(g.getString("text_a")));
                if (!wantOffsets.equals(got)) {
                    mismatches.add(describe(g) + "\n  python offsets: " + wantOffsets + "\n  java offsets:   " + got);
                }
            }
        }
        assertTrue(mismatches.isEmpty(), mismatches.size() + " of " + checked + " records of " + golden + " differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(10, mismatches.size()))));
        return checked;
    }

    /** Blocks of all of Unicode whose tokenization digest differs from Python's (golden_*_codepoints.json). */
    static List<String> differingBlocks(String golden, TextTokenizer tokenizer) throws Exception {
        JSONObject digests = new JSONObject(Resources.text(golden));
        JSONArray context = digests.getJSONArray("context");
        int block = digests.getInt("block");
        JSONArray want = digests.getJSONArray("cased");
        List<String> differing = new ArrayList<String>();
        for (int b = 0; b < want.length(); b++) {
            String got = TokenizerDigest.blockDigest(tokenizer, context.getString(0), context.getString(1), b, block);
            if (!want.getString(b).equals(got)) {
                differing.add("U+" + Integer.toHexString(b * block) + "..U+" + Integer.toHexString((b + 1) * block - 1));
            }
        }
        assertTrue(want.length() == 0x110000 / block, golden + " should cover all of Unicode");
        return differing;
    }
}
