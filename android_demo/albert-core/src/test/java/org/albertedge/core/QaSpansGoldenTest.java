package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** QA windows, inputs, best span and answer offsets agree with Python's golden_qa_spans.jsonl. */
class QaSpansGoldenTest {
    private static float[] floats(JSONArray array) throws Exception {
        float[] out = new float[array.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) array.getDouble(i);
        }
        return out;
    }

    @Test
    void goldenWindowsSpansAndAnswersMatchPython() throws Exception {
        List<JSONObject> golden = Resources.jsonLines("golden_qa_spans.jsonl");
        assertTrue(golden.size() >= 20, "golden cases: " + golden.size());
        int multiWindow = 0;
        for (JSONObject g : golden) {
            String where = "case " + g.getString("context");
            int[] question = Resources.ints(g.getJSONArray("question_ids"));
            int[] context = Resources.ints(g.getJSONArray("context_ids"));
            int stride = g.isNull("stride") ? -1 : g.getInt("stride");
            List<QaSpans.Window> windows = QaSpans.windows(context.length, question.length, g.getInt("max_seq_len"), stride);
            JSONArray want = g.getJSONArray("windows");
            assertEquals(want.length(), windows.size(), where);
            multiWindow += windows.size() > 1 ? 1 : 0;
            List<float[]> starts = new ArrayList<float[]>();
            List<float[]> ends = new ArrayList<float[]>();
            for (int k = 0; k < windows.size(); k++) {
                QaSpans.Window w = windows.get(k);
                JSONObject ww = want.getJSONObject(k);
                assertEquals(ww.getInt("first"), w.first, where);
                assertEquals(ww.getInt("length"), w.length, where);
                assertEquals(ww.getInt("offset"), w.offset, where);
                JSONArray mask = ww.getJSONArray("max_context");
                for (int i = 0; i < w.length; i++) {
                    assertEquals(mask.getBoolean(i), w.maxContext[i], where + " window " + k + " token " + i);
                }
                assertArrayEquals(Resources.ints(ww.getJSONArray("input_ids")),
                        QaSpans.inputIds(g.getInt("cls_id"), g.getInt("sep_id"), question, context, w), where);
                assertArrayEquals(Resources.ints(ww.getJSONArray("token_type_ids")),
                        QaSpans.tokenTypeIds(w, 1), where);
                JSONArray logits = g.getJSONArray("logits").getJSONArray(k);
                starts.add(floats(logits.getJSONArray(0)));
                ends.add(floats(logits.getJSONArray(1)));
            }
            QaSpans.Span span = QaSpans.bestSpan(starts, ends, windows, g.getInt("max_answer_tokens"));
            if (g.isNull("span")) {
                assertNull(span, where);
                continue;
            }
            JSONArray s = g.getJSONArray("span");
            assertEquals(s.getInt(0), span.start, where);
            assertEquals(s.getInt(1), span.end, where);
            assertEquals(s.getInt(2), span.window, where);
            assertEquals(g.getDouble("score"), span.score, 1e-9 * Math.max(1.0, g.getDouble("score")), where);
            JSONArray offsets = g.getJSONArray("token_offsets");
            int from = offsets.getJSONArray(span.start).getInt(0);
            int to = offsets.getJSONArray(span.end).getInt(1);
            assertEquals(g.getInt("start"), from, where);
            assertEquals(g.getInt("end"), to, where);
            assertEquals(g.getString("answer"), QaSpans.cut(g.getString("context"), from, to), where);
        }
        assertTrue(multiWindow >= 5, "cases with several windows: " + multiWindow);
    }

    @Test
    void spansNeverEndBeforeTheyStartOrRunPastTheLimit() {
        List<QaSpans.Window> windows = QaSpans.windows(5, 1, 9, -1);
        float[] start = {9f, 9f, 9f, 0f, 1f, 0f, 5f, 0f, 9f};
        float[] end = {9f, 9f, 9f, 0f, 6f, 0f, 0f, 0f, 9f};
        List<float[]> s = new ArrayList<float[]>();
        List<float[]> e = new ArrayList<float[]>();
        s.add(start);
        e.add(end);
        QaSpans.Span span = QaSpans.bestSpan(s, e, windows, 30);
        assertEquals(1, span.start);
        assertEquals(1, span.end);
        end[7] = 3f;
        span = QaSpans.bestSpan(s, e, windows, 30);
        assertEquals(3, span.start);
        assertEquals(4, span.end);
        assertEquals(1, QaSpans.bestSpan(s, e, windows, 1).end);
        assertEquals("😀b", QaSpans.cut("a😀bc", 1, 3));
    }
}
