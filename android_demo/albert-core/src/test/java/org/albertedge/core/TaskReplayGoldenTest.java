package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * NER and QA end to end through {@link InferenceEngine}: {@link AlbertEntityRecognizer} and
 * {@link AlbertQuestionAnswerer} built on each committed model file's pack, with an engine that
 * replays the LiteRT logits recorded in golden_ner(_sp).jsonl and golden_qa(_sp).jsonl. Every
 * window the task feeds must be the one Python fed (QA: its input_ids and token_type_ids), and the
 * entities and answers must be Python's.
 */
class TaskReplayGoldenTest {
    private static float[] flat(JSONArray rows) throws Exception {
        List<Float> values = new ArrayList<Float>();
        for (int r = 0; r < rows.length(); r++) {
            Object row = rows.get(r);
            if (row instanceof JSONArray) {
                for (double v : Resources.doubles((JSONArray) row)) {
                    values.add((float) v);
                }
            } else {
                values.add((float) rows.getDouble(r));
            }
        }
        float[] out = new float[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = values.get(i);
        }
        return out;
    }

    @Test
    void entitiesThroughTheEngineAreThoseOfPythonWordPiece() throws Exception {
        replayEntities("ner_model.tflite", "golden_ner.jsonl");
    }

    @Test
    void entitiesThroughTheEngineAreThoseOfPythonSentencePiece() throws Exception {
        replayEntities("ner_model_sp.tflite", "golden_ner_sp.jsonl");
    }

    private static void replayEntities(String model, String goldenFile) throws Exception {
        ModelPack pack = Resources.pack(model);
        int entities = 0;
        for (final JSONObject g : Resources.jsonLines(goldenFile)) {
            final JSONArray windows = g.getJSONArray("window_logits");
            final int[] ids = Resources.ints(g.getJSONArray("ids"));
            final int[] starts = Resources.ints(g.getJSONArray("window_starts"));
            final int window = g.getInt("max_seq_len") - 2;
            final TextTokenizer tokenizer = pack.tokenizer();
            ReplayEngine engine = new ReplayEngine(pack.inputs, pack.outputs, (in, call) -> {
                try {
                    int end = Math.min(ids.length, starts[call] + window);
                    int[] expected = new int[end - starts[call] + 2];
                    expected[0] = tokenizer.clsId();
                    System.arraycopy(ids, starts[call], expected, 1, end - starts[call]);
                    expected[expected.length - 1] = tokenizer.sepId();
                    assertArrayEquals(expected, in.get("input_ids"), g.getString("text") + " window " + call);
                    return ReplayEngine.one("logits", flat(windows.getJSONArray(call)));
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            EntityExtractor extractor = new EntityExtractor(pack.tokenizer(), pack.labels, pack.maxSeqLen,
                    g.getInt("stride"));
            AlbertEntityRecognizer recognizer = new AlbertEntityRecognizer(pack, engine, extractor);
            AlbertEntityRecognizer.Result r = recognizer.recognize(g.getString("text"));
            assertEquals(windows.length(), engine.runs.size(), g.getString("text"));
            assertEquals(windows.length(), r.windows);
            JSONArray want = g.getJSONArray("entities");
            assertEquals(want.length(), r.entities.size(), g.getString("text") + ": " + r.entities);
            for (int i = 0; i < want.length(); i++) {
                JSONObject e = want.getJSONObject(i);
                EntityExtractor.Entity got = r.entities.get(i);
                assertEquals(e.getString("label"), got.label);
                assertEquals(e.getInt("start"), got.start);
                assertEquals(e.getInt("end"), got.end);
                assertEquals(e.getString("text"), got.text);
                assertEquals(e.getDouble("score"), got.score, 1e-12);
                entities++;
            }
            recognizer.close();
            assertTrue(engine.closed);
        }
        assertTrue(entities >= 100, "golden should hold at least 100 entities, found " + entities);
    }

    @Test
    void answersThroughTheEngineAreThoseOfPythonWordPiece() throws Exception {
        replayAnswers("qa_model.tflite", "golden_qa.jsonl");
    }

    @Test
    void answersThroughTheEngineAreThoseOfPythonSentencePiece() throws Exception {
        replayAnswers("qa_model_sp.tflite", "golden_qa_sp.jsonl");
    }

    private static void replayAnswers(String model, String goldenFile) throws Exception {
        ModelPack pack = Resources.pack(model);
        int answers = 0;
        for (final JSONObject g : Resources.jsonLines(goldenFile)) {
            final JSONArray windows = g.getJSONArray("windows");
            final String where = g.getString("question") + " / " + g.getString("context");
            ReplayEngine engine = new ReplayEngine(pack.inputs, pack.outputs, (in, call) -> {
                try {
                    JSONObject w = windows.getJSONObject(call);
                    assertArrayEquals(Resources.ints(w.getJSONArray("input_ids")), in.get("input_ids"), where);
                    if (in.containsKey("token_type_ids")) {
                        assertArrayEquals(Resources.ints(w.getJSONArray("token_type_ids")), in.get("token_type_ids"),
                                where);
                    }
                    Map<String, float[]> out = new HashMap<String, float[]>();
                    out.put(QuestionAnswerer.START_LOGITS, flat(g.getJSONArray("start_logits").getJSONArray(call)));
                    out.put(QuestionAnswerer.END_LOGITS, flat(g.getJSONArray("end_logits").getJSONArray(call)));
                    return out;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            QuestionAnswerer settings = new QuestionAnswerer(pack.tokenizer(), g.getInt("max_seq_len"),
                    g.isNull("stride") ? -1 : g.getInt("stride"), g.getInt("max_answer_tokens"), -1);
            AlbertQuestionAnswerer answerer = new AlbertQuestionAnswerer(pack, engine, settings);
            AlbertQuestionAnswerer.Result r = answerer.answer(g.getString("question"), g.getString("context"));
            assertEquals(windows.length(), engine.runs.size(), where);
            QuestionAnswerer.Answer a = r.answer;
            assertEquals(g.getString("answer"), a.text, where);
            assertEquals(g.getInt("start"), a.start, where);
            assertEquals(g.getInt("end"), a.end, where);
            assertEquals(g.getDouble("score"), a.score, 1e-9 * Math.max(1.0, g.getDouble("score")), where);
            answers += a.text.isEmpty() ? 0 : 1;
        }
        assertTrue(answers >= 40, "golden should hold at least 40 answers, found " + answers);
    }
}
