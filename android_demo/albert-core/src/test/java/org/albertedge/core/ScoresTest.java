package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** Softmax and labels agree with the Python side's golden_logits.jsonl. */
class ScoresTest {
    private static float[] floats(double[] values) {
        float[] out = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (float) values[i];
        }
        return out;
    }

    @Test
    void goldenProbabilitiesAndLabelsMatchPython() throws Exception {
        List<String> mismatches = new ArrayList<String>();
        List<JSONObject> golden = Resources.jsonLines("golden_logits.jsonl");
        for (JSONObject g : golden) {
            float[] logits = floats(Resources.doubles(g.getJSONArray("logits")));
            double[] want = Resources.doubles(g.getJSONArray("probs"));
            double[] got = Scores.softmax(logits);
            List<String> labels = Resources.strings(g.getJSONArray("labels"));
            for (int i = 0; i < want.length; i++) {
                if (Math.abs(got[i] - want[i]) > 1e-12 * Math.max(1.0, Math.abs(want[i]))) {
                    mismatches.add(g + " -> " + Arrays.toString(got));
                }
            }
            if (!g.getString("label").equals(labels.get(Scores.argmax(got)))) {
                mismatches.add(g + " label -> " + labels.get(Scores.argmax(got)));
            }
        }
        assertTrue(golden.size() > 50, "golden_logits.jsonl should hold many rows");
        assertTrue(mismatches.isEmpty(), String.join("\n", mismatches));
    }

    @Test
    void hugeLogitsGiveFiniteProbabilitiesSummingToOne() {
        double[] p = Scores.softmax(new float[] {3.0e38f, -3.0e38f, 3.0e38f});
        assertEquals(1.0, p[0] + p[1] + p[2], 1e-15);
        assertEquals(0.5, p[0], 1e-15);
    }

    @Test
    void topKRanksByProbabilityAndKeepsLabelOrderOnTies() {
        List<Scores.Ranked> top = Scores.topK(new float[] {1f, 3f, 3f, -2f}, Arrays.asList("a", "b", "c", "d"), 3);
        assertEquals(Arrays.asList("b", "c", "a"), Arrays.asList(top.get(0).label, top.get(1).label, top.get(2).label));
    }

    @Test
    void labelCountMismatchIsAnError() {
        assertThrows(AlbertCoreException.class, () -> Scores.topK(new float[] {1f, 2f}, Arrays.asList("a"), 1));
    }

    @Test
    void nanLogitIsAnError() {
        assertThrows(AlbertCoreException.class, () -> Scores.softmax(new float[] {Float.NaN, 1f}));
    }
}
