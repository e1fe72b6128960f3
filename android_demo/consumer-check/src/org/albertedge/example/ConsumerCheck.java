package org.albertedge.example;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertClassifier;
import org.albertedge.core.InferenceEngine;
import org.albertedge.core.ModelPack;
import org.albertedge.core.TokenSpan;

/**
 * A consumer of the published albert-core jar, outside its package: ci-check.sh compiles this
 * against the jar it resolved from the local Maven repository by its coordinates, with nothing else
 * of albert-core on the class path, and runs it. It uses only the public API an app uses: read a
 * pack, implement {@link InferenceEngine} (here with fixed logits instead of a runtime), classify,
 * tokenize with offsets. Prints one line and exits non-zero if anything is off.
 */
public final class ConsumerCheck {
    private ConsumerCheck() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: ConsumerCheck PACKED_CLASSIFIER.tflite");
            System.exit(2);
        }
        ModelPack pack;
        try (InputStream in = new FileInputStream(args[0])) {
            pack = ModelPack.read(in, 64L << 20, args[0]);
        }
        final List<String> inputs = pack.inputs;
        final int labels = pack.labels.size();
        InferenceEngine engine = new InferenceEngine() {
            @Override
            public List<String> inputNames() {
                return inputs;
            }

            @Override
            public List<String> outputNames() {
                return Collections.singletonList("logits");
            }

            @Override
            public Map<String, float[]> run(Map<String, int[]> feed, List<String> outputs) {
                float[] logits = new float[labels];
                logits[labels - 1] = 2.0f;
                Map<String, float[]> out = new HashMap<String, float[]>();
                out.put("logits", logits);
                return out;
            }
        };
        String label;
        try (AlbertClassifier classifier = new AlbertClassifier(pack, engine)) {
            label = classifier.classify("这本书写得很好").ranked.get(0).label;
        }
        List<TokenSpan> spans = pack.tokenizer().tokenizeWithOffsets("Hi 你好");
        StringBuilder shown = new StringBuilder();
        for (TokenSpan s : spans) {
            shown.append(s.token).append('[').append(s.start).append(',').append(s.end).append(") ");
        }
        String expectedLabel = pack.labels.get(labels - 1);
        if (!expectedLabel.equals(label) || spans.size() != 3 || spans.get(2).start != 4) {
            System.err.println("consumer check FAILED: label " + label + " (expected " + expectedLabel + "), tokens "
                    + shown);
            System.exit(1);
        }
        System.out.println("consumer check OK: label " + label + ", tokens " + shown.toString().trim());
    }
}
