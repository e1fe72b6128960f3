package org.albertedge.core;

/**
 * Latency samples of a benchmark run of a windowed task (NER, QA), in milliseconds.
 *
 * <p>One class for both tasks so that the timing loop and the on-screen report are written once.
 */
public final class WindowBenchmark {
    public final LatencyStats tokenize;
    public final LatencyStats inference;
    public final LatencyStats decode;
    public final int tokens;
    public final int windows;

    WindowBenchmark(LatencyStats tokenize, LatencyStats inference, LatencyStats decode, int tokens, int windows) {
        this.tokenize = tokenize;
        this.inference = inference;
        this.decode = decode;
        this.tokens = tokens;
        this.windows = windows;
    }

    /** One timed pass of a task: its three phases and how the text was cut. */
    static final class Pass {
        final double tokenizeMs;
        final double inferenceMs;
        final double decodeMs;
        final int tokens;
        final int windows;

        Pass(double tokenizeMs, double inferenceMs, double decodeMs, int tokens, int windows) {
            this.tokenizeMs = tokenizeMs;
            this.inferenceMs = inferenceMs;
            this.decodeMs = decodeMs;
            this.tokens = tokens;
            this.windows = windows;
        }
    }

    /** Runs the task once on fixed input (a lambda in each task's {@code benchmark}). */
    interface Task {
        Pass once();
    }

    /** {@code runs} timed passes of {@code task} after {@code warmup} untimed ones. */
    static WindowBenchmark measure(Task task, int runs, int warmup) {
        if (runs < 1) {
            throw new AlbertCoreException("runs: expected at least 1, got " + runs);
        }
        for (int i = 0; i < warmup; i++) {
            task.once();
        }
        double[] tokenize = new double[runs];
        double[] inference = new double[runs];
        double[] decode = new double[runs];
        Pass last = null;
        for (int i = 0; i < runs; i++) {
            last = task.once();
            tokenize[i] = last.tokenizeMs;
            inference[i] = last.inferenceMs;
            decode[i] = last.decodeMs;
        }
        return new WindowBenchmark(new LatencyStats(tokenize), new LatencyStats(inference), new LatencyStats(decode),
                last.tokens, last.windows);
    }
}
