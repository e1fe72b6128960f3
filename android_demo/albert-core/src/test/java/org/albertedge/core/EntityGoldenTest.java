package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Python and Java give identical entities for the same logits: every line of golden_ner.jsonl
 * (a real NER model file, ner_model.tflite, WordPiece, run by LiteRT in Python) and of
 * golden_ner_sp.jsonl (ner_model_sp.tflite, an ALBERT model with SentencePiece) is re-decoded here
 * from its window logits, with the tokenizer and labels read from that model file's own pack.
 */
class EntityGoldenTest {
    private static ModelPack pack;
    private static List<JSONObject> golden;
    private static ModelPack spPack;
    private static List<JSONObject> spGolden;

    @BeforeAll
    static void load() throws Exception {
        pack = Resources.pack("ner_model.tflite");
        golden = Resources.jsonLines("golden_ner.jsonl");
        spPack = Resources.pack("ner_model_sp.tflite");
        spGolden = Resources.jsonLines("golden_ner_sp.jsonl");
    }

    static float[][][] logits(JSONArray windows) throws Exception {
        float[][][] out = new float[windows.length()][][];
        for (int w = 0; w < out.length; w++) {
            JSONArray rows = windows.getJSONArray(w);
            out[w] = new float[rows.length()][];
            for (int r = 0; r < rows.length(); r++) {
                double[] values = Resources.doubles(rows.getJSONArray(r));
                out[w][r] = new float[values.length];
                for (int k = 0; k < values.length; k++) {
                    out[w][r][k] = (float) values[k];
                }
            }
        }
        return out;
    }

    @Test
    void everyGoldenTextGivesPythonsTokensWindowsTagsAndEntities() throws Exception {
        assertEquals("wordpiece", pack.tokenizerType);
        checkAll(pack, golden, 100, 3);
    }

    @Test
    void everySentencePieceGoldenTextGivesPythonsTokensWindowsTagsAndEntities() throws Exception {
        assertEquals("sentencepiece", spPack.tokenizerType);
        checkAll(spPack, spGolden, 100, 3);
    }

    private static void checkAll(ModelPack pack, List<JSONObject> golden, int minEntities, int minMultiWindow)
            throws Exception {
        for (JSONObject g : golden) {
            assertEquals(pack.maxSeqLen, g.getInt("max_seq_len"));
        }
        checkAll(pack.tokenizer(), pack.labels, golden, minEntities, minMultiWindow);
    }

    /**
     * Every record's tokens, ids, windows (and their rows, where the record holds
     * {@code window_input_ids}), tags and entities, decoded here with {@code tokenizer} and {@code labels}
     * at the record's own max_seq_len and stride. Shared with {@link TemplateWindowsGoldenTest}.
     */
    static void checkAll(TextTokenizer tokenizer, List<String> labels, List<JSONObject> golden, int minEntities,
                         int minMultiWindow) throws Exception {
        int entities = 0;
        int multiWindow = 0;
        List<String> mismatches = new ArrayList<String>();
        for (JSONObject g : golden) {
            String text = g.getString("text");
            assertEquals(labels, Resources.strings(g.getJSONArray("labels")));
            EntityExtractor extractor = new EntityExtractor(tokenizer, labels, g.getInt("max_seq_len"),
                    g.getInt("stride"));
            EntityExtractor.Prepared prepared = extractor.prepare(text);
            assertEquals(OffsetsGoldenTest.spans(g.getJSONArray("tokens")), prepared.tokens, text);
            assertArrayEquals(Resources.ints(g.getJSONArray("ids")), prepared.ids, text);
            assertArrayEquals(Resources.ints(g.getJSONArray("window_starts")), prepared.windowStarts, text);
            multiWindow += prepared.windowStarts.length > 1 ? 1 : 0;
            for (int w = 0; w < prepared.windows.size(); w++) {
                Encoding window = prepared.windows.get(w);
                assertEquals(g.getJSONArray("window_logits").getJSONArray(w).length(), window.length());
                if (g.has("window_input_ids")) {
                    assertArrayEquals(Resources.ints(g.getJSONArray("window_input_ids").getJSONArray(w)),
                            window.inputIds, text + " window " + w);
                    assertArrayEquals(new int[window.length()], window.tokenTypeIds, text);
                }
                assertEquals(tokenizer.clsToken(), window.tokens.get(0), text);
                assertEquals(tokenizer.sepToken(), window.tokens.get(window.length() - 1), text);
            }
            List<EntityExtractor.TokenTag> tags = extractor.tag(prepared, logits(g.getJSONArray("window_logits")));
            List<String> tagNames = new ArrayList<String>();
            for (EntityExtractor.TokenTag t : tags) {
                tagNames.add(t.tag);
            }
            assertEquals(Resources.strings(g.getJSONArray("tags")), tagNames, text);
            List<EntityExtractor.Entity> got = EntityExtractor.entities(text, tags);
            JSONArray want = g.getJSONArray("entities");
            if (want.length() != got.size()) {
                mismatches.add(JSONObject.quote(text) + ": python " + want + "\n  java " + got);
                continue;
            }
            for (int i = 0; i < got.size(); i++) {
                JSONObject e = want.getJSONObject(i);
                EntityExtractor.Entity j = got.get(i);
                if (!e.getString("label").equals(j.label) || e.getInt("start") != j.start || e.getInt("end") != j.end
                        || !e.getString("text").equals(j.text) || e.getJSONArray("tokens").getInt(0) != j.firstToken
                        || e.getJSONArray("tokens").getInt(1) != j.lastToken
                        || Math.abs(e.getDouble("score") - j.score) > 1e-12) {
                    mismatches.add(JSONObject.quote(text) + ": python " + e + "\n  java " + j + " score " + j.score);
                }
                assertEquals(j.text, text.substring(j.utf16Start, j.utf16End));
                entities++;
            }
        }
        assertTrue(mismatches.isEmpty(), mismatches.size() + " differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size()))));
        assertTrue(entities >= minEntities, "golden should hold at least " + minEntities + " entities, found " + entities);
        assertTrue(multiWindow >= minMultiWindow, "golden should hold texts that need several windows, found "
                + multiWindow);
    }

    @Test
    void extractRunsEachWindowThroughTheRunnerAndDecodesOnce() throws Exception {
        JSONObject g = null;
        for (JSONObject candidate : golden) {
            if (candidate.getJSONArray("window_starts").length() > 2 && candidate.getJSONArray("entities").length() > 0) {
                g = candidate;
                break;
            }
        }
        assertTrue(g != null, "no multi-window golden text");
        final float[][][] logits = logits(g.getJSONArray("window_logits"));
        final int[] calls = {0};
        EntityExtractor extractor = new EntityExtractor(pack.tokenizer(), pack.labels, pack.maxSeqLen, g.getInt("stride"));
        List<EntityExtractor.Entity> got = extractor.extract(g.getString("text"), encoding -> {
            assertEquals(pack.tokenizer().clsId(), encoding.inputIds[0]);
            assertEquals(pack.tokenizer().sepId(), encoding.inputIds[encoding.length() - 1]);
            return logits[calls[0]++];
        });
        assertEquals(logits.length, calls[0]);
        assertEquals(g.getJSONArray("entities").length(), got.size());
        assertEquals(g.getJSONArray("entities").getJSONObject(0).getString("text"), got.get(0).text);
    }

    @Test
    void entityOffsetsAreCodePointsAndUtf16CutsTheSameText() throws Exception {
        for (JSONObject g : golden) {
            String text = g.getString("text");
            if (text.codePointCount(0, text.length()) == text.length()) {
                continue;
            }
            JSONArray entities = g.getJSONArray("entities");
            for (int i = 0; i < entities.length(); i++) {
                JSONObject e = entities.getJSONObject(i);
                String cut = text.substring(TokenSpan.utf16Offset(text, e.getInt("start")),
                        TokenSpan.utf16Offset(text, e.getInt("end")));
                assertEquals(e.getString("text"), cut);
            }
            return;
        }
        throw new AssertionError("golden_ner.jsonl should hold a text with surrogate pairs");
    }
}
