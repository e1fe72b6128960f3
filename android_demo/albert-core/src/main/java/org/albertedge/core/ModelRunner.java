package org.albertedge.core;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * An {@link InferenceEngine} checked against a pack: its inputs are exactly the pack's, it has the
 * outputs a task reads, and each output has the size the task expects. Kept in one place so that
 * every task checks and feeds the model the same way and says the same thing when a file is wrong.
 */
final class ModelRunner {
    private final InferenceEngine engine;
    private final List<String> feeds;
    private final List<String> outputs;
    private final String source;

    /**
     * Checks {@code engine} against {@code pack}: its inputs equal {@code pack.inputs} and it has every
     * name in {@code outputs}. Closes the engine before throwing {@link AlbertCoreException}, so a
     * caller whose constructor fails leaks no native runtime.
     */
    ModelRunner(InferenceEngine engine, ModelPack pack, String... outputs) {
        this.engine = engine;
        this.source = pack.source();
        this.feeds = pack.inputs;
        this.outputs = Arrays.asList(outputs);
        List<String> inputs = engine.inputNames();
        if (!inputs.containsAll(pack.inputs) || !pack.inputs.containsAll(inputs)) {
            engine.close();
            throw new AlbertCoreException(source + ": signature inputs " + inputs + " differ from the pack's "
                    + pack.inputs);
        }
        List<String> have = engine.outputNames();
        if (outputs.length == 1 && !have.contains(outputs[0])) {
            engine.close();
            throw new AlbertCoreException(source + ": signature has no '" + outputs[0] + "' output");
        }
        if (!have.containsAll(this.outputs)) {
            engine.close();
            throw new AlbertCoreException(source + ": signature outputs " + have + " lack "
                    + String.join("/", this.outputs));
        }
    }

    InferenceEngine engine() {
        return engine;
    }

    /** The wanted outputs of one encoding, each checked to hold {@code sizes[i]} values (-1: any). */
    Map<String, float[]> run(Encoding encoding, int... sizes) {
        Map<String, int[]> inputs = new HashMap<String, int[]>();
        for (String name : feeds) {
            inputs.put(name, encoding.input(name)[0]);
        }
        Map<String, float[]> got = engine.run(inputs, outputs);
        for (int i = 0; i < outputs.size(); i++) {
            String name = outputs.get(i);
            float[] values = got == null ? null : got.get(name);
            if (values == null) {
                throw new AlbertCoreException(source + ": the engine returned no '" + name + "' output");
            }
            if (sizes[i] >= 0 && values.length != sizes[i]) {
                throw new AlbertCoreException(source + ": output '" + name + "' has " + values.length
                        + " values, expected " + sizes[i]);
            }
        }
        return got;
    }

    void close() {
        engine.close();
    }
}
