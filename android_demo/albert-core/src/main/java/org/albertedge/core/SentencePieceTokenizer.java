package org.albertedge.core;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * SentencePiece tokenization with Google ALBERT's preprocessing: the Java twin of Python's
 * {@code albert_edge.tokenizer.SentencePieceTokenizer}, including its offsets. XLM-R's model in
 * fairseq's id layout (what {@code convert} packs for XLM-R) is recognised by its first pieces and
 * tokenized as Python does it: no preprocessing, no re-split, {@code <s> a </s></s> b </s>}.
 *
 * <p>Before segmentation: whitespace runs collapse to one space and the ends are stripped, a
 * {@code ``} or {@code ''} pair becomes {@code "}, NFKD with combining marks dropped (unless
 * {@code keepAccents}), lower-casing. After: a piece ending in digit + comma is re-split so the
 * comma stands alone. Offsets (code points, see {@link TokenSpan}) map SentencePiece's byte
 * offsets in the preprocessed text back through a per-character alignment; a quote pair maps to
 * both original characters, a bare U+2581 takes the next character's span.
 */
public final class SentencePieceTokenizer extends AbstractTextTokenizer {
    static final int SPIECE_UNDERLINE = 0x2581;

    private final SentencePieceModel model;
    private final boolean keepAccents;
    /**
     * XLM-R's model in fairseq's id layout ({@code <s> <pad> </s>} first, no [CLS]/[SEP]), as the pack
     * carries it: {@code <s> text </s>}, pairs joined by {@code </s></s>}, token type 0, and none of
     * ALBERT's preprocessing or digit-comma re-split (XLM-R is cased; its normaliser is the model's).
     */
    private final boolean fairseq;

    public SentencePieceTokenizer(SentencePieceModel model, boolean doLowerCase, boolean keepAccents, String source) {
        this(model, isFairseq(model), doLowerCase, keepAccents, source);
    }

    private SentencePieceTokenizer(SentencePieceModel model, boolean fairseq, boolean doLowerCase, boolean keepAccents,
                                   String source) {
        super(source, doLowerCase && !fairseq, specials(model, fairseq, source));
        this.model = model;
        this.keepAccents = keepAccents || fairseq;
        this.fairseq = fairseq;
    }

    /** Python's test: [CLS] or [SEP] missing and pieces 0-2 are {@code <s> <pad> </s>}. */
    private static boolean isFairseq(SentencePieceModel model) {
        boolean missing = model.pieceToId("[CLS]") == model.unkId() || model.pieceToId("[SEP]") == model.unkId();
        return missing && model.size() >= 3 && "<s>".equals(model.idToPiece(0)) && "<pad>".equals(model.idToPiece(1))
                && "</s>".equals(model.idToPiece(2));
    }

    /** [CLS], [SEP] (both required), unk and pad ids of an ALBERT spiece.model; XLM-R's: {@code <s>}, {@code </s>}. */
    private static Specials specials(SentencePieceModel model, boolean fairseq, String source) {
        if (fairseq) {
            return new Specials(model.pieceToId("<s>"), model.pieceToId("</s>"), model.unkId(), model.padId());
        }
        List<String> missing = new ArrayList<String>();
        int clsId = model.pieceToId("[CLS]");
        int sepId = model.pieceToId("[SEP]");
        if (clsId == model.unkId()) {
            missing.add("[CLS]");
        }
        if (sepId == model.unkId()) {
            missing.add("[SEP]");
        }
        if (!missing.isEmpty()) {
            throw new AlbertCoreException(source + ": SentencePiece model has no " + join(missing, ", ")
                    + " piece (expected an ALBERT spiece.model, or XLM-R's with <s> <pad> </s> first)");
        }
        return new Specials(clsId, sepId, model.unkId(), model.padId());
    }

    /** True for XLM-R's fairseq-layout model (see {@link #fairseq}). */
    public boolean isFairseq() {
        return fairseq;
    }

    @Override
    public String clsToken() {
        return fairseq ? "<s>" : "[CLS]";
    }

    @Override
    public String sepToken() {
        return fairseq ? "</s>" : "[SEP]";
    }

    @Override
    public int pairSeparators() {
        return fairseq ? 2 : 1;
    }

    @Override
    public int pairTypeId() {
        return fairseq ? 0 : 1;
    }

    public static SentencePieceTokenizer fromModelBytes(byte[] data, boolean doLowerCase, String source) {
        return new SentencePieceTokenizer(SentencePieceModel.parse(data, source), doLowerCase, false, source);
    }

    /** ALBERT's {@code preprocess_text}, on the whole string as Python's {@code preprocess} (XLM-R: the text unchanged). */
    String preprocess(String text) {
        if (fairseq) {
            return text;
        }
        StringBuilder sb = new StringBuilder();
        for (String word : CodePoints.splitOnPythonWhitespace(text)) {
            if (sb.length() > 0) {
                sb.append(' ');
            }
            sb.append(word);
        }
        String out = sb.toString().replace("``", "\"").replace("''", "\"");
        if (!keepAccents && !BertText.isAscii(out)) {
            StringBuilder kept = new StringBuilder();
            for (int cp : CodePoints.of(out)) {
                for (int part : Normalization.nfkdOf(cp)) {
                    if (UnicodeTables.combiningClass(part) == 0) {
                        kept.appendCodePoint(part);
                    }
                }
            }
            out = kept.toString();
        }
        return doLowerCase ? BertText.lower(out) : out;
    }

    @Override
    public List<String> tokenize(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        String pre = preprocess(text);
        List<String> out = new ArrayList<String>();
        if (pre.isEmpty()) {
            return out;
        }
        for (SentencePieceModel.Piece p : model.encode(pre)) {
            List<String> split = resplit(p.piece);
            if (split == null) {
                out.add(p.piece);
            } else {
                out.addAll(split);
            }
        }
        return out;
    }

    /** ALBERT's re-split of a piece ending in digit + comma ("▁1," -> "▁1", ","); null otherwise. */
    List<String> resplit(String piece) {
        int[] cps = CodePoints.of(piece);
        int n = cps.length;
        if (fairseq || !(n > 1 && cps[n - 1] == ',' && UnicodeTables.isPythonDigit(cps[n - 2]))) {
            return null;
        }
        String body = CodePoints.fromRange(cps, 0, n - 1).replace(new String(Character.toChars(SPIECE_UNDERLINE)), "");
        List<String> sub = new ArrayList<String>();
        for (SentencePieceModel.Piece p : model.encode(body)) {
            sub.add(p.piece);
        }
        if (!sub.isEmpty() && cps[0] != SPIECE_UNDERLINE && sub.get(0).codePointAt(0) == SPIECE_UNDERLINE) {
            String first = sub.get(0);
            int rest = first.offsetByCodePoints(0, 1);
            if (rest == first.length()) {
                sub.remove(0);
            } else {
                sub.set(0, first.substring(rest));
            }
        }
        sub.add(",");
        return sub;
    }

    /** Python's _invisible: whitespace, U+FFFD, or category Cc/Cf (what nmt_nfkc drops or blanks). */
    private static boolean invisible(int cp) {
        return UnicodeTables.isPythonSpace(cp) || cp == 0xFFFD || UnicodeTables.isControlOrFormat(cp);
    }

    /** Python's {@code _preprocess_aligned}: the preprocessed code points and each one's original span. */
    private List<int[]> preprocessAligned(String text, List<Integer> charsOut) {
        int[] cps = CodePoints.of(text);
        if (fairseq) {
            List<int[]> identity = new ArrayList<int[]>();
            for (int i = 0; i < cps.length; i++) {
                charsOut.add(cps[i]);
                identity.add(new int[] {i, i + 1});
            }
            return identity;
        }
        List<Integer> chars = new ArrayList<Integer>();
        List<int[]> spans = new ArrayList<int[]>();
        int previousEnd = -1;
        int i = 0;
        while (i < cps.length) {
            if (UnicodeTables.isPythonSpace(cps[i])) {
                i++;
                continue;
            }
            int a = i;
            while (i < cps.length && !UnicodeTables.isPythonSpace(cps[i])) {
                i++;
            }
            if (previousEnd >= 0) {
                chars.add((int) ' ');
                spans.add(new int[] {previousEnd, a});
            }
            for (int k = a; k < i; k++) {
                chars.add(cps[k]);
                spans.add(new int[] {k, k + 1});
            }
            previousEnd = i;
        }
        for (int quote : new int[] {'`', '\''}) {
            List<Integer> mergedChars = new ArrayList<Integer>();
            List<int[]> mergedSpans = new ArrayList<int[]>();
            int j = 0;
            while (j < chars.size()) {
                if (j + 1 < chars.size() && chars.get(j) == quote && chars.get(j + 1) == quote) {
                    mergedChars.add((int) '"');
                    mergedSpans.add(new int[] {spans.get(j)[0], spans.get(j + 1)[1]});
                    j += 2;
                } else {
                    mergedChars.add(chars.get(j));
                    mergedSpans.add(spans.get(j));
                    j++;
                }
            }
            chars = mergedChars;
            spans = mergedSpans;
        }
        boolean ascii = true;
        for (int cp : chars) {
            ascii &= cp < 0x80;
        }
        if (!keepAccents && !ascii) {
            List<Integer> decomposed = new ArrayList<Integer>();
            List<int[]> decomposedSpans = new ArrayList<int[]>();
            for (int k = 0; k < chars.size(); k++) {
                for (int part : Normalization.nfkdOf(chars.get(k))) {
                    if (UnicodeTables.combiningClass(part) == 0) {
                        decomposed.add(part);
                        decomposedSpans.add(spans.get(k));
                    }
                }
            }
            chars = decomposed;
            spans = decomposedSpans;
        }
        if (doLowerCase) {
            int[] whole = CodePoints.of(BertText.lower(codePointString(chars)));
            if (whole.length == chars.size()) {
                for (int k = 0; k < whole.length; k++) {
                    chars.set(k, whole[k]);
                }
            } else {
                List<Integer> lowered = new ArrayList<Integer>();
                List<int[]> loweredSpans = new ArrayList<int[]>();
                for (int k = 0; k < chars.size(); k++) {
                    for (int cp : CodePoints.of(BertText.lower(new String(Character.toChars(chars.get(k)))))) {
                        lowered.add(cp);
                        loweredSpans.add(spans.get(k));
                    }
                }
                chars = lowered;
                spans = loweredSpans;
            }
        }
        charsOut.addAll(chars);
        return spans;
    }

    private static String codePointString(List<Integer> cps) {
        StringBuilder sb = new StringBuilder(cps.size());
        for (int cp : cps) {
            sb.appendCodePoint(cp);
        }
        return sb.toString();
    }

    @Override
    public List<TokenSpan> tokenizeWithOffsets(String text) {
        if (text == null) {
            throw new AlbertCoreException("text: expected a string, got null");
        }
        List<Integer> chars = new ArrayList<Integer>();
        List<int[]> spans = preprocessAligned(text, chars);
        List<TokenSpan> out = new ArrayList<TokenSpan>();
        if (chars.isEmpty()) {
            return out;
        }
        String pre = codePointString(chars);
        byte[] utf8 = pre.getBytes(StandardCharsets.UTF_8);
        int[] charOfByte = new int[utf8.length + 1];
        int offset = 0;
        for (int index = 0; index < chars.size(); index++) {
            int width = new String(Character.toChars(chars.get(index))).getBytes(StandardCharsets.UTF_8).length;
            for (int b = offset; b < offset + width; b++) {
                charOfByte[b] = index;
            }
            offset += width;
        }
        charOfByte[offset] = chars.size();
        String underline = new String(Character.toChars(SPIECE_UNDERLINE));
        for (SentencePieceModel.Piece p : model.encode(pre)) {
            int begin = charOfByte[p.begin];
            int end = charOfByte[p.end];
            String shown = p.piece.replace(underline, "");
            while (begin < end && invisible(chars.get(begin))
                    && !shown.startsWith(new String(Character.toChars(chars.get(begin))))) {
                begin++;
            }
            while (end > begin && invisible(chars.get(end - 1))
                    && !shown.endsWith(new String(Character.toChars(chars.get(end - 1))))) {
                end--;
            }
            int start;
            int stop;
            if (begin < end) {
                start = spans.get(begin)[0];
                stop = spans.get(end - 1)[1];
            } else if (begin < chars.size()) {
                start = spans.get(begin)[0];
                stop = spans.get(begin)[1];
            } else {
                start = spans.get(spans.size() - 1)[1];
                stop = start;
            }
            List<String> split = resplit(p.piece);
            if (split == null) {
                out.add(new TokenSpan(p.piece, start, stop));
                continue;
            }
            int[] comma = begin < end ? spans.get(end - 1) : new int[] {start, stop};
            for (int k = 0; k < split.size() - 1; k++) {
                out.add(new TokenSpan(split.get(k), start, comma[0]));
            }
            out.add(new TokenSpan(",", comma[0], comma[1]));
        }
        return out;
    }

    @Override
    public int[] convertTokensToIds(List<String> tokens) {
        int[] ids = new int[tokens.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = model.pieceToId(tokens.get(i));
        }
        return ids;
    }

    @Override
    public int vocabSize() {
        return model.size();
    }

    public String source() {
        return source;
    }
}
