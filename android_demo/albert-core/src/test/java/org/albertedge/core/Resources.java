package org.albertedge.core;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/** Test resources from the classpath (src/test/resources), as Gradle and ci-check.sh both lay them out. */
final class Resources {
    private Resources() {}

    static byte[] bytes(String name) throws IOException {
        InputStream in = Resources.class.getClassLoader().getResourceAsStream(name);
        if (in == null) {
            throw new IOException(name + ": test resource not on the classpath");
        }
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[1 << 16];
            int n;
            while ((n = in.read(buf)) > 0) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        } finally {
            in.close();
        }
    }

    /** The pack of a committed model file, named by its resource name in errors. */
    static ModelPack pack(String name) throws IOException {
        return ModelPack.read(bytes(name), name);
    }

    static String text(String name) throws IOException {
        return new String(bytes(name), StandardCharsets.UTF_8);
    }

    static List<JSONObject> jsonLines(String name) throws IOException, JSONException {
        List<JSONObject> out = new ArrayList<JSONObject>();
        for (String line : text(name).split("\n")) {
            if (!line.isEmpty()) {
                out.add(new JSONObject(line));
            }
        }
        return out;
    }

    static int[] ints(JSONArray array) throws JSONException {
        int[] out = new int[array.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.getInt(i);
        }
        return out;
    }

    static double[] doubles(JSONArray array) throws JSONException {
        double[] out = new double[array.length()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.getDouble(i);
        }
        return out;
    }

    static List<String> strings(JSONArray array) throws JSONException {
        List<String> out = new ArrayList<String>();
        for (int i = 0; i < array.length(); i++) {
            out.add(array.getString(i));
        }
        return out;
    }

    /**
     * How Java's encoding differs from a golden record written by Python (ids, token types, mask,
     * truncation, tokens), as the lines to append to the record's description; null when they agree.
     */
    static String encodingMismatch(JSONObject g, Encoding enc) throws JSONException {
        List<String> want = strings(g.getJSONArray("tokens"));
        if (Arrays.equals(ints(g.getJSONArray("input_ids")), enc.inputIds)
                && Arrays.equals(ints(g.getJSONArray("token_type_ids")), enc.tokenTypeIds)
                && Arrays.equals(ints(g.getJSONArray("attention_mask")), enc.attentionMask)
                && g.getBoolean("truncated") == enc.truncated && want.equals(enc.tokens)) {
            return null;
        }
        return "\n  python: " + want + "\n  java:   " + enc.tokens;
    }

    static SentencePieceTokenizer spiece(boolean doLowerCase) throws IOException {
        return SentencePieceTokenizer.fromModelBytes(bytes("spiece.model"), doLowerCase, "spiece.model");
    }

    static WordPieceTokenizer vocab(boolean doLowerCase) throws IOException {
        return WordPieceTokenizer.fromVocabBytes(bytes("vocab.txt"), doLowerCase, "vocab.txt");
    }
}
