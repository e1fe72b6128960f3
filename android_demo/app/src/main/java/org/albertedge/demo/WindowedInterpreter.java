package org.albertedge.demo;

import java.io.Closeable;
import java.nio.MappedByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.albertedge.core.AlbertCoreException;
import org.albertedge.core.Encoding;
import org.albertedge.core.ModelPack;
import org.tensorflow.lite.Interpreter;

/**
 * The LiteRT side of the windowed tasks (NER, QA): one {@link Interpreter} whose
 * {@code serving_default} signature takes exactly the pack's inputs, fed one {@link Encoding}
 * window at a time at its real length.
 *
 * <p>Kept in one place so that {@link AlbertEntityRecognizer} and {@link AlbertQuestionAnswerer}
 * check the signature and build the feed the same way; each checks its own outputs (their names
 * and error messages differ) and allocates its own output arrays.
 */
final class WindowedInterpreter implements Closeable {
    private final Interpreter interpreter;
    private final List<String> feeds;
    /** The signature's output names, for the caller's own check. */
    final List<String> outputs;

    /**
     * Builds the interpreter with {@code threads} threads and checks the signature's inputs against
     * {@code pack.inputs}; closes the interpreter before throwing {@link AlbertCoreException}.
     */
    WindowedInterpreter(MappedByteBuffer model, String source, int threads, ModelPack pack) {
        Interpreter.Options options = new Interpreter.Options();
        options.setNumThreads(threads);
        this.interpreter = new Interpreter(model, options);
        String signature = AlbertClassifier.SIGNATURE;
        if (!Arrays.asList(interpreter.getSignatureKeys()).contains(signature)) {
            close();
            throw new AlbertCoreException(source + ": model has no '" + signature + "' signature (signatures: "
                    + Arrays.toString(interpreter.getSignatureKeys()) + ")");
        }
        List<String> inputs = Arrays.asList(interpreter.getSignatureInputs(signature));
        if (!inputs.containsAll(pack.inputs) || !pack.inputs.containsAll(inputs)) {
            close();
            throw new AlbertCoreException(source + ": signature inputs " + inputs + " differ from the pack's "
                    + pack.inputs);
        }
        this.outputs = Arrays.asList(interpreter.getSignatureOutputs(signature));
        this.feeds = pack.inputs;
    }

    /** Runs {@code window} through the signature, filling the caller's {@code outputs} arrays. */
    void run(Encoding window, Map<String, Object> outputs) {
        Map<String, Object> inputs = new HashMap<String, Object>();
        for (String name : feeds) {
            inputs.put(name, window.input(name));
        }
        interpreter.runSignature(inputs, outputs, AlbertClassifier.SIGNATURE);
    }

    @Override
    public void close() {
        interpreter.close();
    }
}
