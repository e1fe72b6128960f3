package org.albertedge.core;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * BERT basic tokenization + greedy longest-match WordPiece over a {@code vocab.txt}: the Java
 * twin of Python's {@code albert_edge.tokenizer.WordPieceTokenizer}, step for step.
 *
 * <p>Clean text and space out CJK ideographs; split on Python whitespace; per word compose (NFC),
 * lower-case and strip accents when {@code doLowerCase}; split off punctuation; WordPiece each piece with
 * {@code ##} continuations, {@code [UNK]} for a piece that cannot be covered or is longer than
 * 100 code points. Golden files written by the Python package prove the two agree.
 */
public final class WordPieceTokenizer {
    /** Longer words (in code points) become one [UNK], as in BERT. */
    public static final int MAX_INPUT_CHARS_PER_WORD = 100;
    private static final String[] REQUIRED_SPECIALS = {"[CLS]", "[SEP]", "[UNK]"};

    private final Map<String, Integer> vocab;
    private final List<String> idToToken;
    private final boolean doLowerCase;
    private final String source;
    private final int clsId;
    private final int sepId;
    private final int unkId;
    private final int padId;

    /** {@code tokens.get(i)} is token id i; a token listed twice keeps its last id. */
    public WordPieceTokenizer(List<String> tokens, boolean doLowerCase, String source) {
        if (tokens.isEmpty()) {
            throw new AlbertCoreException(source + ": vocab is empty (expected one token per line)");
        }
        this.source = source;
        this.doLowerCase = doLowerCase;
        this.idToToken = Collections.unmodifiableList(new ArrayList<String>(tokens));
        this.vocab = new HashMap<String, Integer>(tokens.size() * 2);
        for (int i = 0; i < tokens.size(); i++) {
            vocab.put(tokens.get(i), i);
        }
        List<String> missing = new ArrayList<String>();
        for (String special : REQUIRED_SPECIALS) {
            if (!vocab.containsKey(special)) {
                missing.add(special);
            }
        }
        if (!missing.isEmpty()) {
            throw new AlbertCoreException(source + ": vocab has no " + join(missing, ", ")
                    + " token (expected a BERT vocab.txt)");
        }
        clsId = vocab.get("[CLS]");
        sepId = vocab.get("[SEP]");
        unkId = vocab.get("[UNK]");
        // [PAD] is id 0 in every BERT vocab; without it pad with 0, as the Python side does.
        Integer pad = vocab.get("[PAD]");
        padId = pad == null ? 0 : pad;
    }

    /**
     * Parse a vocab.txt's UTF-8 bytes: lines split on '\n' only (BERT vocabs hold tokens such as
     * U+2028 that other line splitters break on), a trailing '\r' dropped.
     */
    public static WordPieceTokenizer fromVocabBytes(byte[] data, boolean doLowerCase, String source) {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(data))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new AlbertCoreException(source + ": vocab is not valid UTF-8");
        }
        return fromVocabText(text, doLowerCase, source);
    }

    public static WordPieceTokenizer fromVocabText(String text, boolean doLowerCase, String source) {
        List<String> tokens = new ArrayList<String>();
        int start = 0;
        while (start <= text.length()) {
            int nl = text.indexOf('\n', start);
            int end = nl < 0 ? text.length() : nl;
            if (nl < 0 && start == text.length()) {
                break;
            }
            String line = text.substring(start, end);
            if (line.endsWith("\r")) {
                line = line.substring(0, line.length() - 1);
            }
            tokens.add(line);
            if (nl < 0) {
                break;
            }
            start = nl + 1;
        }
        return new WordPieceTokenizer(tokens, doLowerCase, source);
    }

    /** Text -> WordPiece tokens, without [CLS]/[SEP]. An empty text gives an empty list. */
    public List<String> tokenize(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        List<String> out = new ArrayList<String>();
        for (String word : CodePoints.splitOnPythonWhitespace(BertText.clean(text))) {
            tokenizeWord(word, out);
        }
        return out;
    }

    private void tokenizeWord(String word, List<String> out) {
        if (!BertText.isAscii(word)) {
            // Compose first, as Hugging Face does: "e" + U+0301 then matches the vocab's "é", and
            // compatibility ideographs (U+F900) become the unified ones (U+8C48).
            word = Normalization.nfc(word);
        }
        if (doLowerCase) {
            word = BertText.lower(word);
            if (!BertText.isAscii(word)) {
                word = BertText.stripAccents(word);
            }
        }
        for (String sub : CodePoints.splitOnPythonWhitespace(word)) {
            for (String part : splitOnPunctuation(sub)) {
                wordpiece(part, out);
            }
        }
    }

    /** Each punctuation code point becomes its own piece; runs of others stay together. */
    static List<String> splitOnPunctuation(String text) {
        List<String> out = new ArrayList<String>();
        StringBuilder current = new StringBuilder();
        for (int cp : CodePoints.of(text)) {
            if (BertText.isPunctuation(cp)) {
                if (current.length() > 0) {
                    out.add(current.toString());
                    current.setLength(0);
                }
                out.add(new String(Character.toChars(cp)));
            } else {
                current.appendCodePoint(cp);
            }
        }
        if (current.length() > 0) {
            out.add(current.toString());
        }
        return out;
    }

    /** Greedy longest-match-first split of one punctuation-free word, in code points. */
    private void wordpiece(String word, List<String> out) {
        int[] cps = CodePoints.of(word);
        int n = cps.length;
        if (n > MAX_INPUT_CHARS_PER_WORD) {
            out.add("[UNK]");
            return;
        }
        List<String> pieces = new ArrayList<String>();
        int start = 0;
        while (start < n) {
            int end = n;
            String found = null;
            while (end > start) {
                String sub = CodePoints.fromRange(cps, start, end);
                if (start > 0) {
                    sub = "##" + sub;
                }
                if (vocab.containsKey(sub)) {
                    found = sub;
                    break;
                }
                end--;
            }
            if (found == null) {
                out.add("[UNK]");
                return;
            }
            pieces.add(found);
            start = end;
        }
        out.addAll(pieces);
    }

    /** Tokens -> ids; a token not in the vocab maps to the [UNK] id. */
    public int[] convertTokensToIds(List<String> tokens) {
        int[] ids = new int[tokens.size()];
        for (int i = 0; i < ids.length; i++) {
            Integer id = vocab.get(tokens.get(i));
            ids[i] = id == null ? unkId : id;
        }
        return ids;
    }

    public String idToToken(int id) {
        if (id < 0 || id >= idToToken.size()) {
            throw new AlbertCoreException(source + ": token id " + id + " outside vocab of " + idToToken.size());
        }
        return idToToken.get(id);
    }

    public int clsId() {
        return clsId;
    }

    public int sepId() {
        return sepId;
    }

    public int unkId() {
        return unkId;
    }

    public int padId() {
        return padId;
    }

    public int vocabSize() {
        return idToToken.size();
    }

    public boolean doLowerCase() {
        return doLowerCase;
    }

    static String join(List<String> parts, String sep) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) {
                sb.append(sep);
            }
            sb.append(parts.get(i));
        }
        return sb.toString();
    }
}
