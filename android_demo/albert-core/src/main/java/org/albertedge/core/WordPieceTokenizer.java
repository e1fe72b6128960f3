package org.albertedge.core;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
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
public final class WordPieceTokenizer extends AbstractTextTokenizer {
    /** Longer words (in code points) become one [UNK], as in BERT. */
    public static final int MAX_INPUT_CHARS_PER_WORD = 100;
    private static final String[] REQUIRED_SPECIALS = {"[CLS]", "[SEP]", "[UNK]"};

    private final Map<String, Integer> vocab;
    private final List<String> idToToken;

    /** {@code tokens.get(i)} is token id i; a token listed twice keeps its last id. */
    public WordPieceTokenizer(List<String> tokens, boolean doLowerCase, String source) {
        this(index(tokens, source), tokens, doLowerCase, source);
    }

    private WordPieceTokenizer(Map<String, Integer> vocab, List<String> tokens, boolean doLowerCase, String source) {
        super(source, doLowerCase, specials(vocab, source));
        this.idToToken = Collections.unmodifiableList(new ArrayList<String>(tokens));
        this.vocab = vocab;
    }

    /** Token -> id (the last id of a token listed twice); an empty vocab is an error. */
    private static Map<String, Integer> index(List<String> tokens, String source) {
        if (tokens.isEmpty()) {
            throw new AlbertCoreException(source + ": vocab is empty (expected one token per line)");
        }
        Map<String, Integer> vocab = new HashMap<String, Integer>(tokens.size() * 2);
        for (int i = 0; i < tokens.size(); i++) {
            vocab.put(tokens.get(i), i);
        }
        return vocab;
    }

    /** [CLS], [SEP], [UNK] (all required) and [PAD] ids of a BERT vocab. */
    private static Specials specials(Map<String, Integer> vocab, String source) {
        requireTokens(vocab, REQUIRED_SPECIALS, source, "vocab", " token (expected a BERT vocab.txt)");
        // [PAD] is id 0 in every BERT vocab; without it pad with 0, as the Python side does.
        Integer pad = vocab.get("[PAD]");
        return new Specials(vocab.get("[CLS]"), vocab.get("[SEP]"), vocab.get("[UNK]"), pad == null ? 0 : pad);
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
    @Override
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

    /**
     * Python's {@code WordPieceTokenizer.tokenize_with_offsets}, step for step: clean per character
     * keeping each output character's origin, split on whitespace, tokenize each word as
     * {@link #tokenize} does, then walk the word normalised unit by unit (a character and its
     * following marks) to give each piece the original characters it came from. Offsets are code
     * points ({@link TokenSpan}).
     */
    @Override
    public List<TokenSpan> tokenizeWithOffsets(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        int[] cps = CodePoints.of(text);
        int[] chars = new int[cps.length * 3];
        int[] owner = new int[cps.length * 3];
        int n = 0;
        for (int i = 0; i < cps.length; i++) {
            int cp = cps[i];
            if (cp == 0 || cp == 0xFFFD || BertText.isControl(cp)) {
                continue;
            }
            if (BertText.isWhitespace(cp)) {
                chars[n] = ' ';
                owner[n++] = i;
            } else if (BertText.isCjk(cp)) {
                chars[n] = ' ';
                owner[n++] = i;
                chars[n] = cp;
                owner[n++] = i;
                chars[n] = ' ';
                owner[n++] = i;
            } else {
                chars[n] = cp;
                owner[n++] = i;
            }
        }
        List<TokenSpan> out = new ArrayList<TokenSpan>();
        int i = 0;
        while (i < n) {
            if (UnicodeTables.isPythonSpace(chars[i])) {
                i++;
                continue;
            }
            int a = i;
            while (i < n && !UnicodeTables.isPythonSpace(chars[i])) {
                i++;
            }
            List<String> pieces = new ArrayList<String>();
            tokenizeWord(new String(chars, a, i - a), pieces);
            pieceOffsets(Arrays.copyOfRange(chars, a, i), Arrays.copyOfRange(owner, a, i), pieces, out);
        }
        return out;
    }

    /**
     * A word's (or one unit's) normalisation: NFC, then lower case and accents stripped when
     * {@code doLowerCase}. NFC comes first, as Hugging Face does: "e" + U+0301 then matches the
     * vocab's "é", and compatibility ideographs (U+F900) become the unified ones (U+8C48).
     */
    private String normaliseChar(String text) {
        if (!BertText.isAscii(text)) {
            text = Normalization.nfc(text);
        }
        if (doLowerCase) {
            text = BertText.lower(text);
            if (!BertText.isAscii(text)) {
                text = BertText.stripAccents(text);
            }
        }
        return text;
    }

    /**
     * Offsets of one word's pieces. The word is normalised per unit; when normalising the unit's
     * code points one by one gives the same string, each output keeps its own origin, otherwise
     * (NFC composed e + U+0301) every output spans the whole unit. Then the normalised word is
     * split as tokenizeWord splits it and the pieces are laid over its parts in order.
     */
    private void pieceOffsets(int[] word, int[] owner, List<String> pieces, List<TokenSpan> out) {
        List<Integer> normCps = new ArrayList<Integer>();
        List<int[]> spans = new ArrayList<int[]>();
        int u = 0;
        while (u < word.length) {
            int v = u + 1;
            while (v < word.length && UnicodeTables.isMark(word[v])) {
                v++;
            }
            String whole = normaliseChar(new String(word, u, v - u));
            StringBuilder joined = new StringBuilder();
            String[] singles = new String[v - u];
            for (int k = u; k < v; k++) {
                singles[k - u] = normaliseChar(new String(word, k, 1));
                joined.append(singles[k - u]);
            }
            if (joined.toString().equals(whole)) {
                for (int k = u; k < v; k++) {
                    int len = singles[k - u].codePointCount(0, singles[k - u].length());
                    for (int m = 0; m < len; m++) {
                        spans.add(new int[] {owner[k], owner[k] + 1});
                    }
                }
            } else {
                for (int m = 0; m < whole.codePointCount(0, whole.length()); m++) {
                    spans.add(new int[] {owner[u], owner[v - 1] + 1});
                }
            }
            for (int cp : CodePoints.of(whole)) {
                normCps.add(cp);
            }
            u = v;
        }
        int[] norm = new int[normCps.size()];
        for (int k = 0; k < norm.length; k++) {
            norm[k] = normCps.get(k);
        }
        List<int[]> parts = new ArrayList<int[]>();
        int i = 0;
        while (i < norm.length) {
            if (UnicodeTables.isPythonSpace(norm[i])) {
                i++;
                continue;
            }
            int a = i;
            while (i < norm.length && !UnicodeTables.isPythonSpace(norm[i])) {
                i++;
            }
            int start = a;
            for (String part : splitOnPunctuation(new String(norm, a, i - a))) {
                int len = part.codePointCount(0, part.length());
                parts.add(new int[] {start, start + len});
                start += len;
            }
        }
        int q = 0;
        for (int[] part : parts) {
            int cursor = part[0];
            int end = part[1];
            while (q < pieces.size() && cursor < end) {
                String piece = pieces.get(q++);
                int width = "[UNK]".equals(piece) ? end - cursor
                        : piece.codePointCount(0, piece.length()) - (piece.startsWith("##") ? 2 : 0);
                int stop = Math.min(end, cursor + Math.max(width, 1));
                out.add(new TokenSpan(piece, spans.get(cursor)[0], spans.get(stop - 1)[1]));
                cursor = stop;
            }
        }
        // Defensive, as in Python: pieces left over keep the word's span rather than vanish.
        while (q < pieces.size()) {
            out.add(new TokenSpan(pieces.get(q++), owner[0], owner[owner.length - 1] + 1));
        }
    }

    private void tokenizeWord(String word, List<String> out) {
        word = normaliseChar(word);
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
    @Override
    public int[] convertTokensToIds(List<String> tokens) {
        return idsIn(vocab, tokens);
    }

    public String idToToken(int id) {
        if (id < 0 || id >= idToToken.size()) {
            throw new AlbertCoreException(source + ": token id " + id + " outside vocab of " + idToToken.size());
        }
        return idToToken.get(id);
    }

    @Override
    public int vocabSize() {
        return idToToken.size();
    }
}
