package org.albertedge.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * The tokenizer, labels and settings packed inside a .tflite (docs/pack_format.md, v1).
 *
 * <p>The Java twin of Python's {@code albert_edge.runtime.pack.read_tflite_pack}: the same
 * members, caps and checks, so a file one side refuses the other refuses too.
 */
public final class ModelPack {
    public static final int PACK_FORMAT = 1;
    public static final String SETTINGS_MEMBER = "albert_edge.json";
    public static final String LABELS_MEMBER = "labels.txt";
    static final int MAX_MEMBERS = 32;
    static final int MAX_SEQ_LEN_LIMIT = 8192;
    private static final List<String> KNOWN_INPUTS = Arrays.asList("input_ids", "attention_mask", "token_type_ids");
    public static final String SEQUENCE_CLASSIFICATION = "sequence_classification";
    public static final String TOKEN_CLASSIFICATION = "token_classification";
    public static final String QUESTION_ANSWERING = "question_answering";
    public static final String FEATURE_EXTRACTION = "feature_extraction";
    private static final List<String> TASKS = Arrays.asList(SEQUENCE_CLASSIFICATION, FEATURE_EXTRACTION,
            TOKEN_CLASSIFICATION, QUESTION_ANSWERING);
    /** Tasks whose pack must carry labels (Python: the task's needs_labels). */
    private static final List<String> TASKS_WITH_LABELS = Arrays.asList(SEQUENCE_CLASSIFICATION, TOKEN_CLASSIFICATION);
    private static final ZipTail.Caps CAPS;
    /** What Python's str.splitlines() breaks on (empty lines are dropped, so CRLF needs no special case). */
    private static final String PYTHON_LINE_BREAKS = "[\\n\\r\\x0B\\x0C\\x1C\\x1D\\x1E\\x{85}\\x{2028}\\x{2029}]";

    static {
        Map<String, Integer> caps = new HashMap<String, Integer>();
        caps.put(SETTINGS_MEMBER, 1 << 20);
        caps.put(LABELS_MEMBER, 1 << 20);
        caps.put("vocab.txt", 32 << 20);
        caps.put("spiece.model", 32 << 20);
        CAPS = new ZipTail.Caps(MAX_MEMBERS, caps, 1 << 20);
    }

    public final String tokenizerType;
    public final byte[] tokenizerAsset;
    public final boolean doLowerCase;
    public final int maxSeqLen;
    /** Null for a feature-extraction model. */
    public final List<String> labels;
    public final String task;
    public final List<String> inputs;
    public final List<String> outputs;
    public final String variant;
    public final String albertEdgeVersion;
    /** The task's settings (e.g. an embedding's pooling); empty for packs written before task_config. */
    private final JSONObject taskConfig;
    private final String source;

    private ModelPack(String tokenizerType, byte[] tokenizerAsset, boolean doLowerCase, int maxSeqLen,
                      List<String> labels, String task, List<String> inputs, List<String> outputs, String variant,
                      String albertEdgeVersion, JSONObject taskConfig, String source) {
        this.tokenizerType = tokenizerType;
        this.tokenizerAsset = tokenizerAsset;
        this.doLowerCase = doLowerCase;
        this.maxSeqLen = maxSeqLen;
        this.labels = labels == null ? null : Collections.unmodifiableList(labels);
        this.task = task;
        this.inputs = Collections.unmodifiableList(inputs);
        this.outputs = Collections.unmodifiableList(outputs);
        this.variant = variant;
        this.albertEdgeVersion = albertEdgeVersion;
        this.taskConfig = taskConfig;
        this.source = source;
    }

    /**
     * Read the pack appended to a .tflite held in {@code model} (e.g. a memory-mapped asset).
     * The buffer's position and limit are left as they were, so the same buffer can then be
     * handed to the interpreter.
     */
    public static ModelPack read(ByteBuffer model, String source) {
        Map<String, byte[]> members = ZipTail.readMembers(model, CAPS, source);
        if (members == null) {
            // A tool that rewrote the flatbuffer (litert-quantizer) drops the archive; the desktop tool puts it back.
            throw fail(source, "model file carries no albert-edge pack (no ZIP archive after the flatbuffer); "
                    + "re-attach it with: albert-edge repack MODEL --from ORIGINAL --out FIXED.tflite");
        }
        return fromMembers(members, source);
    }

    public static ModelPack read(byte[] model, String source) {
        return read(ByteBuffer.wrap(model), source);
    }

    /** Read a whole stream (an asset that could not be memory-mapped) and its pack. */
    public static ModelPack read(InputStream in, long maxBytes, String source) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] chunk = new byte[1 << 16];
        long total = 0;
        int n;
        while ((n = in.read(chunk)) > 0) {
            total += n;
            if (total > maxBytes) {
                throw fail(source, "model file is larger than the " + maxBytes + " byte limit");
            }
            out.write(chunk, 0, n);
        }
        return read(out.toByteArray(), source);
    }

    static ModelPack fromMembers(Map<String, byte[]> members, String source) {
        if (!members.containsKey(SETTINGS_MEMBER)) {
            throw fail(source, "model file carries no albert-edge pack (" + SETTINGS_MEMBER + " missing)");
        }
        JSONObject settings;
        try {
            settings = new JSONObject(decodeUtf8(members.get(SETTINGS_MEMBER), SETTINGS_MEMBER, source));
        } catch (JSONException e) {
            throw fail(source, "pack " + SETTINGS_MEMBER + " is not a valid JSON object (" + e.getMessage() + ")");
        }
        Object format = settings.opt("pack_format");
        if (!(format instanceof Integer) || (Integer) format != PACK_FORMAT) {
            throw fail(source, "pack_format is " + format + ", this reader reads pack_format " + PACK_FORMAT);
        }
        JSONObject tok = settings.optJSONObject("tokenizer");
        if (tok == null) {
            throw fail(source, "pack " + SETTINGS_MEMBER + " lacks the 'tokenizer' object");
        }
        String kind = tok.optString("type", "");
        String expectedFile;
        if ("wordpiece".equals(kind)) {
            expectedFile = "vocab.txt";
        } else if ("sentencepiece".equals(kind)) {
            expectedFile = "spiece.model";
        } else if (ByteLevelBpeTokenizer.KIND.equals(kind)) {
            expectedFile = "bpe.json";
        } else {
            throw fail(source, "pack tokenizer.type is '" + kind
                    + "', expected one of [bytelevel_bpe, sentencepiece, wordpiece]");
        }
        String file = tok.optString("file", expectedFile);
        if (!expectedFile.equals(file)) {
            throw fail(source, "pack tokenizer.file is '" + file + "', expected '" + expectedFile + "' for " + kind);
        }
        byte[] asset = members.get(file);
        if (asset == null || asset.length == 0) {
            throw fail(source, "pack member " + file + " is missing or empty");
        }
        Object lower = tok.opt("do_lower_case");
        if (lower != null && !(lower instanceof Boolean)) {
            throw fail(source, "pack tokenizer.do_lower_case is " + lower + ", expected true or false");
        }
        Object maxLen = tok.opt("max_seq_len");
        int maxSeqLen = 128;
        if (maxLen != null) {
            if (!(maxLen instanceof Integer) || (Integer) maxLen < 3 || (Integer) maxLen > MAX_SEQ_LEN_LIMIT) {
                throw fail(source, "pack tokenizer.max_seq_len is " + maxLen + ", expected an int in 3.."
                        + MAX_SEQ_LEN_LIMIT);
            }
            maxSeqLen = (Integer) maxLen;
        }
        String task = settings.optString("task", "sequence_classification");
        if (!TASKS.contains(task)) {
            throw fail(source, "pack task is '" + task + "', expected one of " + TASKS);
        }
        List<String> inputs = stringList(settings, "inputs", KNOWN_INPUTS, source);
        if (!KNOWN_INPUTS.containsAll(inputs) || inputs.size() != new java.util.HashSet<String>(inputs).size()
                || !inputs.contains("input_ids")) {
            throw fail(source, "pack inputs are " + inputs + ", expected distinct names from " + KNOWN_INPUTS
                    + " including input_ids");
        }
        List<String> outputs = stringList(settings, "outputs", Collections.singletonList("logits"), source);
        List<String> labels = readLabels(settings, members, source);
        JSONObject taskConfig = new JSONObject();
        if (settings.has("task_config")) {
            taskConfig = settings.optJSONObject("task_config");
            if (taskConfig == null) {
                throw fail(source, "pack task_config is " + settings.opt("task_config") + ", expected a JSON object");
            }
        }
        if (TASKS_WITH_LABELS.contains(task) && labels == null) {
            throw fail(source, "pack task is " + task + " but it carries no labels");
        }
        return new ModelPack(kind, asset, lower == null || (Boolean) lower, maxSeqLen, labels, task, inputs,
                outputs, settings.optString("variant", "fp32"), settings.optString("albert_edge_version", "unknown"),
                taskConfig, source);
    }

    private static List<String> readLabels(JSONObject settings, Map<String, byte[]> members, String source) {
        List<String> fromJson = null;
        if (!settings.isNull("labels")) {
            fromJson = stringList(settings, "labels", null, source);
        }
        if (fromJson != null) {
            for (String label : fromJson) {
                if (label.isEmpty() || !label.equals(pythonStrip(label)) || label.indexOf('\n') >= 0) {
                    throw fail(source, "pack labels " + fromJson + " must be non-empty strings without surrounding spaces");
                }
            }
        }
        List<String> labels = fromJson;
        byte[] text = members.get(LABELS_MEMBER);
        if (text != null) {
            labels = new ArrayList<String>();
            for (String line : decodeUtf8(text, LABELS_MEMBER, source).split(PYTHON_LINE_BREAKS, -1)) {
                String label = pythonStrip(line);
                if (!label.isEmpty()) {
                    labels.add(label);
                }
            }
            if (fromJson != null && !fromJson.equals(labels)) {
                throw fail(source, "pack " + LABELS_MEMBER + " " + labels + " disagrees with " + SETTINGS_MEMBER
                        + " labels " + fromJson);
            }
        }
        if (labels != null) {
            if (labels.isEmpty() || new java.util.HashSet<String>(labels).size() != labels.size()) {
                throw fail(source, "pack labels " + labels + " must be non-empty and distinct");
            }
        }
        return labels;
    }

    private static List<String> stringList(JSONObject settings, String key, List<String> fallback, String source) {
        if (!settings.has(key)) {
            return new ArrayList<String>(fallback);
        }
        JSONArray array = settings.optJSONArray(key);
        if (array == null) {
            throw fail(source, "pack " + key + " must be a JSON list of strings");
        }
        List<String> out = new ArrayList<String>();
        for (int i = 0; i < array.length(); i++) {
            Object item = array.opt(i);
            if (!(item instanceof String)) {
                throw fail(source, "pack " + key + " must be a JSON list of strings, item " + i + " is " + item);
            }
            out.add((String) item);
        }
        return out;
    }

    /** The name of the file this pack was read from, for messages about it. */
    public String source() {
        return source;
    }

    /**
     * The setting {@code key} of {@code task_config}, or {@code fallback} when the pack does not set it
     * (JSON null reads as null). Package-private: the task classes interpret it, as Python's tasks do.
     */
    Object taskSetting(String key, Object fallback) {
        if (!taskConfig.has(key)) {
            return fallback;
        }
        Object value = taskConfig.opt(key);
        return value == JSONObject.NULL ? null : value;
    }

    /** The tokenizer this pack describes: WordPiece (vocab.txt), SentencePiece (spiece.model) or byte-level BPE (bpe.json). */
    public TextTokenizer tokenizer() {
        if (ByteLevelBpeTokenizer.KIND.equals(tokenizerType)) {
            return ByteLevelBpeTokenizer.fromAssetBytes(tokenizerAsset, source + "!bpe.json");
        }
        if ("sentencepiece".equals(tokenizerType)) {
            return SentencePieceTokenizer.fromModelBytes(tokenizerAsset, doLowerCase, source + "!spiece.model");
        }
        return WordPieceTokenizer.fromVocabBytes(tokenizerAsset, doLowerCase, source + "!vocab.txt");
    }

    public Preprocessor preprocessor() {
        return new Preprocessor(tokenizer(), maxSeqLen);
    }

    /** Python's str.strip(): drop leading and trailing str.isspace() code points. */
    static String pythonStrip(String s) {
        int[] cps = CodePoints.of(s);
        int start = 0;
        int end = cps.length;
        while (start < end && UnicodeTables.isPythonSpace(cps[start])) {
            start++;
        }
        while (end > start && UnicodeTables.isPythonSpace(cps[end - 1])) {
            end--;
        }
        return CodePoints.fromRange(cps, start, end);
    }

    static String decodeUtf8(byte[] data, String member, String source) {
        try {
            CharBuffer chars = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data));
            return chars.toString();
        } catch (CharacterCodingException e) {
            throw fail(source, "pack member " + member + " is not UTF-8 text");
        }
    }

    private static AlbertCoreException fail(String source, String message) {
        return new AlbertCoreException(source + ": " + message);
    }
}
