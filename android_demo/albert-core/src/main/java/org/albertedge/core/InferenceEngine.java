package org.albertedge.core;

import java.io.Closeable;
import java.util.List;
import java.util.Map;

/**
 * The one thing albert-core cannot do on its own: run the model. Everything around it (tokenizing,
 * windows, softmax, entity and answer decoding, pooling) is in the task classes, so an app supplies
 * only this: a LiteRT {@code Interpreter} (the demo app's {@code LiteRtEngine}), ONNX Runtime, or a
 * test that replays recorded logits.
 *
 * <p>The contract is one example at a time, at its real length, no padding: every input is int32
 * {@code [1, length]} given as its {@code length} values, bound <b>by name</b> (converters order
 * tensors arbitrarily, so position must never be used); every output comes back as float32 values
 * flattened row-major ({@code [1, labels]} as {@code labels} values, {@code [1, length, labels]} as
 * {@code length * labels}). The task class checks each output's size, so an engine need not know
 * the shapes.
 */
public interface InferenceEngine extends Closeable {
    /** The model's input names (for a .tflite, its {@code serving_default} signature's). */
    List<String> inputNames();

    /** The model's output names. */
    List<String> outputNames();

    /**
     * Runs one example: {@code inputs} maps each input name to its {@code [length]} ids (all the
     * same length); returns each name in {@code outputs} mapped to its values, flattened row-major.
     */
    Map<String, float[]> run(Map<String, int[]> inputs, List<String> outputs);

    /**
     * The runtime's own timing of the last {@link #run} without the copies around it (LiteRT's
     * native invoke), in nanoseconds; negative when the runtime does not measure it.
     */
    default long lastRunNanos() {
        return -1;
    }

    /** Frees the runtime; the task classes call it from their own close(). */
    @Override
    default void close() {
    }
}
