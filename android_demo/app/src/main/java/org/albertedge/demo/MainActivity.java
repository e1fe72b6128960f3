package org.albertedge.demo;

import android.app.Activity;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.view.View;
import android.widget.Button;
import android.widget.EditText;
import android.widget.RadioGroup;
import android.widget.TextView;

import java.io.FileNotFoundException;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.albertedge.core.AlbertClassifier;
import org.albertedge.core.AlbertEntityRecognizer;
import org.albertedge.core.AlbertQuestionAnswerer;
import org.albertedge.core.EntityExtractor;
import org.albertedge.core.LatencyStats;
import org.albertedge.core.ModelPack;
import org.albertedge.core.QuestionAnswerer;
import org.albertedge.core.Scores;
import org.albertedge.core.WindowBenchmark;

/**
 * Type text, pick 1/2/4 threads, see the label, its probability and where the time went
 * (tokenization and inference apart); "Benchmark" repeats the classification N times and shows
 * p50/p90 with a text histogram. When the packed model's task is token_classification, the same
 * buttons show its entities instead: label, text and character offsets (code points, as Python's)
 * with tokenization, inference (every window) and decoding times. For a question_answering pack a
 * question field appears and the text is the context: the answer, its character offsets (code
 * points) and score, with the same timings.
 *
 * <p>All model work runs on one background thread: the interpreter is not thread-safe, and the
 * UI thread must never wait for an inference.
 */
public final class MainActivity extends Activity {
    private static final int WARMUP_RUNS = 10;
    private static final int HISTOGRAM_BINS = 8;
    private static final int HISTOGRAM_WIDTH = 24;

    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private final Handler ui = new Handler(Looper.getMainLooper());
    // Written on the worker thread, read on both.
    private volatile AlbertClassifier classifier;
    // Set instead of classifier when the pack's task is token_classification.
    private volatile AlbertEntityRecognizer recognizer;
    // Set instead of classifier when the pack's task is question_answering.
    private volatile AlbertQuestionAnswerer answerer;
    // The thread count the loaded model's interpreter was built with, for the reports.
    private volatile int loadedThreads;

    private TextView modelInfo;
    private EditText input;
    private EditText question;
    private EditText runs;
    private RadioGroup threads;
    private Button classify;
    private Button benchmark;
    private TextView result;
    private TextView latency;
    private TextView benchResult;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        setContentView(R.layout.activity_main);
        modelInfo = findViewById(R.id.model_info);
        input = findViewById(R.id.input_text);
        question = findViewById(R.id.question_text);
        runs = findViewById(R.id.runs);
        threads = findViewById(R.id.threads);
        classify = findViewById(R.id.classify);
        benchmark = findViewById(R.id.benchmark);
        result = findViewById(R.id.result);
        latency = findViewById(R.id.latency);
        benchResult = findViewById(R.id.bench_result);

        classify.setOnClickListener(v -> onClassify());
        benchmark.setOnClickListener(v -> onBenchmark());
        threads.setOnCheckedChangeListener((group, id) -> loadModel(selectedThreads()));
        loadModel(selectedThreads());
    }

    private int selectedThreads() {
        int id = threads.getCheckedRadioButtonId();
        if (id == R.id.threads_4) {
            return 4;
        }
        return id == R.id.threads_2 ? 2 : 1;
    }

    private void setBusy(boolean busy) {
        boolean loaded = classifier != null || recognizer != null || answerer != null;
        classify.setEnabled(!busy && loaded);
        benchmark.setEnabled(!busy && loaded);
        for (int i = 0; i < threads.getChildCount(); i++) {
            threads.getChildAt(i).setEnabled(!busy);
        }
    }

    /** (Re)create the interpreter: the thread count is fixed when an Interpreter is built. */
    private void loadModel(final int numThreads) {
        setBusy(true);
        modelInfo.setText(R.string.loading);
        worker.execute(() -> {
            String info;
            AlbertClassifier loaded = null;
            AlbertEntityRecognizer loadedNer = null;
            AlbertQuestionAnswerer loadedQa = null;
            try {
                if (classifier != null) {
                    classifier.close();
                    classifier = null;
                }
                if (recognizer != null) {
                    recognizer.close();
                    recognizer = null;
                }
                if (answerer != null) {
                    answerer.close();
                    answerer = null;
                }
                ModelAssets assets = ModelAssets.open(this);
                ModelPack pack = assets.pack;
                if (ModelPack.TOKEN_CLASSIFICATION.equals(pack.task)) {
                    loadedNer = assets.recognizer(numThreads);
                } else if (ModelPack.QUESTION_ANSWERING.equals(pack.task)) {
                    loadedQa = assets.answerer(numThreads);
                } else {
                    loaded = assets.classifier(numThreads);
                }
                info = String.format(Locale.ROOT, "%s · %s · %s · labels %s · max_seq_len %d · lower %b · %d thread(s)",
                        ModelAssets.MODEL_ASSET, pack.task, pack.variant, pack.labels, pack.maxSeqLen,
                        pack.doLowerCase, numThreads);
            } catch (FileNotFoundException e) {
                info = getString(R.string.no_model) + " (" + e.getMessage() + ")";
            } catch (Exception e) {
                info = "Cannot load model: " + e.getMessage();
            }
            final AlbertClassifier ready = loaded;
            final AlbertEntityRecognizer readyNer = loadedNer;
            final AlbertQuestionAnswerer readyQa = loadedQa;
            final String text = info;
            ui.post(() -> {
                classifier = ready;
                recognizer = readyNer;
                answerer = readyQa;
                loadedThreads = numThreads;
                question.setVisibility(readyQa != null ? View.VISIBLE : View.GONE);
                classify.setText(readyQa != null ? R.string.answer : R.string.classify);
                modelInfo.setText(text);
                setBusy(false);
            });
        });
    }

    private void onClassify() {
        final String text = input.getText().toString();
        setBusy(true);
        if (recognizer != null) {
            worker.execute(() -> onRecognize(text));
            return;
        }
        if (answerer != null) {
            final String asked = question.getText().toString();
            worker.execute(() -> onAnswer(asked, text));
            return;
        }
        worker.execute(() -> {
            String shown;
            String timing;
            try {
                AlbertClassifier.Result r = classifier.classify(text);
                Scores.Ranked best = r.ranked.get(0);
                shown = String.format(Locale.ROOT, "%s  %.4f", best.label, best.probability);
                StringBuilder sb = new StringBuilder();
                sb.append(String.format(Locale.ROOT, "tokens     %d%s%n", r.encoding.length(),
                        r.encoding.truncated ? " (truncated)" : ""));
                sb.append(String.format(Locale.ROOT, "tokenize   %.3f ms%n", r.tokenizeMs));
                sb.append(String.format(Locale.ROOT, "inference  %.3f ms (%d thread(s))%n", r.inferenceMs,
                        loadedThreads));
                for (Scores.Ranked k : r.ranked) {
                    sb.append(String.format(Locale.ROOT, "  %-12s %.4f%n", k.label, k.probability));
                }
                timing = sb.toString();
            } catch (RuntimeException e) {
                shown = "Error";
                timing = e.getMessage();
            }
            postResult(shown, timing, null);
        });
    }

    /** Entities of {@code text}, one per line: label, [start, end) in code points, the text, the score. */
    private void onRecognize(String text) {
        String shown;
        String timing;
        try {
            AlbertEntityRecognizer.Result r = recognizer.recognize(text);
            shown = String.format(Locale.ROOT, "%d entit%s", r.entities.size(), r.entities.size() == 1 ? "y" : "ies");
            StringBuilder sb = new StringBuilder();
            for (EntityExtractor.Entity e : r.entities) {
                sb.append(String.format(Locale.ROOT, "%-8s [%d, %d)  %s  %.3f%n", e.label, e.start, e.end, e.text,
                        e.score));
            }
            appendTimings(sb, r.tokens, r.windows, r.tokenizeMs, r.inferenceMs, loadedThreads, r.decodeMs);
            timing = sb.toString();
        } catch (RuntimeException e) {
            shown = "Error";
            timing = e.getMessage();
        }
        postResult(shown, timing, null);
    }

    /** The answer to {@code asked} in {@code context}: its text, [start, end) in code points, its score. */
    private void onAnswer(String asked, String context) {
        String shown;
        String timing;
        try {
            AlbertQuestionAnswerer.Result r = answerer.answer(asked, context);
            QuestionAnswerer.Answer a = r.answer;
            shown = a.text.isEmpty() ? getString(R.string.no_answer) : a.text;
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(Locale.ROOT, "answer     [%d, %d)  score %.3f  tokens [%d, %d]%n", a.start, a.end,
                    a.score, a.firstToken, a.lastToken));
            appendTimings(sb, r.tokens, a.windows, r.tokenizeMs, r.inferenceMs, loadedThreads, r.decodeMs);
            timing = sb.toString();
        } catch (RuntimeException e) {
            shown = "Error";
            timing = e.getMessage();
        }
        postResult(shown, timing, null);
    }

    /** The timing block shared by the windowed tasks' results (NER, QA). */
    private static void appendTimings(StringBuilder sb, int tokens, int windows, double tokenizeMs, double inferenceMs,
                                      int threads, double decodeMs) {
        sb.append(String.format(Locale.ROOT, "%ntokens     %d in %d window(s)%n", tokens, windows));
        sb.append(String.format(Locale.ROOT, "tokenize   %.3f ms%n", tokenizeMs));
        sb.append(String.format(Locale.ROOT, "inference  %.3f ms (%d thread(s))%n", inferenceMs, threads));
        sb.append(String.format(Locale.ROOT, "decode     %.3f ms%n", decodeMs));
    }

    /** The benchmark report shared by the windowed tasks (NER, QA). */
    private static String windowReport(WindowBenchmark b, int n, int threads) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%d runs, %d tokens in %d window(s), %d thread(s), %d warm-up%n",
                n, b.tokens, b.windows, threads, WARMUP_RUNS));
        sb.append(line("tokenize", b.tokenize));
        sb.append(line("inference", b.inference));
        sb.append(line("decode", b.decode));
        sb.append("\ninference histogram\n");
        sb.append(b.inference.textHistogram(HISTOGRAM_BINS, HISTOGRAM_WIDTH));
        return sb.toString();
    }

    private void onBenchmark() {
        final String text = input.getText().toString();
        final String asked = question.getText().toString();
        final int n = parseRuns();
        setBusy(true);
        benchResult.setText(String.format(Locale.ROOT, "running %d inferences…", n));
        worker.execute(() -> {
            String report;
            try {
                if (answerer != null) {
                    WindowBenchmark b = answerer.benchmark(asked, text, n, WARMUP_RUNS);
                    postResult(null, null, windowReport(b, n, loadedThreads));
                    return;
                }
                if (recognizer != null) {
                    WindowBenchmark b = recognizer.benchmark(text, n, WARMUP_RUNS);
                    postResult(null, null, windowReport(b, n, loadedThreads));
                    return;
                }
                AlbertClassifier.Benchmark b = classifier.benchmark(text, n, WARMUP_RUNS);
                StringBuilder sb = new StringBuilder();
                sb.append(String.format(Locale.ROOT, "%d runs, seq_len %d, %d thread(s), %d warm-up%n", n,
                        b.sequenceLength, loadedThreads, WARMUP_RUNS));
                sb.append(line("tokenize", b.tokenize));
                sb.append(line("inference", b.inference));
                sb.append(line("invoke", b.nativeInvoke));
                sb.append("\ninference histogram\n");
                sb.append(b.inference.textHistogram(HISTOGRAM_BINS, HISTOGRAM_WIDTH));
                report = sb.toString();
            } catch (RuntimeException e) {
                report = "Error: " + e.getMessage();
            }
            postResult(null, null, report);
        });
    }

    private static String line(String name, LatencyStats s) {
        return String.format(Locale.ROOT, "%-10s p50 %8.3f  p90 %8.3f  mean %8.3f ms%n", name, s.p50(), s.p90(),
                s.mean());
    }

    private int parseRuns() {
        try {
            return Math.max(1, Math.min(10000, Integer.parseInt(runs.getText().toString().trim())));
        } catch (NumberFormatException e) {
            return 100;
        }
    }

    private void postResult(final String shown, final String timing, final String bench) {
        ui.post(() -> {
            if (shown != null) {
                result.setText(shown);
            }
            if (timing != null) {
                latency.setText(timing);
            }
            if (bench != null) {
                benchResult.setText(bench);
            }
            setBusy(false);
        });
    }

    @Override
    protected void onDestroy() {
        worker.execute(() -> {
            if (classifier != null) {
                classifier.close();
            }
            if (recognizer != null) {
                recognizer.close();
            }
            if (answerer != null) {
                answerer.close();
            }
        });
        worker.shutdown();
        super.onDestroy();
    }
}
