package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Python and Java give identical answers from strings: every line of golden_qa.jsonl (a real QA model
 * file, qa_model.tflite, WordPiece BERT, run by LiteRT in Python, answers checked against Python's
 * QuestionAnswerer) and of golden_qa_sp.jsonl (qa_model_sp.tflite, a SentencePiece ALBERT) is answered here from its question and context as typed, with the tokenizer read from that model
 * file's own pack; only the window logits come from the file. Tokens, offsets, windows, model inputs,
 * span, answer text, offsets and score must all agree.
 */
class QuestionAnswererGoldenTest {
    private static ModelPack pack;
    private static List<JSONObject> golden;
    private static ModelPack spPack;
    private static List<JSONObject> spGolden;

    @BeforeAll
    static void load() throws Exception {
        pack = Resources.pack("qa_model.tflite");
        golden = Resources.jsonLines("golden_qa.jsonl");
        spPack = Resources.pack("qa_model_sp.tflite");
        spGolden = Resources.jsonLines("golden_qa_sp.jsonl");
    }

    static List<float[]> rows(JSONArray windows) throws Exception {
        List<float[]> out = new ArrayList<float[]>();
        for (int w = 0; w < windows.length(); w++) {
            double[] values = Resources.doubles(windows.getJSONArray(w));
            float[] row = new float[values.length];
            for (int k = 0; k < values.length; k++) {
                row[k] = (float) values[k];
            }
            out.add(row);
        }
        return out;
    }

    private static QuestionAnswerer answerer(ModelPack pack, JSONObject g) throws Exception {
        return answerer(pack.tokenizer(), g);
    }

    /** The record's settings; the question cap is the default, which must come out as the record's. */
    private static QuestionAnswerer answerer(TextTokenizer tokenizer, JSONObject g) throws Exception {
        return new QuestionAnswerer(tokenizer, g.getInt("max_seq_len"), g.isNull("stride") ? -1 : g.getInt("stride"),
                g.getInt("max_answer_tokens"), -1);
    }

    @Test
    void thePackIsAQuestionAnsweringModelWithSpanOutputs() {
        assertEquals(ModelPack.QUESTION_ANSWERING, pack.task);
        assertTrue(pack.outputs.contains("start_logits") && pack.outputs.contains("end_logits"), pack.outputs.toString());
        QuestionAnswerer qa = QuestionAnswerer.fromPack(pack);
        assertEquals(pack.maxSeqLen, qa.maxSeqLen());
        assertEquals(QuestionAnswerer.defaultMaxQuestionTokens(pack.maxSeqLen), qa.maxQuestionTokens());
    }

    @Test
    void everyGoldenQuestionGivesPythonsTokensWindowsAndAnswer() throws Exception {
        assertEquals("wordpiece", pack.tokenizerType);
        checkAll(pack.tokenizer(), golden, 40, 10, 1);
    }

    @Test
    void everySentencePieceGoldenQuestionGivesPythonsTokensWindowsAndAnswer() throws Exception {
        assertEquals("sentencepiece", spPack.tokenizerType);
        assertEquals(ModelPack.QUESTION_ANSWERING, spPack.task);
        checkAll(spPack.tokenizer(), spGolden, 40, 10, 1);
    }

    /**
     * Every record answered here from its question and context with {@code tokenizer}: question ids, context
     * tokens and ids, each window's rows, token types, place and max-context mask, then span, answer and
     * score from the record's logits. Shared with {@link TemplateWindowsGoldenTest}.
     */
    static void checkAll(TextTokenizer tokenizer, List<JSONObject> golden, int minAnswers, int minMultiWindow,
                         int minAstral) throws Exception {
        int answers = 0;
        int multiWindow = 0;
        int astral = 0;
        List<String> mismatches = new ArrayList<String>();
        for (JSONObject g : golden) {
            String question = g.getString("question");
            String context = g.getString("context");
            String where = JSONObject.quote(question) + " / " + JSONObject.quote(context) + " stride " + g.opt("stride");
            QuestionAnswerer qa = answerer(tokenizer, g);
            assertEquals(g.getInt("max_question_tokens"), qa.maxQuestionTokens(), where);
            QuestionAnswerer.Prepared p = qa.prepare(question, context);
            assertArrayEquals(Resources.ints(g.getJSONArray("question_ids")), p.questionIds, where);
            assertEquals(OffsetsGoldenTest.spans(g.getJSONArray("tokens")), p.tokens, where);
            assertArrayEquals(Resources.ints(g.getJSONArray("ids")), p.ids, where);
            JSONArray want = g.getJSONArray("windows");
            assertEquals(want.length(), p.encodings.size(), where);
            multiWindow += p.encodings.size() > 1 ? 1 : 0;
            for (int k = 0; k < p.encodings.size(); k++) {
                JSONObject ww = want.getJSONObject(k);
                Encoding e = p.encodings.get(k);
                assertArrayEquals(Resources.ints(ww.getJSONArray("input_ids")), e.inputIds, where + " window " + k);
                assertArrayEquals(Resources.ints(ww.getJSONArray("token_type_ids")), e.tokenTypeIds, where);
                assertEquals(ww.getInt("first"), p.windows.get(k).first, where);
                assertEquals(ww.getInt("offset"), p.windows.get(k).offset, where);
                assertEquals(ww.getInt("length"), p.windows.get(k).length, where);
                JSONArray mask = ww.getJSONArray("max_context");
                for (int i = 0; i < mask.length(); i++) {
                    assertEquals(mask.getBoolean(i), p.windows.get(k).maxContext[i], where + " window " + k + " token " + i);
                }
                assertEquals(e.length(), e.tokens.size(), where);
                assertEquals(tokenizer.clsToken(), e.tokens.get(0), where);
                assertEquals(tokenizer.sepToken(), e.tokens.get(e.length() - 1), where);
                assertEquals(tokenizer.sepToken(), e.tokens.get(p.windows.get(k).offset - 1), where);
            }
            QuestionAnswerer.Answer a = qa.answer(p, rows(g.getJSONArray("start_logits")), rows(g.getJSONArray("end_logits")));
            boolean same = g.getString("answer").equals(a.text) && g.getInt("start") == a.start && g.getInt("end") == a.end
                    && Math.abs(g.getDouble("score") - a.score) <= 1e-9 * Math.max(1.0, g.getDouble("score"));
            if (g.isNull("span")) {
                same &= a.firstToken == -1 && a.lastToken == -1;
            } else {
                JSONArray s = g.getJSONArray("span");
                same &= s.getInt(0) == a.firstToken && s.getInt(1) == a.lastToken;
            }
            if (!same) {
                mismatches.add(where + ": python " + g.getString("answer") + " [" + g.getInt("start") + ", "
                        + g.getInt("end") + ") score " + g.getDouble("score") + "\n  java " + a);
            }
            assertEquals(a.text, context.substring(a.utf16Start, a.utf16End), where);
            answers += a.text.isEmpty() ? 0 : 1;
            astral += !a.text.isEmpty() && context.codePointCount(0, a.utf16Start) != a.utf16Start ? 1 : 0;
        }
        assertTrue(mismatches.isEmpty(), mismatches.size() + " differ:\n"
                + String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size()))));
        assertTrue(answers >= minAnswers, "golden should hold at least " + minAnswers + " answers, found " + answers);
        assertTrue(multiWindow >= minMultiWindow, "golden should hold contexts over several windows, found "
                + multiWindow);
        assertTrue(astral >= minAstral, "golden should hold an answer after surrogate pairs, found " + astral);
    }

    @Test
    void answerRunsEachWindowThroughTheRunner() throws Exception {
        JSONObject g = null;
        for (JSONObject candidate : golden) {
            if (candidate.getJSONArray("windows").length() >= 3) {
                g = candidate;
                break;
            }
        }
        assertTrue(g != null, "no multi-window golden question");
        final List<float[]> starts = rows(g.getJSONArray("start_logits"));
        final List<float[]> ends = rows(g.getJSONArray("end_logits"));
        final int[] calls = {0};
        final JSONArray windows = g.getJSONArray("windows");
        QuestionAnswerer.Answer a = answerer(pack, g).answer(g.getString("question"), g.getString("context"), encoding -> {
            try {
                assertArrayEquals(Resources.ints(windows.getJSONObject(calls[0]).getJSONArray("input_ids")),
                        encoding.input("input_ids")[0]);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
            int k = calls[0]++;
            return new float[][] {starts.get(k), ends.get(k)};
        });
        assertEquals(windows.length(), calls[0]);
        assertEquals(windows.length(), a.windows);
        assertEquals(g.getString("answer"), a.text);
        assertEquals(g.getInt("start"), a.start);
    }

    @Test
    void anEmptyContextIsAnsweredWithoutRunningTheModel() {
        QuestionAnswerer qa = QuestionAnswerer.fromPack(pack);
        QuestionAnswerer.Answer a = qa.answer("Which city is Grace Lee linked to?", " \t ", encoding -> {
            throw new AssertionError("the model must not run on an empty context");
        });
        assertEquals("", a.text);
        assertEquals(0, a.windows);
        assertEquals(-1, a.firstToken);
    }

    @Test
    void badQuestionsSettingsAndLogitsAreRefusedWithOneLine() throws Exception {
        QuestionAnswerer qa = QuestionAnswerer.fromPack(pack);
        assertTrue(assertThrows(AlbertCoreException.class, () -> qa.prepare("  ", "Grace Lee moved to Berlin."))
                .getMessage().contains("question: has no tokens"));
        assertThrows(AlbertCoreException.class, () -> new QuestionAnswerer(pack.tokenizer(), 4, -1, 30, -1));
        assertThrows(AlbertCoreException.class, () -> new QuestionAnswerer(pack.tokenizer(), 64, -1, 0, -1));
        assertThrows(AlbertCoreException.class, () -> new QuestionAnswerer(pack.tokenizer(), 64, -1, 30, 61));
        QuestionAnswerer.Prepared p = qa.prepare("Which city is Grace Lee linked to?", "Grace Lee moved to Berlin.");
        int n = p.encodings.get(0).length();
        List<float[]> good = new ArrayList<float[]>();
        good.add(new float[n]);
        List<float[]> shortRow = new ArrayList<float[]>();
        shortRow.add(new float[n - 1]);
        assertThrows(AlbertCoreException.class, () -> qa.answer(p, shortRow, good));
        float[] nan = new float[n];
        nan[3] = Float.NaN;
        List<float[]> bad = new ArrayList<float[]>();
        bad.add(nan);
        assertTrue(assertThrows(AlbertCoreException.class, () -> qa.answer(p, good, bad)).getMessage()
                .contains("non-finite"));
        ModelPack ner = Resources.pack("ner_model.tflite");
        assertTrue(assertThrows(AlbertCoreException.class, () -> QuestionAnswerer.fromPack(ner)).getMessage()
                .contains("question_answering"));
    }
}
