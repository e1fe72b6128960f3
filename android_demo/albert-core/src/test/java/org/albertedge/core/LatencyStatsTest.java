package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** p50/p90 and histograms are numpy's, so phone numbers read like albert-edge bench numbers. */
class LatencyStatsTest {
    private static final double TOL = 1e-9;

    @Test
    void goldenPercentilesMatchNumpy() throws Exception {
        JSONArray sets = new JSONObject(Resources.text("golden_latency.json")).getJSONArray("sets");
        for (int s = 0; s < sets.length(); s++) {
            JSONObject g = sets.getJSONObject(s);
            LatencyStats stats = new LatencyStats(Resources.doubles(g.getJSONArray("samples_ms")));
            assertEquals(g.getDouble("mean"), stats.mean(), TOL, "mean of set " + s);
            assertEquals(g.getDouble("p50"), stats.p50(), TOL, "p50 of set " + s);
            assertEquals(g.getDouble("p90"), stats.p90(), TOL, "p90 of set " + s);
            assertEquals(g.getDouble("p99"), stats.percentile(99), TOL, "p99 of set " + s);
        }
    }

    @Test
    void goldenHistogramsMatchNumpy() throws Exception {
        JSONArray sets = new JSONObject(Resources.text("golden_latency.json")).getJSONArray("sets");
        for (int s = 0; s < sets.length(); s++) {
            JSONObject g = sets.getJSONObject(s);
            LatencyStats stats = new LatencyStats(Resources.doubles(g.getJSONArray("samples_ms")));
            for (int bins : new int[] {1, 5, 10}) {
                assertArrayEquals(Resources.ints(g.getJSONArray("hist" + bins + "_counts")), stats.histogram(bins),
                        "histogram(" + bins + ") of set " + s);
                assertArrayEquals(Resources.doubles(g.getJSONArray("hist" + bins + "_edges")), stats.binEdges(bins),
                        TOL, "edges(" + bins + ") of set " + s);
            }
        }
    }

    @Test
    void textHistogramScalesTheFullestBinToTheWidth() {
        String text = new LatencyStats(new double[] {1.0, 1.1, 1.2, 1.3, 4.0}).textHistogram(3, 8);
        String[] lines = text.split("\\R");
        assertEquals(3, lines.length);
        assertEquals("   1.00-   2.00 ms |######## 4", lines[0]);
        assertEquals("   2.00-   3.00 ms |         0", lines[1]);
        assertEquals("   3.00-   4.00 ms |##       1", lines[2]);
    }

    @Test
    void noSamplesIsAnError() {
        assertThrows(AlbertCoreException.class, () -> new LatencyStats(new double[0]));
    }
}
