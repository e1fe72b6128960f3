package org.albertedge.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A SentencePiece unigram model ({@code spiece.model}) in pure Java: what the phone needs to
 * segment text exactly as the C++ library (sentencepiece 0.2) does, with no native code.
 *
 * <p>Three parts, each the library's algorithm: the model proto (pieces, scores, types, trainer
 * and normalizer settings); the normalizer (the precompiled character map, a Darts double-array
 * trie of rewrite rules, applied longest-rule-first; user-defined symbols passed through; extra
 * whitespace removed; spaces escaped to U+2581; a dummy prefix), which also records for every
 * normalized byte the input byte it came from; and {@code EncodeOptimized}, the unigram Viterbi
 * over UTF-8 positions with the library's float arithmetic, unknown characters scored
 * {@code min_score - 10} and consecutive unknowns merged. Only what ALBERT models use is
 * supported: unigram models without byte fallback; anything else is refused by name.
 */
public final class SentencePieceModel {
    static final int NORMAL = 1;
    static final int UNKNOWN = 2;
    static final int CONTROL = 3;
    static final int USER_DEFINED = 4;
    static final int UNUSED = 5;
    static final int BYTE = 6;
    private static final int MODEL_UNIGRAM = 1;
    private static final float UNK_PENALTY = 10.0f;
    private static final byte[] SPACE_SYMBOL = {(byte) 0xE2, (byte) 0x96, (byte) 0x81};

    private final List<String> pieces;
    private final int[] types;
    private final float[] scores;
    /** Trie pieces (normal, user-defined, unused) by their UTF-8 bytes read as ISO-8859-1. */
    private final Map<String, Integer> trieIds = new HashMap<String, Integer>();
    /** Control and unknown pieces, looked up first as the library's reserved_id_map_. */
    private final Map<String, Integer> reservedIds = new HashMap<String, Integer>();
    private final List<byte[]> userDefined = new ArrayList<byte[]>();
    private final int maxPieceBytes;
    private final int unkId;
    private final float minScore;
    private final float maxScore;
    private final String padPiece;
    private final int[] charsMap;
    private final byte[] charsMapStrings;
    private final boolean addDummyPrefix;
    private final boolean removeExtraWhitespaces;
    private final boolean escapeWhitespaces;
    private final String source;

    /** One piece of an encoding: its text, id and the input bytes {@code [begin, end)} it covers. */
    public static final class Piece {
        public final String piece;
        public final int id;
        public final int begin;
        public final int end;

        Piece(String piece, int id, int begin, int end) {
            this.piece = piece;
            this.id = id;
            this.begin = begin;
            this.end = end;
        }
    }

    private SentencePieceModel(byte[] data, String source) {
        this.source = source;
        ProtoReader model = new ProtoReader(data, 0, data.length, source);
        List<String> names = new ArrayList<String>();
        List<Integer> typeList = new ArrayList<Integer>();
        List<Float> scoreList = new ArrayList<Float>();
        int modelType = MODEL_UNIGRAM;
        boolean byteFallback = false;
        boolean whitespaceSuffix = false;
        String pad = "<pad>";
        byte[] charsMapBlob = new byte[0];
        boolean dummy = true;
        boolean extra = true;
        boolean escape = true;
        while (model.next()) {
            if (model.field == 1 && model.wire == 2) {
                ProtoReader p = model.message();
                String piece = "";
                float score = 0.0f;
                int type = NORMAL;
                while (p.next()) {
                    if (p.field == 1 && p.wire == 2) {
                        piece = p.string();
                    } else if (p.field == 2 && p.wire == 5) {
                        score = Float.intBitsToFloat(p.fixed32());
                    } else if (p.field == 3 && p.wire == 0) {
                        type = (int) p.varint();
                    } else {
                        p.skip();
                    }
                }
                names.add(piece);
                scoreList.add(score);
                typeList.add(type);
            } else if (model.field == 2 && model.wire == 2) {
                ProtoReader t = model.message();
                while (t.next()) {
                    if (t.field == 3 && t.wire == 0) {
                        modelType = (int) t.varint();
                    } else if (t.field == 35 && t.wire == 0) {
                        byteFallback = t.varint() != 0;
                    } else if (t.field == 24 && t.wire == 0) {
                        whitespaceSuffix = t.varint() != 0;
                    } else if (t.field == 48 && t.wire == 2) {
                        pad = t.string();
                    } else {
                        t.skip();
                    }
                }
            } else if (model.field == 3 && model.wire == 2) {
                ProtoReader n = model.message();
                while (n.next()) {
                    if (n.field == 2 && n.wire == 2) {
                        charsMapBlob = n.bytes();
                    } else if (n.field == 3 && n.wire == 0) {
                        dummy = n.varint() != 0;
                    } else if (n.field == 4 && n.wire == 0) {
                        extra = n.varint() != 0;
                    } else if (n.field == 5 && n.wire == 0) {
                        escape = n.varint() != 0;
                    } else {
                        n.skip();
                    }
                }
            } else {
                model.skip();
            }
        }
        if (names.isEmpty()) {
            throw fail(source, "not a valid SentencePiece model (no pieces)");
        }
        if (modelType != MODEL_UNIGRAM) {
            throw fail(source, "SentencePiece model type " + modelType + " is not unigram (1); albert-core "
                    + "segments unigram models only, as ALBERT's are");
        }
        if (byteFallback || whitespaceSuffix) {
            throw fail(source, "SentencePiece model uses byte_fallback or treat_whitespace_as_suffix, which "
                    + "albert-core does not implement");
        }
        pieces = Collections.unmodifiableList(names);
        types = new int[names.size()];
        scores = new float[names.size()];
        int unk = -1;
        int maxBytes = 0;
        float lo = Float.MAX_VALUE;
        float hi = Float.MIN_NORMAL;  // the library starts from FLT_MIN, not -inf
        for (int i = 0; i < names.size(); i++) {
            types[i] = typeList.get(i);
            scores[i] = scoreList.get(i);
            String key = latin1(names.get(i).getBytes(StandardCharsets.UTF_8));
            if (types[i] == NORMAL || types[i] == USER_DEFINED || types[i] == UNUSED) {
                trieIds.put(key, i);
                maxBytes = Math.max(maxBytes, key.length());
                if (types[i] == USER_DEFINED) {
                    userDefined.add(names.get(i).getBytes(StandardCharsets.UTF_8));
                }
            } else if (types[i] == BYTE) {
                throw fail(source, "SentencePiece model has byte pieces, which albert-core does not implement");
            } else {
                reservedIds.put(names.get(i), i);
            }
            if (types[i] == UNKNOWN) {
                unk = i;
            }
            if (types[i] == NORMAL) {
                lo = Math.min(lo, scores[i]);
                hi = Math.max(hi, scores[i]);
            }
        }
        if (unk < 0) {
            throw fail(source, "SentencePiece model has no unknown piece (expected <unk>)");
        }
        unkId = unk;
        maxPieceBytes = maxBytes;
        minScore = lo;
        maxScore = hi;
        padPiece = pad;
        addDummyPrefix = dummy;
        removeExtraWhitespaces = extra;
        escapeWhitespaces = escape;
        if (charsMapBlob.length == 0) {
            charsMap = null;
            charsMapStrings = null;
        } else {
            if (charsMapBlob.length <= 4) {
                throw fail(source, "SentencePiece normalization rules are broken");
            }
            long trieSize = (charsMapBlob[0] & 0xFFL) | (charsMapBlob[1] & 0xFFL) << 8
                    | (charsMapBlob[2] & 0xFFL) << 16 | (charsMapBlob[3] & 0xFFL) << 24;
            if (trieSize >= charsMapBlob.length || trieSize % 4 != 0) {
                throw fail(source, "SentencePiece normalization trie size exceeds its blob");
            }
            charsMap = new int[(int) trieSize / 4];
            for (int i = 0; i < charsMap.length; i++) {
                int at = 4 + 4 * i;
                charsMap[i] = (charsMapBlob[at] & 0xFF) | (charsMapBlob[at + 1] & 0xFF) << 8
                        | (charsMapBlob[at + 2] & 0xFF) << 16 | (charsMapBlob[at + 3] & 0xFF) << 24;
            }
            charsMapStrings = java.util.Arrays.copyOfRange(charsMapBlob, 4 + (int) trieSize, charsMapBlob.length);
        }
    }

    /** Parse a serialized {@code ModelProto}; a broken or unsupported model raises naming {@code source}. */
    public static SentencePieceModel parse(byte[] data, String source) {
        if (data == null || data.length == 0) {
            throw fail(source, "SentencePiece model is empty");
        }
        return new SentencePieceModel(data, source);
    }

    public int size() {
        return pieces.size();
    }

    public int unkId() {
        return unkId;
    }

    public String idToPiece(int id) {
        if (id < 0 || id >= pieces.size()) {
            throw fail(source, "piece id " + id + " outside model of " + pieces.size());
        }
        return pieces.get(id);
    }

    /** The library's PieceToId: reserved (control, unknown) pieces first, then the trie, else unk. */
    public int pieceToId(String piece) {
        Integer id = reservedIds.get(piece);
        if (id != null) {
            return id;
        }
        id = trieIds.get(latin1(piece.getBytes(StandardCharsets.UTF_8)));
        return id == null ? unkId : id;
    }

    /** The library's pad_id() with ALBERT's fallbacks: the pad piece, else "<pad>", else 0. */
    public int padId() {
        int id = pieceToId(padPiece);
        if (id == unkId) {
            id = pieceToId("<pad>");
        }
        return id == unkId ? 0 : id;
    }

    /** {@code sp.encode(text, return_type="proto").pieces}: piece, id and input byte offsets. */
    public List<Piece> encode(String text) {
        byte[] input = text.getBytes(StandardCharsets.UTF_8);
        ByteList normalized = new ByteList(input.length * 3 + 3);
        IntList normToOrig = new IntList(input.length * 3 + 4);
        normalize(input, normalized, normToOrig);
        byte[] norm = normalized.toArray();
        List<Piece> out = new ArrayList<Piece>();
        int consumed = 0;
        boolean prevUnk = false;
        for (int[] p : encodeOptimized(norm)) {
            int begin = p[0];
            int end = p[1];
            int id = p[2];
            boolean unk = id == unkId;
            String piece = new String(norm, begin, end - begin, StandardCharsets.UTF_8);
            int origBegin = normToOrig.get(consumed);
            int origEnd = normToOrig.get(consumed + (end - begin));
            if (prevUnk && unk) {
                Piece last = out.remove(out.size() - 1);
                out.add(new Piece(last.piece + piece, last.id, last.begin, origEnd));
            } else {
                out.add(new Piece(piece, id, origBegin, origEnd));
            }
            consumed += end - begin;
            prevUnk = unk;
        }
        return out;
    }

    /** The library's Normalizer::Normalize with its norm_to_orig byte alignment. */
    private void normalize(byte[] input, ByteList normalized, IntList normToOrig) {
        int pos = 0;
        int consumed = 0;
        int[] prefix = new int[3];
        if (input.length == 0) {
            return;
        }
        if (removeExtraWhitespaces) {
            while (pos < input.length) {
                byte[] sp = normalizePrefix(input, pos, prefix);
                if (!(sp.length == 1 && sp[0] == ' ')) {
                    break;
                }
                pos += prefix[0];
                consumed += prefix[0];
            }
        }
        if (pos == input.length) {
            return;
        }
        if (addDummyPrefix) {
            addSpace(normalized, normToOrig, consumed);
        }
        boolean prevSpace = removeExtraWhitespaces;
        while (pos < input.length) {
            byte[] sp = normalizePrefix(input, pos, prefix);
            int start = 0;
            while (prevSpace && start < sp.length && sp[start] == ' ') {
                start++;
            }
            if (start < sp.length) {
                for (int n = start; n < sp.length; n++) {
                    if (escapeWhitespaces && sp[n] == ' ') {
                        for (byte b : SPACE_SYMBOL) {
                            normalized.add(b);
                            normToOrig.add(consumed);
                        }
                    } else {
                        normalized.add(sp[n]);
                        normToOrig.add(consumed);
                    }
                }
                prevSpace = sp[sp.length - 1] == ' ';
            }
            consumed += prefix[0];
            pos += prefix[0];
            if (!removeExtraWhitespaces) {
                prevSpace = false;
            }
        }
        if (removeExtraWhitespaces) {
            byte[] space = escapeWhitespaces ? SPACE_SYMBOL : new byte[] {' '};
            while (normalized.endsWith(space)) {
                int length = normalized.size() - space.length;
                consumed = normToOrig.get(length);
                normalized.truncate(length);
                normToOrig.truncate(length);
            }
        }
        normToOrig.add(consumed);
    }

    private void addSpace(ByteList normalized, IntList normToOrig, int consumed) {
        if (escapeWhitespaces) {
            for (byte b : SPACE_SYMBOL) {
                normalized.add(b);
                normToOrig.add(consumed);
            }
        } else {
            normalized.add((byte) ' ');
            normToOrig.add(consumed);
        }
    }

    /**
     * Normalizer::NormalizePrefix: the replacement for the input at {@code pos} and, in
     * {@code consumed[0]}, how many input bytes it replaces. A user-defined symbol passes through;
     * else the longest rule of the character map; else one UTF-8 character as it is.
     */
    private byte[] normalizePrefix(byte[] input, int pos, int[] consumed) {
        int best = 0;
        for (byte[] symbol : userDefined) {
            if (symbol.length > best && startsWith(input, pos, symbol)) {
                best = symbol.length;
            }
        }
        if (best > 0) {
            consumed[0] = best;
            return java.util.Arrays.copyOfRange(input, pos, pos + best);
        }
        int longestLength = 0;
        int longestValue = 0;
        if (charsMap != null) {
            int node = offset(charsMap[0]);
            for (int i = pos; i < input.length; i++) {
                int c = input[i] & 0xFF;
                node ^= c;
                if (node < 0 || node >= charsMap.length) {
                    break;
                }
                int unit = charsMap[node];
                if ((unit & 0x800000FF) != c) {
                    break;
                }
                node ^= offset(unit);
                if (((unit >>> 8) & 1) == 1 && node >= 0 && node < charsMap.length) {
                    int length = i - pos + 1;
                    if (longestLength == 0 || length > longestLength) {
                        longestLength = length;
                        longestValue = charsMap[node] & 0x7FFFFFFF;
                    }
                }
            }
        }
        if (longestLength == 0) {
            int length = Math.min(oneCharLen(input[pos]), input.length - pos);
            consumed[0] = length;
            return java.util.Arrays.copyOfRange(input, pos, pos + length);
        }
        consumed[0] = longestLength;
        // A value past the strings blob (a damaged model) reads as an empty replacement, never out of bounds.
        int start = Math.min(longestValue, charsMapStrings.length);
        int end = start;
        while (end < charsMapStrings.length && charsMapStrings[end] != 0) {
            end++;
        }
        return java.util.Arrays.copyOfRange(charsMapStrings, start, end);
    }

    /** Darts-clone's unit offset. */
    private static int offset(int unit) {
        return (unit >>> 10) << ((unit & (1 << 9)) >>> 6);
    }

    private static boolean startsWith(byte[] input, int pos, byte[] symbol) {
        if (input.length - pos < symbol.length) {
            return false;
        }
        for (int i = 0; i < symbol.length; i++) {
            if (input[pos + i] != symbol[i]) {
                return false;
            }
        }
        return true;
    }

    /** The library's OneCharLen: UTF-8 sequence length from the lead byte (1 for a stray byte). */
    static int oneCharLen(byte lead) {
        int hi = (lead & 0xFF) >>> 4;
        return hi < 12 ? 1 : hi < 14 ? 2 : hi == 14 ? 3 : 4;
    }

    /**
     * unigram::Model::EncodeOptimized: best path over UTF-8 positions, float scores as the library
     * adds them. Returns {begin, end, id} per piece in order (byte offsets into {@code norm}).
     */
    private List<int[]> encodeOptimized(byte[] norm) {
        int size = norm.length;
        List<int[]> out = new ArrayList<int[]>();
        if (size == 0) {
            return out;
        }
        float unkScore = minScore - UNK_PENALTY;
        int[] bestId = new int[size + 1];
        float[] bestScore = new float[size + 1];
        int[] startsAt = new int[size + 1];
        java.util.Arrays.fill(startsAt, -1);
        java.util.Arrays.fill(bestId, -1);
        String key = latin1(norm);
        int start = 0;
        while (start < size) {
            float tillHere = bestScore[start];
            boolean hasSingleNode = false;
            int mblen = Math.min(oneCharLen(norm[start]), size - start);
            int limit = Math.min(size, start + maxPieceBytes);
            for (int end = start + 1; end <= limit; end++) {
                Integer id = trieIds.get(key.substring(start, end));
                if (id == null || types[id] == UNUSED) {
                    continue;
                }
                int length = end - start;
                boolean better;
                float candidate;
                if (types[id] == USER_DEFINED) {
                    // (length * max_score_ - 0.1) is a double in the library; so is the sum.
                    double score = (double) (length * maxScore) - 0.1;
                    double sum = score + tillHere;
                    better = startsAt[end] == -1 || sum > bestScore[end];
                    candidate = (float) sum;
                } else {
                    candidate = scores[id] + tillHere;
                    better = startsAt[end] == -1 || candidate > bestScore[end];
                }
                if (better) {
                    bestScore[end] = candidate;
                    startsAt[end] = start;
                    bestId[end] = id;
                }
                if (!hasSingleNode && length == mblen) {
                    hasSingleNode = true;
                }
            }
            if (!hasSingleNode) {
                int end = start + mblen;
                float candidate = unkScore + tillHere;
                if (startsAt[end] == -1 || candidate > bestScore[end]) {
                    bestScore[end] = candidate;
                    startsAt[end] = start;
                    bestId[end] = unkId;
                }
            }
            start += mblen;
        }
        int end = size;
        while (end > 0) {
            int begin = startsAt[end];
            out.add(new int[] {begin, end, bestId[end]});
            end = begin;
        }
        Collections.reverse(out);
        return out;
    }

    private static String latin1(byte[] bytes) {
        return new String(bytes, StandardCharsets.ISO_8859_1);
    }

    private static AlbertCoreException fail(String source, String message) {
        return new AlbertCoreException(source + ": " + message);
    }

    private static final class ByteList {
        private byte[] items;
        private int size;

        ByteList(int capacity) {
            items = new byte[Math.max(capacity, 4)];
        }

        void add(byte b) {
            if (size == items.length) {
                items = java.util.Arrays.copyOf(items, size * 2);
            }
            items[size++] = b;
        }

        int size() {
            return size;
        }

        void truncate(int n) {
            size = n;
        }

        boolean endsWith(byte[] suffix) {
            if (size < suffix.length) {
                return false;
            }
            for (int i = 0; i < suffix.length; i++) {
                if (items[size - suffix.length + i] != suffix[i]) {
                    return false;
                }
            }
            return true;
        }

        byte[] toArray() {
            return java.util.Arrays.copyOf(items, size);
        }
    }

    private static final class IntList {
        private int[] items;
        private int size;

        IntList(int capacity) {
            items = new int[Math.max(capacity, 4)];
        }

        void add(int v) {
            if (size == items.length) {
                items = java.util.Arrays.copyOf(items, size * 2);
            }
            items[size++] = v;
        }

        int get(int i) {
            return items[i];
        }

        void truncate(int n) {
            size = n;
        }
    }
}
