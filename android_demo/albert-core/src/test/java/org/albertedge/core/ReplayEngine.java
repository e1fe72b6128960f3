package org.albertedge.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A test {@link InferenceEngine}: answers each run from {@code answers} (recorded logits or
 * hand-made hidden states) and keeps every run's inputs, so a test sees what the task fed the model.
 */
final class ReplayEngine implements InferenceEngine {
    /** The outputs of one run, computed from its inputs (by name, each [length]). */
    interface Answers {
        Map<String, float[]> of(Map<String, int[]> inputs, int call);
    }

    private final List<String> inputs;
    private final List<String> outputs;
    private final Answers answers;
    final List<Map<String, int[]>> runs = new ArrayList<Map<String, int[]>>();
    final List<List<String>> requested = new ArrayList<List<String>>();
    long nanos = -1;
    boolean closed;

    ReplayEngine(List<String> inputs, List<String> outputs, Answers answers) {
        this.inputs = Collections.unmodifiableList(new ArrayList<String>(inputs));
        this.outputs = Collections.unmodifiableList(new ArrayList<String>(outputs));
        this.answers = answers;
    }

    /** One output, the same for every run. */
    static ReplayEngine constant(List<String> inputs, String output, float... values) {
        return new ReplayEngine(inputs, Collections.singletonList(output), (in, call) -> one(output, values));
    }

    static Map<String, float[]> one(String name, float[] values) {
        Map<String, float[]> out = new HashMap<String, float[]>();
        out.put(name, values.clone());
        return out;
    }

    @Override
    public List<String> inputNames() {
        return inputs;
    }

    @Override
    public List<String> outputNames() {
        return outputs;
    }

    @Override
    public Map<String, float[]> run(Map<String, int[]> in, List<String> wanted) {
        if (closed) {
            throw new IllegalStateException("run after close");
        }
        runs.add(in);
        requested.add(wanted);
        return answers.of(in, runs.size() - 1);
    }

    @Override
    public long lastRunNanos() {
        return nanos;
    }

    @Override
    public void close() {
        closed = true;
    }
}
