package org.albertedge.demo;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.InferenceEngine;
import org.tensorflow.lite.DataType;
import org.tensorflow.lite.Interpreter;
import org.tensorflow.lite.Tensor;

/**
 * albert-core's {@link InferenceEngine} on LiteRT: one {@link Interpreter} whose
 * {@code serving_default} signature is fed one example at a time at its real length, inputs bound
 * by name. The only class of the app that touches the runtime; the task logic (tokenizing,
 * windows, decoding) is albert-core's.
 *
 * <p>Outputs are read after the run from the signature's output tensors
 * ({@link Tensor#asReadOnlyBuffer}), so their shapes need not be known in advance: the export's
 * sequence dimension is dynamic, and LiteRT resizes the outputs with the inputs.
 */
final class LiteRtEngine implements InferenceEngine {
    static final String SIGNATURE = "serving_default";

    private final Interpreter interpreter;
    private final List<String> inputs;
    private final List<String> outputs;

    /**
     * Builds the interpreter with {@code threads} threads over {@code model} (e.g. a memory-mapped
     * asset) and checks it has the {@code serving_default} signature; closes it before throwing.
     */
    LiteRtEngine(MappedByteBuffer model, String source, int threads) {
        Interpreter.Options options = new Interpreter.Options();
        options.setNumThreads(threads);
        this.interpreter = new Interpreter(model, options);
        if (!Arrays.asList(interpreter.getSignatureKeys()).contains(SIGNATURE)) {
            String keys = Arrays.toString(interpreter.getSignatureKeys());
            close();
            throw new AlbertCoreException(source + ": model has no '" + SIGNATURE + "' signature (signatures: "
                    + keys + ")");
        }
        this.inputs = Arrays.asList(interpreter.getSignatureInputs(SIGNATURE));
        this.outputs = Arrays.asList(interpreter.getSignatureOutputs(SIGNATURE));
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
    public Map<String, float[]> run(Map<String, int[]> ids, List<String> wanted) {
        Map<String, Object> feeds = new HashMap<String, Object>();
        for (Map.Entry<String, int[]> e : ids.entrySet()) {
            feeds.put(e.getKey(), new int[][] {e.getValue()});
        }
        // Null placeholders: nothing is copied during the run; each output is read below at the
        // shape the run gave it.
        Map<String, Object> placeholders = new HashMap<String, Object>();
        for (String name : wanted) {
            placeholders.put(name, null);
        }
        interpreter.runSignature(feeds, placeholders, SIGNATURE);
        Map<String, float[]> out = new HashMap<String, float[]>();
        for (String name : wanted) {
            Tensor tensor = interpreter.getOutputTensorFromSignature(name, SIGNATURE);
            if (tensor.dataType() != DataType.FLOAT32) {
                throw new AlbertCoreException("output '" + name + "' is " + tensor.dataType() + ", expected FLOAT32");
            }
            FloatBuffer values = tensor.asReadOnlyBuffer().order(ByteOrder.nativeOrder()).asFloatBuffer();
            float[] flat = new float[values.remaining()];
            values.get(flat);
            out.put(name, flat);
        }
        return out;
    }

    /** LiteRT's own measurement of the last native invoke, without the Java-side copies. */
    @Override
    public long lastRunNanos() {
        Long nanos = interpreter.getLastNativeInferenceDurationNanoseconds();
        return nanos == null ? -1 : nanos;
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
