package org.albertedge.core;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.json.JSONObject;

/**
 * Time to first model input of albert-core on the host JVM (issue #32), per model file, each in a
 * fresh JVM: read the file, read its pack, build the tokenizer, then the task's first input
 * (classification: encode; NER: tokens and windows; QA: question and context windows). The model
 * itself is not run: LiteRT's Interpreter is an Android library and is not on this JVM, so the
 * phone adds the interpreter's load and first invoke to these figures.
 *
 * <p>Reports, never judges: {@code ci-check.sh} prints the one JSON line this writes, and no test
 * asserts a latency (a shared CI machine's timings say nothing about a phone's).
 *
 * <p>{@code FirstAnswerTiming MODEL...} starts one JVM per model ({@code --one MODEL}, the same java
 * and class path) and prints {@code {"java": ..., "interpreter": ..., "models": [...]}} on one line.
 */
public final class FirstAnswerTiming {
    static final String TEXT = "Alice Smith moved to Paris last year. 这本书写得很好，值得一读。";
    static final String QUESTION = "Where did Alice Smith move?";

    private FirstAnswerTiming() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && "--one".equals(args[0])) {
            System.out.println(one(args[1]));
            return;
        }
        if (args.length == 0) {
            System.err.println("usage: FirstAnswerTiming MODEL.tflite... (each timed in a fresh JVM)");
            System.exit(2);
        }
        List<String> models = new ArrayList<String>();
        for (String model : args) {
            models.add(inFreshJvm(model));
        }
        Map<String, Object> report = new LinkedHashMap<String, Object>();
        report.put("what", "albert-core time to first model input, host JVM, one fresh JVM per model");
        report.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        report.put("interpreter", "not run: LiteRT's Interpreter is Android-only, the phone adds its load and first invoke");
        String head = json(report);
        System.out.println(head.substring(0, head.length() - 1) + ",\"models\":[" + String.join(",", models) + "]}");
    }

    /** A flat JSON object in insertion order (org.json's does not keep it), for a readable line. */
    static String json(Map<String, Object> fields) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            if (sb.length() > 1) {
                sb.append(',');
            }
            sb.append(JSONObject.quote(e.getKey())).append(':');
            Object v = e.getValue();
            sb.append(v instanceof String ? JSONObject.quote((String) v) : String.valueOf(v));
        }
        return sb.append('}').toString();
    }

    private static double ms(long nanos) {
        return Math.round(nanos / 1e3) / 1e3;
    }

    /** Runs {@code --one model} in a new JVM and adds its wall time as seen from here. */
    private static String inFreshJvm(String model) throws IOException, InterruptedException {
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> command = new ArrayList<String>();
        command.add(java);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(FirstAnswerTiming.class.getName());
        command.add("--one");
        command.add(model);
        long t0 = System.nanoTime();
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        StringBuilder out = new StringBuilder();
        BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = reader.readLine()) != null) {
            out.append(line).append('\n');
        }
        int status = process.waitFor();
        long t1 = System.nanoTime();
        if (status != 0) {
            throw new IOException(model + ": timing JVM exited " + status + ":\n" + out);
        }
        String result = out.toString().trim();
        if (!result.startsWith("{") || !result.endsWith("}") || result.indexOf('\n') >= 0) {
            throw new IOException(model + ": timing JVM printed " + result);
        }
        return result.substring(0, result.length() - 1) + ",\"process_ms\":" + ms(t1 - t0) + "}";
    }

    /** The phases in this JVM, which must be fresh: nothing of albert-core is loaded before. */
    static String one(String path) throws IOException {
        long atMain = ManagementFactory.getRuntimeMXBean().getUptime();
        long t0 = System.nanoTime();
        byte[] bytes = Files.readAllBytes(Paths.get(path));
        long t1 = System.nanoTime();
        String name = Paths.get(path).getFileName().toString();
        ModelPack pack = ModelPack.read(bytes, name);
        long t2 = System.nanoTime();
        TextTokenizer tokenizer = pack.tokenizer();
        long t3 = System.nanoTime();
        int tokens = firstInput(pack, tokenizer);
        long t4 = System.nanoTime();
        Map<String, Object> r = new LinkedHashMap<String, Object>();
        r.put("model", name);
        r.put("task", pack.task);
        r.put("tokenizer", pack.tokenizerType);
        r.put("bytes", bytes.length);
        r.put("jvm_to_main_ms", atMain);
        r.put("read_file_ms", ms(t1 - t0));
        r.put("read_pack_ms", ms(t2 - t1));
        r.put("build_tokenizer_ms", ms(t3 - t2));
        r.put("first_input_ms", ms(t4 - t3));
        r.put("first_input_tokens", tokens);
        r.put("file_to_first_input_ms", ms(t4 - t0));
        return json(r);
    }

    /** The task's own first model input from {@link #TEXT}; returns how many positions it has. */
    private static int firstInput(ModelPack pack, TextTokenizer tokenizer) {
        if (ModelPack.TOKEN_CLASSIFICATION.equals(pack.task)) {
            return new EntityExtractor(tokenizer, pack.labels, pack.maxSeqLen, -1).prepare(TEXT).windows.get(0).length();
        }
        if (ModelPack.QUESTION_ANSWERING.equals(pack.task)) {
            return new QuestionAnswerer(tokenizer, pack.maxSeqLen, -1, QaSpans.MAX_ANSWER_TOKENS, -1)
                    .prepare(QUESTION, TEXT).encodings.get(0).length();
        }
        return new Preprocessor(tokenizer, pack.maxSeqLen).encode(TEXT).length();
    }
}
