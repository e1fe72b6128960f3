package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * Character offsets equal Python's {@code tokenize_with_offsets}, for WordPiece (bert-base-chinese
 * vocab) and SentencePiece (an ALBERT-layout spiece.model), on every line of golden_offsets.jsonl
 * and golden_sp_offsets.jsonl: tokenizer corpus, edge texts, quote pairs, bare U+2581, digit commas,
 * combining marks, emoji and other surrogate pairs, random texts.
 */
class OffsetsGoldenTest {
    static List<TokenSpan> spans(JSONArray array) throws Exception {
        List<TokenSpan> out = new ArrayList<TokenSpan>();
        for (int i = 0; i < array.length(); i++) {
            JSONArray t = array.getJSONArray(i);
            out.add(new TokenSpan(t.getString(0), t.getInt(1), t.getInt(2)));
        }
        return out;
    }

    private static List<String> tokens(List<TokenSpan> spans) {
        List<String> out = new ArrayList<String>();
        for (TokenSpan s : spans) {
            out.add(s.token);
        }
        return out;
    }

    private static void check(String golden, TextTokenizer lower, TextTokenizer cased, int atLeast) throws Exception {
        List<String> mismatches = new ArrayList<String>();
        int checked = 0;
        boolean sawAstral = false;
        for (JSONObject g : Resources.jsonLines(golden)) {
            TextTokenizer tok = g.getBoolean("do_lower_case") ? lower : cased;
            String text = g.getString("text");
            List<TokenSpan> want = spans(g.getJSONArray("tokens"));
            List<TokenSpan> got = tok.tokenizeWithOffsets(text);
            checked++;
            if (!want.equals(got)) {
                mismatches.add(JSONObject.quote(text) + " lower=" + g.getBoolean("do_lower_case") + "\n  python: " + want
                        + "\n  java:   " + got);
                continue;
            }
            if (!tokens(got).equals(tok.tokenize(text))) {
                mismatches.add(JSONObject.quote(text) + ": tokenizeWithOffsets tokens differ from tokenize()");
            }
            for (TokenSpan s : got) {
                // Cutting through the UTF-16 conversion gives exactly end - start code points.
                String cut = s.cut(text);
                assertEquals(s.end - s.start, cut.codePointCount(0, cut.length()));
                sawAstral |= cut.codePointCount(0, cut.length()) != cut.length();
            }
        }
        assertTrue(checked >= atLeast, golden + " should hold at least " + atLeast + " texts, found " + checked);
        assertTrue(sawAstral, golden + " should cut at least one token holding a surrogate pair");
        assertTrue(mismatches.isEmpty(), mismatches.size() + " of " + checked + " differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size()))));
    }

    @Test
    void wordPieceOffsetsEqualPython() throws Exception {
        check("golden_offsets.jsonl", Resources.vocab(true), Resources.vocab(false), 300);
    }

    @Test
    void sentencePieceOffsetsEqualPython() throws Exception {
        check("golden_sp_offsets.jsonl", Resources.spiece(true), Resources.spiece(false), 300);
    }

    @Test
    void sentencePiecePiecesAndIdsEqualPython() throws Exception {
        TextTokenizer lower = Resources.spiece(true);
        TextTokenizer cased = Resources.spiece(false);
        List<String> mismatches = new ArrayList<String>();
        int resplit = 0;
        for (JSONObject g : Resources.jsonLines("golden_sp_offsets.jsonl")) {
            TextTokenizer tok = g.getBoolean("do_lower_case") ? lower : cased;
            List<String> want = Resources.strings(g.getJSONArray("pieces"));
            List<String> got = tok.tokenize(g.getString("text"));
            if (!want.equals(got) || !java.util.Arrays.equals(Resources.ints(g.getJSONArray("ids")), tok.convertTokensToIds(got))) {
                mismatches.add(JSONObject.quote(g.getString("text")) + "\n  python: " + want + "\n  java:   " + got);
            }
            for (int i = 1; i < want.size(); i++) {
                if (want.get(i).equals(",") && !want.get(i - 1).isEmpty()
                        && Character.isDigit(want.get(i - 1).charAt(want.get(i - 1).length() - 1))) {
                    resplit++;
                }
            }
        }
        assertTrue(resplit > 0, "golden should hold digit-comma re-splits");
        assertTrue(mismatches.isEmpty(), mismatches.size() + " differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size()))));
    }

    @Test
    void offsetsAreCodePointsAndCutTheOriginalText() {
        WordPieceTokenizer tok = WordPieceTokenizer.fromVocabText(
                "[PAD]\n[UNK]\n[CLS]\n[SEP]\nparis\n##ian\ncafe\n北\n京\n,\n", true, "small");
        String text = "😀 Parisian Cafe\u0301,北京 Zürich";
        List<TokenSpan> got = tok.tokenizeWithOffsets(text);
        // The emoji is one code point (offset 1 is the space), two UTF-16 units.
        assertEquals(new TokenSpan("[UNK]", 0, 1), got.get(0));
        assertEquals(new TokenSpan("paris", 2, 7), got.get(1));
        assertEquals("Paris", got.get(1).cut(text));
        // A stripped accent leaves the span, as in Python and Hugging Face: only its base letter is cut.
        assertEquals("Cafe", got.get(3).cut(text));
        assertEquals("Zürich", got.get(got.size() - 1).cut(text));
        assertEquals(3, TokenSpan.utf16Offset(text, 2));
    }
}
