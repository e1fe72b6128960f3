package org.albertedge.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * RoBERTa's byte-level BPE, the Java twin of Python's {@code albert_edge.tokenizer.bytelevel_bpe}
 * (whose module docstring is the specification followed here step by step): no normalisation, GPT-2's
 * pre-tokenizer pattern scanned on code points with Python's Unicode tables ({@link UnicodeTables}),
 * each pre-token's UTF-8 bytes mapped through GPT-2's byte-to-unicode table, rank-ordered merges.
 *
 * <p>Specials are RoBERTa's: {@code <s> a </s>}, pairs {@code <s> a </s></s> b </s>}, token type 0
 * throughout. The pack carries the vocab and merges as {@code bpe.json}.
 */
public final class ByteLevelBpeTokenizer extends AbstractTextTokenizer {
    static final String KIND = "bytelevel_bpe";
    private static final String[] CONTRACTIONS = {"s", "t", "re", "ve", "m", "ll", "d"};
    /** GPT-2's bytes_to_unicode: byte value -> the code point that stands for it. */
    private static final int[] BYTE_SYMBOL = byteSymbols();

    private final Map<String, Integer> vocab;
    private final Map<String, Integer> ranks;
    private final boolean addPrefixSpace;
    /** Merged symbols per pre-token (Python's lru_cache); concurrent, as one tokenizer may serve threads. */
    private final Map<String, List<String>> cache = new ConcurrentHashMap<String, List<String>>();

    public ByteLevelBpeTokenizer(Map<String, Integer> vocab, List<String> merges, boolean addPrefixSpace,
                                 String source) {
        super(source, false, specials(vocab, source));
        this.vocab = Collections.unmodifiableMap(new HashMap<String, Integer>(vocab));
        Map<String, Integer> r = new HashMap<String, Integer>();
        for (int i = 0; i < merges.size(); i++) {
            r.put(merges.get(i), i);  // a repeated pair keeps its last rank, as Python's dict does
        }
        this.ranks = r;
        this.addPrefixSpace = addPrefixSpace;
    }

    private static Specials specials(Map<String, Integer> vocab, String source) {
        requireTokens(vocab, new String[] {"<s>", "</s>", "<unk>", "<pad>"}, source, "byte-level BPE vocab",
                " (expected RoBERTa's specials)");
        return new Specials(vocab.get("<s>"), vocab.get("</s>"), vocab.get("<unk>"), vocab.get("<pad>"));
    }

    /** From the pack's {@code bpe.json} bytes: {type, add_prefix_space, vocab, merges}. */
    public static ByteLevelBpeTokenizer fromAssetBytes(byte[] data, String source) {
        JSONObject obj;
        try {
            obj = new JSONObject(new String(data, StandardCharsets.UTF_8));
        } catch (JSONException e) {
            throw new AlbertCoreException(source + ": byte-level BPE asset is not a JSON object");
        }
        if (!KIND.equals(obj.optString("type"))) {
            throw new AlbertCoreException(source + ": not a byte-level BPE asset (expected an object with type '"
                    + KIND + "')");
        }
        JSONObject vocabJson = obj.optJSONObject("vocab");
        JSONArray mergesJson = obj.optJSONArray("merges");
        if (vocabJson == null) {
            throw new AlbertCoreException(source + ": byte-level BPE 'vocab' must map symbols to integer ids");
        }
        if (mergesJson == null) {
            throw new AlbertCoreException(source + ": byte-level BPE 'merges' must be a list of 'left right' strings");
        }
        Map<String, Integer> vocab = new HashMap<String, Integer>();
        JSONArray names = vocabJson.names();
        for (int i = 0; names != null && i < names.length(); i++) {
            String key = names.optString(i);
            Object id = vocabJson.opt(key);
            if (!(id instanceof Integer)) {
                throw new AlbertCoreException(source + ": byte-level BPE 'vocab' must map symbols to integer ids");
            }
            vocab.put(key, (Integer) id);
        }
        List<String> merges = new ArrayList<String>();
        for (int i = 0; i < mergesJson.length(); i++) {
            String merge = mergesJson.optString(i, null);
            if (merge == null || merge.split(" ", -1).length != 2) {
                throw new AlbertCoreException(source + ": byte-level BPE 'merges' must be a list of 'left right' strings");
            }
            merges.add(merge);
        }
        return new ByteLevelBpeTokenizer(vocab, merges, obj.optBoolean("add_prefix_space", false), source);
    }

    private static int[] byteSymbols() {
        int[] table = new int[256];
        int extra = 0;
        for (int b = 0; b < 256; b++) {
            boolean keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            table[b] = keep ? b : 256 + extra++;
        }
        return table;
    }

    @Override
    public String clsToken() {
        return "<s>";
    }

    @Override
    public String sepToken() {
        return "</s>";
    }

    @Override
    public int pairSeparators() {
        return 2;
    }

    @Override
    public int pairTypeId() {
        return 0;
    }

    /** "s" whitespace, "L" letter, "N" number, "o" anything else (the pattern's classes). */
    private static char kind(int cp) {
        if (UnicodeTables.isBpeWhitespace(cp)) {
            return 's';
        }
        if (UnicodeTables.isLetter(cp)) {
            return 'L';
        }
        return UnicodeTables.isNumber(cp) ? 'N' : 'o';
    }

    private static int run(int[] text, int start, char kind) {
        int end = start;
        while (end < text.length && kind(text[end]) == kind) {
            end++;
        }
        return end;
    }

    private static boolean startsWith(int[] text, int at, String word) {
        if (at + word.length() > text.length) {
            return false;
        }
        for (int k = 0; k < word.length(); k++) {
            if (text[at + k] != word.charAt(k)) {
                return false;
            }
        }
        return true;
    }

    /** GPT-2's pattern as [start, end) code point spans, first alternative that matches wins. */
    static List<int[]> pretokenize(int[] text) {
        List<int[]> spans = new ArrayList<int[]>();
        int i = 0;
        while (i < text.length) {
            int cp = text[i];
            if (cp == '\'') {
                String word = null;
                for (String c : CONTRACTIONS) {
                    if (startsWith(text, i + 1, c)) {
                        word = c;
                        break;
                    }
                }
                if (word != null) {
                    spans.add(new int[] {i, i + 1 + word.length()});
                    i += 1 + word.length();
                    continue;
                }
            }
            int lead = cp == ' ' && i + 1 < text.length && kind(text[i + 1]) != 's' ? 1 : 0;
            char kind = kind(text[i + lead]);
            int end;
            if (kind != 's') {  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
                end = run(text, i + lead, kind);
            } else {  // `\s+(?!\S)`, else `\s+`: a run before a non-space gives its last one to that word
                end = run(text, i, 's');
                if (end < text.length && end - i > 1) {
                    end--;
                }
            }
            spans.add(new int[] {i, end});
            i = end;
        }
        return spans;
    }

    /** Step 4 on one pre-token's symbols: merge the lowest-ranked adjacent pair everywhere, until none ranks. */
    private List<String> merge(String word) {
        List<String> cached = cache.get(word);
        if (cached != null) {
            return cached;
        }
        List<String> parts = new ArrayList<String>();
        for (int k = 0; k < word.length(); ) {
            int cp = word.codePointAt(k);
            parts.add(new String(Character.toChars(cp)));
            k += Character.charCount(cp);
        }
        while (parts.size() > 1) {
            int best = -1;
            String pair = null;
            for (int k = 0; k + 1 < parts.size(); k++) {
                Integer rank = ranks.get(parts.get(k) + " " + parts.get(k + 1));
                if (rank != null && (best < 0 || rank < best)) {
                    best = rank;
                    pair = parts.get(k) + " " + parts.get(k + 1);
                }
            }
            if (pair == null) {
                break;
            }
            List<String> merged = new ArrayList<String>();
            for (int k = 0; k < parts.size(); ) {
                if (k + 1 < parts.size() && pair.equals(parts.get(k) + " " + parts.get(k + 1))) {
                    merged.add(parts.get(k) + parts.get(k + 1));
                    k += 2;
                } else {
                    merged.add(parts.get(k));
                    k++;
                }
            }
            parts = merged;
        }
        List<String> out = Collections.unmodifiableList(parts);
        if (cache.size() < 65536) {
            cache.put(word, out);
        }
        return out;
    }

    /** The UTF-8 bytes of one code point as Python's {@code encode("utf-8", "surrogatepass")} writes them. */
    private static byte[] utf8(int cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) {  // a lone surrogate: three bytes, as surrogatepass gives
            return new byte[] {(byte) (0xE0 | (cp >> 12)), (byte) (0x80 | ((cp >> 6) & 0x3F)),
                (byte) (0x80 | (cp & 0x3F))};
        }
        return new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
    }

    private int[] prepared(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        int[] cps = CodePoints.of(text);
        if (addPrefixSpace && cps.length > 0 && !UnicodeTables.isBpeWhitespace(cps[0])) {
            int[] shifted = new int[cps.length + 1];
            shifted[0] = ' ';
            System.arraycopy(cps, 0, shifted, 1, cps.length);
            return shifted;
        }
        return cps;
    }

    /** (symbol, first code point, end code point) in {@code text}: a symbol spans the characters its bytes came from. */
    private List<TokenSpan> symbols(int[] text) {
        List<TokenSpan> out = new ArrayList<TokenSpan>();
        for (int[] span : pretokenize(text)) {
            List<Integer> owner = new ArrayList<Integer>();
            StringBuilder encoded = new StringBuilder();
            for (int index = span[0]; index < span[1]; index++) {
                for (byte b : utf8(text[index])) {
                    encoded.appendCodePoint(BYTE_SYMBOL[b & 0xFF]);
                    owner.add(index);
                }
            }
            int offset = 0;
            for (String symbol : merge(encoded.toString())) {
                int length = symbol.codePointCount(0, symbol.length());
                out.add(new TokenSpan(symbol, owner.get(offset), owner.get(offset + length - 1) + 1));
                offset += length;
            }
        }
        return out;
    }

    @Override
    public List<String> tokenize(String text) {
        List<String> out = new ArrayList<String>();
        for (TokenSpan span : symbols(prepared(text))) {
            out.add(span.token);
        }
        return out;
    }

    /**
     * Symbols with the code points they came from, less U+0020 spaces at either end (RoBERTa's
     * trim_offsets); a symbol of spaces only gets the empty span at its end.
     */
    @Override
    public List<TokenSpan> tokenizeWithOffsets(String text) {
        int[] prepared = prepared(text);
        int shift = prepared.length - text.codePointCount(0, text.length());
        List<TokenSpan> out = new ArrayList<TokenSpan>();
        for (TokenSpan span : symbols(prepared)) {
            int start = span.start;
            int end = span.end;
            while (start < end && prepared[start] == ' ') {
                start++;
            }
            while (end > start && prepared[end - 1] == ' ') {
                end--;
            }
            out.add(new TokenSpan(span.token, Math.max(start - shift, 0), Math.max(end - shift, 0)));
        }
        return out;
    }

    @Override
    public int[] convertTokensToIds(List<String> tokens) {
        return idsIn(vocab, tokens);
    }

    @Override
    public int vocabSize() {
        return vocab.size();
    }
}
