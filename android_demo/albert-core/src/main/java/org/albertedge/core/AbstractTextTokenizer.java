package org.albertedge.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What {@link WordPieceTokenizer} and {@link SentencePieceTokenizer} hold alike: the source named in
 * errors, the lower-case flag and the four special ids, with the {@link TextTokenizer} accessors
 * written once. Each subclass finds its ids (and rejects a vocab that lacks them) in a static
 * method, so that the fields stay final.
 */
abstract class AbstractTextTokenizer implements TextTokenizer {
    /** The four special token ids of a vocab, as the subclass found them. */
    static final class Specials {
        final int cls;
        final int sep;
        final int unk;
        final int pad;

        Specials(int cls, int sep, int unk, int pad) {
            this.cls = cls;
            this.sep = sep;
            this.unk = unk;
            this.pad = pad;
        }
    }

    /**
     * Refuses a vocab without the special tokens the template needs: one line naming the source, the
     * missing tokens and what was expected ({@code "vocab.txt: vocab has no [CLS], [SEP] token (expected a
     * BERT vocab.txt)"}). WordPiece and byte-level BPE read their token -> id maps alike, so they check
     * them here once.
     */
    static void requireTokens(Map<String, Integer> vocab, String[] names, String source, String what,
                              String expected) {
        List<String> missing = new ArrayList<String>();
        for (String name : names) {
            if (!vocab.containsKey(name)) {
                missing.add(name);
            }
        }
        if (!missing.isEmpty()) {
            throw new AlbertCoreException(source + ": " + what + " has no " + join(missing, ", ") + expected);
        }
    }

    /** {@code parts} joined by {@code separator} (String.join needs Android API 26; the app's minSdk is 24). */
    static String join(List<String> parts, String separator) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            if (i > 0) {
                sb.append(separator);
            }
            sb.append(parts.get(i));
        }
        return sb.toString();
    }

    /** Tokens -> ids through a token -> id map, the unknown id for a token it lacks (WordPiece and byte-level BPE). */
    final int[] idsIn(Map<String, Integer> vocab, List<String> tokens) {
        int[] ids = new int[tokens.size()];
        for (int i = 0; i < ids.length; i++) {
            Integer id = vocab.get(tokens.get(i));
            ids[i] = id == null ? unkId() : id;
        }
        return ids;
    }

    protected final String source;
    protected final boolean doLowerCase;
    private final Specials specials;

    AbstractTextTokenizer(String source, boolean doLowerCase, Specials specials) {
        this.source = source;
        this.doLowerCase = doLowerCase;
        this.specials = specials;
    }

    @Override
    public int clsId() {
        return specials.cls;
    }

    @Override
    public int sepId() {
        return specials.sep;
    }

    @Override
    public int unkId() {
        return specials.unk;
    }

    @Override
    public int padId() {
        return specials.pad;
    }

    @Override
    public boolean doLowerCase() {
        return doLowerCase;
    }
}
