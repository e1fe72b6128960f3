package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipEntry;

import org.junit.jupiter.api.Test;

/**
 * Embeddings through {@link InferenceEngine}: feature-extraction packs built here with each
 * {@code task_config}, an engine returning known hidden states, and each pooling worked out by hand.
 *
 * <p>"hello" is {@code [CLS] hello [SEP]} (ids 2, 4, 3); the engine's {@code last_hidden_state}
 * rows are (1, 2), (3, -4), (5, 0). By hand: cls = (1, 2); mean = (9/3, -2/3) = (3, -0.6667);
 * max = (5, 2); mean normalised = (3, -2/3) / sqrt(85/9) = (9, -2) / sqrt(85) = (0.97618706, -0.21693046).
 */
class AlbertEmbedderTest {
    private static final String VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";
    private static final float[] HIDDEN = {1f, 2f, 3f, -4f, 5f, 0f};
    private static final List<String> INPUTS = Arrays.asList("input_ids", "attention_mask", "token_type_ids");

    private static ModelPack pack(String taskConfig, String outputs) throws Exception {
        String settings = "{\"pack_format\": 1, \"task\": \"feature_extraction\", \"tokenizer\": {\"type\": \"wordpiece\","
                + " \"file\": \"vocab.txt\", \"do_lower_case\": true, \"max_seq_len\": 16},"
                + " \"inputs\": [\"input_ids\", \"attention_mask\", \"token_type_ids\"], \"outputs\": " + outputs
                + (taskConfig == null ? "" : ", \"task_config\": " + taskConfig) + "}";
        Map<String, byte[]> members = new LinkedHashMap<String, byte[]>();
        members.put("albert_edge.json", settings.getBytes(StandardCharsets.UTF_8));
        members.put("vocab.txt", VOCAB.getBytes(StandardCharsets.UTF_8));
        return ModelPack.read(PackReaderTest.packed(members, ZipEntry.STORED), "embed.tflite");
    }

    private static float[] embed(String taskConfig) throws Exception {
        ReplayEngine engine = ReplayEngine.constant(INPUTS, "last_hidden_state", HIDDEN);
        AlbertEmbedder embedder = new AlbertEmbedder(pack(taskConfig, "[\"last_hidden_state\"]"), engine);
        AlbertEmbedder.Result r = embedder.embed("Hello");
        assertArrayEquals(new int[] {2, 4, 3}, engine.runs.get(0).get("input_ids"));
        assertArrayEquals(new int[] {2, 4, 3}, r.encoding.inputIds);
        return r.embedding;
    }

    @Test
    void poolsAsTheTaskConfigSays() throws Exception {
        assertArrayEquals(new float[] {1f, 2f}, embed("{\"pooling\": \"cls\", \"pooling_in_graph\": false}"));
        assertArrayEquals(new float[] {3f, (float) (-2.0 / 3.0)},
                embed("{\"pooling\": \"mean\", \"pooling_in_graph\": false}"));
        assertArrayEquals(new float[] {5f, 2f}, embed("{\"pooling\": \"max\", \"pooling_in_graph\": false}"));
        assertArrayEquals(new float[] {0.97618706f, -0.21693046f},
                embed("{\"pooling\": \"mean\", \"normalize\": true, \"pooling_in_graph\": false}"), 1e-7f);
    }

    @Test
    void aPackWithoutPoolingSettingsIsMeanPooled() throws Exception {
        assertArrayEquals(new float[] {3f, (float) (-2.0 / 3.0)}, embed(null));
        assertArrayEquals(new float[] {3f, (float) (-2.0 / 3.0)}, embed("{\"pooling\": \"none\"}"));
    }

    @Test
    void anInGraphEmbeddingIsTakenAsTheGraphGivesIt() throws Exception {
        ReplayEngine engine = ReplayEngine.constant(INPUTS, "sentence_embedding", 0.6f, 0.8f, 0f);
        AlbertEmbedder embedder = new AlbertEmbedder(pack("{\"pooling\": \"max\", \"normalize\": true}",
                "[\"sentence_embedding\"]"), engine);
        assertEquals("max", embedder.pooling());
        assertTrue(embedder.normalized());
        assertArrayEquals(new float[] {0.6f, 0.8f, 0f}, embedder.embed("hello").embedding);
        assertEquals(Collections.singletonList("sentence_embedding"), engine.requested.get(0));
    }

    @Test
    void maskedPositionsDoNotCount() {
        // Two real rows and one padding row: mean (2, -1), max (3, 2); the padding's 100s never win.
        float[] hidden = {1f, 2f, 3f, -4f, 100f, 100f};
        int[] mask = {1, 1, 0};
        assertArrayEquals(new double[] {2.0, -1.0}, Pooling.pool(hidden, mask, 2, Pooling.MEAN), 0.0);
        assertArrayEquals(new double[] {3.0, 2.0}, Pooling.pool(hidden, mask, 2, Pooling.MAX), 0.0);
        assertArrayEquals(new double[] {0.0, 0.0}, Pooling.l2Normalize(new double[] {0.0, 0.0}), 0.0);
        assertEquals(1.0, AlbertEmbedder.cosine(new float[] {1f, 2f}, new float[] {2f, 4f}), 1e-12);
        assertEquals(0.0, AlbertEmbedder.cosine(new float[] {1f, 0f}, new float[] {0f, 3f}), 1e-12);
    }

    @Test
    void badSettingsOtherTasksAndEmptyTextAreRefused() throws Exception {
        ReplayEngine engine = ReplayEngine.constant(INPUTS, "last_hidden_state", HIDDEN);
        String message = assertThrows(AlbertCoreException.class,
                () -> new AlbertEmbedder(pack("{\"pooling\": \"sum\"}", "[\"last_hidden_state\"]"), engine)).getMessage();
        assertTrue(message.startsWith("embed.tflite: pack task_config pooling sum"), message);
        assertTrue(engine.closed);
        assertThrows(AlbertCoreException.class, () -> new AlbertEmbedder(
                pack("{\"pooling\": \"none\", \"normalize\": true}", "[\"last_hidden_state\"]"), engine));
        message = assertThrows(AlbertCoreException.class, () -> pack("[\"mean\"]", "[\"last_hidden_state\"]"))
                .getMessage();
        assertEquals("embed.tflite: pack task_config is [\"mean\"], expected a JSON object", message);
        message = assertThrows(AlbertCoreException.class,
                () -> new AlbertEmbedder(Resources.pack("pack_fixture.tflite"), engine)).getMessage();
        assertTrue(message.contains("embeddings need a feature_extraction model"), message);

        AlbertEmbedder embedder = new AlbertEmbedder(pack(null, "[\"last_hidden_state\"]"),
                ReplayEngine.constant(INPUTS, "last_hidden_state", HIDDEN));
        assertEquals("text: text is empty", assertThrows(AlbertCoreException.class, () -> embedder.embed(" \u3000\n"))
                .getMessage());
        AlbertEmbedder ragged = new AlbertEmbedder(pack(null, "[\"last_hidden_state\"]"),
                ReplayEngine.constant(INPUTS, "last_hidden_state", 1f, 2f, 3f, 4f));
        assertTrue(assertThrows(AlbertCoreException.class, () -> ragged.embed("hello")).getMessage()
                .contains("not [3, hidden]"));
    }
}
