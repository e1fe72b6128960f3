package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Classification through {@link InferenceEngine}: the pack of a real model file (pack_fixture.tflite,
 * bert-base-chinese vocab, labels negative/positive), an engine whose logits are known, and the
 * softmax and ranking worked out by hand.
 */
class AlbertClassifierTest {
    private static ModelPack pack;

    @BeforeAll
    static void load() throws Exception {
        pack = Resources.pack("pack_fixture.tflite");
    }

    @Test
    void feedsThePacksInputsByNameAndRanksTheEnginesLogits() {
        ReplayEngine engine = ReplayEngine.constant(pack.inputs, "logits", 1.0f, 3.0f);
        AlbertClassifier classifier = new AlbertClassifier(pack, engine);
        AlbertClassifier.Result r = classifier.classify("这本书写得很好");

        assertEquals(1, engine.runs.size());
        Map<String, int[]> fed = engine.runs.get(0);
        assertEquals(new java.util.HashSet<String>(pack.inputs), fed.keySet());
        Encoding expected = pack.preprocessor().encode("这本书写得很好");
        assertArrayEquals(expected.inputIds, fed.get("input_ids"));
        assertArrayEquals(expected.attentionMask, fed.get("attention_mask"));
        assertArrayEquals(expected.tokenTypeIds, fed.get("token_type_ids"));
        assertEquals(9, fed.get("input_ids").length, "[CLS] + 7 characters + [SEP], unpadded");
        assertEquals(Collections.singletonList("logits"), engine.requested.get(0));

        // softmax(1, 3) = (1 / (1 + e^2), e^2 / (1 + e^2)) = (0.11920292202211755, 0.8807970779778823)
        assertEquals(2, r.ranked.size());
        assertEquals("positive", r.ranked.get(0).label);
        assertEquals(1, r.ranked.get(0).index);
        assertEquals(0.8807970779778823, r.ranked.get(0).probability, 1e-15);
        assertEquals("negative", r.ranked.get(1).label);
        assertEquals(0.11920292202211755, r.ranked.get(1).probability, 1e-15);
        assertArrayEquals(new float[] {1.0f, 3.0f}, r.logits);
        assertTrue(r.tokenizeMs >= 0.0 && r.inferenceMs >= 0.0);
        classifier.close();
        assertTrue(engine.closed);
    }

    @Test
    void benchmarkUsesTheEnginesOwnTimingWhenItHasOne() {
        ReplayEngine engine = ReplayEngine.constant(pack.inputs, "logits", 0.0f, 0.0f);
        engine.nanos = 2_500_000L;
        AlbertClassifier.Benchmark b = new AlbertClassifier(pack, engine).benchmark("好", 4, 2);
        assertEquals(6, engine.runs.size(), "2 warm-up + 4 timed runs");
        assertEquals(4, b.inference.count());
        assertEquals(2.5, b.nativeInvoke.p50(), 1e-12);
        assertEquals(3, b.sequenceLength);

        ReplayEngine unmeasured = ReplayEngine.constant(pack.inputs, "logits", 0.0f, 0.0f);
        AlbertClassifier.Benchmark w = new AlbertClassifier(pack, unmeasured).benchmark("好", 3, 0);
        assertEquals(w.inference.p50(), w.nativeInvoke.p50(), 0.0, "no native timing: the wall time stands in");
    }

    @Test
    void anEngineThatDoesNotFitThePackIsRefusedAndClosed() throws Exception {
        ReplayEngine missingInput = ReplayEngine.constant(Arrays.asList("input_ids", "attention_mask"), "logits", 0f, 0f);
        String message = assertThrows(AlbertCoreException.class, () -> new AlbertClassifier(pack, missingInput))
                .getMessage();
        assertTrue(message.contains("signature inputs [input_ids, attention_mask] differ from the pack's"), message);
        assertTrue(missingInput.closed);

        ReplayEngine noLogits = ReplayEngine.constant(pack.inputs, "probabilities", 0f, 0f);
        message = assertThrows(AlbertCoreException.class, () -> new AlbertClassifier(pack, noLogits)).getMessage();
        assertEquals("pack_fixture.tflite: signature has no 'logits' output", message);
        assertTrue(noLogits.closed);

        ReplayEngine forNer = ReplayEngine.constant(pack.inputs, "logits", 0f, 0f);
        message = assertThrows(AlbertCoreException.class,
                () -> new AlbertClassifier(Resources.pack("ner_model.tflite"), forNer)).getMessage();
        assertEquals("ner_model.tflite: pack task is 'token_classification'; a classifier needs a "
                + "sequence_classification model with labels", message);
        assertTrue(forNer.closed);
    }

    @Test
    void logitsOfTheWrongWidthAreRefused() {
        AlbertClassifier classifier = new AlbertClassifier(pack, ReplayEngine.constant(pack.inputs, "logits", 1f, 2f, 3f));
        String message = assertThrows(AlbertCoreException.class, () -> classifier.classify("好")).getMessage();
        assertEquals("pack_fixture.tflite: output 'logits' has 3 values, expected 2", message);

        ReplayEngine silent = new ReplayEngine(pack.inputs, Collections.singletonList("logits"),
                (in, call) -> new HashMap<String, float[]>());
        message = assertThrows(AlbertCoreException.class, () -> new AlbertClassifier(pack, silent).classify("好"))
                .getMessage();
        assertEquals("pack_fixture.tflite: the engine returned no 'logits' output", message);
        assertFalse(silent.closed);
    }
}
