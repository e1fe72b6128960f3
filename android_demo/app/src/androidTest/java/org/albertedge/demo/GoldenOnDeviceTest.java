package org.albertedge.demo;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import android.content.Context;

import androidx.test.ext.junit.runners.AndroidJUnit4;
import androidx.test.platform.app.InstrumentationRegistry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.albertedge.core.AlbertClassifier;
import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.AlbertEntityRecognizer;
import org.albertedge.core.AlbertQuestionAnswerer;
import org.albertedge.core.Encoding;
import org.albertedge.core.EntityExtractor;
import org.albertedge.core.ModelPack;
import org.albertedge.core.Preprocessor;
import org.albertedge.core.QuestionAnswerer;
import org.albertedge.core.Scores;
import org.albertedge.core.TokenizerDigest;
import org.albertedge.core.WindowBenchmark;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;
import org.junit.runner.RunWith;

/**
 * On the phone, with its own ICU and LiteRT: the packed model in assets tokenizes the golden
 * inputs exactly as Python did and gives Python's logits and labels.
 *
 * <p>The goldens come from {@code albert-edge android-assets MODEL app/src/main/assets}, so they
 * are specific to the model that was copied in. Logits are compared with a tolerance: the
 * phone's kernels (ARM, XNNPACK) round differently from the desktop's, and quantized kernels
 * (int8 GEMMs) more so. Labels must agree wherever the desktop's top two are not a near tie.
 * A token-classification model is checked on golden_ner.jsonl instead: the same tokens and
 * offsets, window logits within the tolerance, and the same entities wherever no token's top two
 * labels are a near tie. A question-answering model is checked on golden_qa.jsonl: the same
 * question ids, context tokens and offsets, window inputs, start/end logits within the tolerance,
 * and (for a float model, where no span flips within 1e-3) the same answer and offsets.
 */
@RunWith(AndroidJUnit4.class)
public class GoldenOnDeviceTest {
    private static final double FLOAT_LOGIT_TOLERANCE = 1e-3;
    private static final double QUANTIZED_LOGIT_TOLERANCE = 5e-2;
    private static final double NEAR_TIE = 0.02;
    private AlbertClassifier classifier;
    private AlbertEntityRecognizer recognizer;
    private AlbertQuestionAnswerer answerer;
    private ModelPack pack;
    private Preprocessor preprocessor;
    private Context context;

    @Before
    public void load() throws IOException {
        context = InstrumentationRegistry.getInstrumentation().getTargetContext();
        ModelAssets assets = ModelAssets.open(context);
        pack = assets.pack;
        preprocessor = pack.preprocessor();
        if (ModelPack.TOKEN_CLASSIFICATION.equals(pack.task)) {
            recognizer = assets.recognizer(2);
        } else if (ModelPack.QUESTION_ANSWERING.equals(pack.task)) {
            answerer = assets.answerer(2);
        } else {
            classifier = assets.classifier(2);
        }
    }

    @After
    public void close() {
        if (classifier != null) {
            classifier.close();
        }
        if (recognizer != null) {
            recognizer.close();
        }
        if (answerer != null) {
            answerer.close();
        }
    }

    private String text(String asset) throws IOException {
        InputStream in = context.getAssets().open(asset);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[1 << 16];
        int n;
        while ((n = in.read(buf)) > 0) {
            out.write(buf, 0, n);
        }
        in.close();
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    private List<JSONObject> golden(String asset) throws IOException, JSONException {
        List<JSONObject> lines = new ArrayList<JSONObject>();
        for (String line : text(asset).split("\n")) {
            if (!line.isEmpty()) {
                lines.add(new JSONObject(line));
            }
        }
        return lines;
    }

    private static int[] ints(JSONArray a) throws JSONException {
        int[] out = new int[a.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.getInt(i);
        }
        return out;
    }

    @Test
    public void tokenizationMatchesPythonGoldens() throws Exception {
        Preprocessor pre = preprocessor;
        List<JSONObject> lines = golden("golden_tokenization.jsonl");
        assertFalse(lines.isEmpty());
        for (JSONObject g : lines) {
            String b = g.isNull("text_b") ? null : g.getString("text_b");
            if (g.has("error")) {
                try {
                    pre.encode(g.getString("text_a"), b);
                } catch (AlbertCoreException expected) {
                    continue;
                }
                throw new AssertionError("encoded an input Python refuses: " + g.getString("text_a"));
            }
            Encoding enc = pre.encode(g.getString("text_a"), b);
            assertArrayEquals(g.getString("text_a"), ints(g.getJSONArray("input_ids")), enc.inputIds);
            assertArrayEquals(g.getString("text_a"), ints(g.getJSONArray("token_type_ids")), enc.tokenTypeIds);
            assertArrayEquals(g.getString("text_a"), ints(g.getJSONArray("attention_mask")), enc.attentionMask);
            assertEquals(g.getString("text_a"), g.getBoolean("truncated"), enc.truncated);
        }
    }

    /** The phone's own Normalizer (ICU) and the tables, over all of Unicode: the check the JVM cannot make. */
    @Test
    public void everyCodePointTokenizesAsInPythonOnThisPhone() throws Exception {
        JSONObject golden = new JSONObject(text("golden_codepoints.json"));
        JSONArray context = golden.getJSONArray("context");
        int block = golden.getInt("block");
        JSONArray digests = golden.getJSONArray(pack.doLowerCase ? "lower" : "cased");
        List<String> differing = new ArrayList<String>();
        for (int b = 0; b < digests.length(); b++) {
            String got = TokenizerDigest.blockDigest(preprocessor.tokenizer(), context.getString(0),
                    context.getString(1), b, block);
            if (!digests.getString(b).equals(got)) {
                differing.add("U+" + Integer.toHexString(b * block) + "..U+" + Integer.toHexString((b + 1) * block - 1));
            }
        }
        assertTrue("blocks that tokenize differently from Python: " + differing, differing.isEmpty());
    }

    @Test
    public void logitsAndLabelsMatchLiteRtOnTheDesktop() throws Exception {
        assumeTrue("a token-classification or QA model has golden_ner/qa.jsonl instead", classifier != null);
        List<JSONObject> lines = golden("golden_logits.jsonl");
        assertFalse(lines.isEmpty());
        String variant = classifier.pack().variant;
        double tolerance = variant.startsWith("fp") ? FLOAT_LOGIT_TOLERANCE : QUANTIZED_LOGIT_TOLERANCE;
        for (JSONObject g : lines) {
            String b = g.isNull("text_b") ? null : g.getString("text_b");
            float[] logits = classifier.run(classifier.preprocessor().encode(g.getString("text_a"), b));
            JSONArray want = g.getJSONArray("logits");
            assertEquals(want.length(), logits.length);
            for (int i = 0; i < logits.length; i++) {
                assertEquals(g.getString("text_a"), want.getDouble(i), logits[i], tolerance);
            }
            double[] wantProbs = new double[want.length()];
            for (int i = 0; i < wantProbs.length; i++) {
                wantProbs[i] = g.getJSONArray("probs").getDouble(i);
            }
            java.util.Arrays.sort(wantProbs);
            boolean nearTie = wantProbs.length > 1
                    && wantProbs[wantProbs.length - 1] - wantProbs[wantProbs.length - 2] < NEAR_TIE;
            if (!nearTie) {
                double[] probs = Scores.softmax(logits);
                assertEquals(g.getString("text_a"), g.getString("label"),
                        classifier.pack().labels.get(Scores.argmax(probs)));
            }
        }
    }

    @Test
    public void entitiesMatchLiteRtOnTheDesktop() throws Exception {
        assumeTrue("this model's golden is golden_logits.jsonl or golden_qa.jsonl", recognizer != null);
        List<JSONObject> lines = golden("golden_ner.jsonl");
        assertFalse(lines.isEmpty());
        double tolerance = pack.variant.startsWith("fp") ? FLOAT_LOGIT_TOLERANCE : QUANTIZED_LOGIT_TOLERANCE;
        EntityExtractor extractor = recognizer.extractor();
        for (JSONObject g : lines) {
            String text = g.getString("text");
            EntityExtractor.Prepared prepared = extractor.prepare(text);
            JSONArray tokens = g.getJSONArray("tokens");
            assertEquals(text, tokens.length(), prepared.tokens.size());
            for (int i = 0; i < tokens.length(); i++) {
                JSONArray t = tokens.getJSONArray(i);
                assertEquals(text, t.getString(0), prepared.tokens.get(i).token);
                assertEquals(text, t.getInt(1), prepared.tokens.get(i).start);
                assertEquals(text, t.getInt(2), prepared.tokens.get(i).end);
            }
            JSONArray windows = g.getJSONArray("window_logits");
            assertEquals(text, windows.length(), prepared.windows.size());
            float[][][] logits = new float[windows.length()][][];
            boolean nearTie = false;
            for (int w = 0; w < logits.length; w++) {
                logits[w] = recognizer.run(prepared.windows.get(w));
                JSONArray rows = windows.getJSONArray(w);
                assertEquals(text, rows.length(), logits[w].length);
                for (int r = 0; r < rows.length(); r++) {
                    float[] want = new float[rows.getJSONArray(r).length()];
                    for (int k = 0; k < want.length; k++) {
                        want[k] = (float) rows.getJSONArray(r).getDouble(k);
                        assertEquals(text, want[k], logits[w][r][k], tolerance);
                    }
                    double[] probs = Scores.softmax(want);
                    java.util.Arrays.sort(probs);
                    nearTie |= probs.length > 1 && probs[probs.length - 1] - probs[probs.length - 2] < NEAR_TIE;
                }
            }
            if (nearTie) {
                continue;
            }
            List<EntityExtractor.Entity> got = EntityExtractor.entities(text, extractor.tag(prepared, logits));
            JSONArray want = g.getJSONArray("entities");
            assertEquals(text, want.length(), got.size());
            for (int i = 0; i < got.size(); i++) {
                assertEquals(text, want.getJSONObject(i).getString("label"), got.get(i).label);
                assertEquals(text, want.getJSONObject(i).getInt("start"), got.get(i).start);
                assertEquals(text, want.getJSONObject(i).getInt("end"), got.get(i).end);
                assertEquals(text, want.getJSONObject(i).getString("text"), got.get(i).text);
            }
        }
    }

    @Test
    public void answersMatchLiteRtOnTheDesktop() throws Exception {
        assumeTrue("this model's golden is golden_logits.jsonl or golden_ner.jsonl", answerer != null);
        List<JSONObject> lines = golden("golden_qa.jsonl");
        assertFalse(lines.isEmpty());
        boolean floatModel = pack.variant.startsWith("fp");
        double tolerance = floatModel ? FLOAT_LOGIT_TOLERANCE : QUANTIZED_LOGIT_TOLERANCE;
        QuestionAnswerer qa = answerer.answerer();
        for (JSONObject g : lines) {
            String where = g.getString("question") + " / " + g.getString("context");
            QuestionAnswerer.Prepared prepared = qa.prepare(g.getString("question"), g.getString("context"));
            assertArrayEquals(where, ints(g.getJSONArray("question_ids")), prepared.questionIds);
            JSONArray tokens = g.getJSONArray("tokens");
            assertEquals(where, tokens.length(), prepared.tokens.size());
            for (int i = 0; i < tokens.length(); i++) {
                JSONArray t = tokens.getJSONArray(i);
                assertEquals(where, t.getString(0), prepared.tokens.get(i).token);
                assertEquals(where, t.getInt(1), prepared.tokens.get(i).start);
                assertEquals(where, t.getInt(2), prepared.tokens.get(i).end);
            }
            JSONArray windows = g.getJSONArray("windows");
            assertEquals(where, windows.length(), prepared.encodings.size());
            List<float[]> starts = new ArrayList<float[]>();
            List<float[]> ends = new ArrayList<float[]>();
            for (int w = 0; w < windows.length(); w++) {
                assertArrayEquals(where, ints(windows.getJSONObject(w).getJSONArray("input_ids")),
                        prepared.encodings.get(w).inputIds);
                float[][] out = answerer.run(prepared.encodings.get(w));
                JSONArray wantStart = g.getJSONArray("start_logits").getJSONArray(w);
                JSONArray wantEnd = g.getJSONArray("end_logits").getJSONArray(w);
                for (int k = 0; k < out[0].length; k++) {
                    assertEquals(where, wantStart.getDouble(k), out[0][k], tolerance);
                    assertEquals(where, wantEnd.getDouble(k), out[1][k], tolerance);
                }
                starts.add(out[0]);
                ends.add(out[1]);
            }
            if (!floatModel) {
                continue;  // int8 kernels may move a close second span ahead; the logits are checked above
            }
            QuestionAnswerer.Answer a = qa.answer(prepared, starts, ends);
            assertEquals(where, g.getString("answer"), a.text);
            assertEquals(where, g.getInt("start"), a.start);
            assertEquals(where, g.getInt("end"), a.end);
        }
    }

    @Test
    public void benchmarkReportsPositiveLatencies() {
        if (answerer != null) {
            WindowBenchmark bench = answerer.benchmark("Which city is Grace Lee linked to?",
                    "Grace Lee moved to Berlin last year.", 5, 2);
            assertEquals(5, bench.inference.count());
            assertTrue(bench.inference.p50() > 0.0);
            return;
        }
        if (recognizer != null) {
            WindowBenchmark bench = recognizer.benchmark("Alice Smith moved to Paris last year.", 5, 2);
            assertEquals(5, bench.inference.count());
            assertTrue(bench.inference.p50() > 0.0);
            return;
        }
        AlbertClassifier.Benchmark bench = classifier.benchmark("这本书写得很好，值得一读。", 5, 2);
        assertEquals(5, bench.inference.count());
        assertTrue(bench.inference.p50() > 0.0);
        assertTrue(bench.inference.p90() >= bench.inference.p50());
    }
}
