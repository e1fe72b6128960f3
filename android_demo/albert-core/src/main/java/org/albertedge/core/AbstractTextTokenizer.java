package org.albertedge.core;

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
