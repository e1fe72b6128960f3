package org.albertedge.core;

import java.util.ArrayList;
import java.util.List;

/**
 * Entity spans from per-token tags (BIO, BIOES/BILOU, IO): the Java twin of Python's
 * {@code albert_edge.tasks.entities}, rule for rule.
 *
 * <p>Lenient like Hugging Face's {@code aggregation_strategy="simple"} and seqeval's default: an
 * {@code I-X} or {@code E-X} that does not continue an open X entity starts a new one; {@code E-X}
 * and {@code S-X} close their entity; an unprefixed label X (IO) acts as {@code I-X}; "O" closes.
 */
public final class Entities {
    public static final String OUTSIDE = "outside";
    public static final String BEGIN = "begin";
    public static final String INSIDE = "inside";
    public static final String END = "end";
    public static final String SINGLE = "single";

    private Entities() {}

    /** One tag's role and entity type ({@code type} null for "outside"). */
    public static final class Tag {
        public final String role;
        public final String type;

        Tag(String role, String type) {
            this.role = role;
            this.type = type;
        }
    }

    /** Tokens {@code [first, last)} form one entity of {@code type}. */
    public static final class TagSpan {
        public final int first;
        public final int last;
        public final String type;

        public TagSpan(int first, int last, String type) {
            this.first = first;
            this.last = last;
            this.type = type;
        }

        @Override
        public String toString() {
            return "(" + first + ", " + last + ", " + type + ")";
        }
    }

    /**
     * Python's {@code head.upper()} for a one-code-point prefix, mapped to a role: B/I/E/L/S/U in
     * either case, plus the two non-ASCII letters Python upper-cases onto them (U+0131 dotless i
     * -> I, U+017F long s -> S), so both sides read the same label file the same way.
     */
    private static String role(String head) {
        if (head.codePointCount(0, head.length()) != 1) {
            return null;
        }
        int cp = head.codePointAt(0);
        if (cp == 0x131) {
            cp = 'I';
        } else if (cp == 0x17F) {
            cp = 'S';
        } else if (cp >= 'a' && cp <= 'z') {
            cp -= 'a' - 'A';
        }
        switch (cp) {
            case 'B':
                return BEGIN;
            case 'I':
                return INSIDE;
            case 'E':
            case 'L':
                return END;
            case 'S':
            case 'U':
                return SINGLE;
            default:
                return null;
        }
    }

    /** The role and type of one label string: "B-PER" is (begin, PER), "O" is (outside, null). */
    public static Tag parseTag(String tag) {
        if (tag.isEmpty() || "O".equals(tag)) {
            return new Tag(OUTSIDE, null);
        }
        for (char sep : new char[] {'-', '_'}) {
            int at = tag.indexOf(sep);
            if (at < 0) {
                continue;
            }
            String role = role(tag.substring(0, at));
            String rest = tag.substring(at + 1);
            if (role != null && !rest.isEmpty()) {
                return new Tag(role, rest);
            }
        }
        return new Tag(INSIDE, tag);
    }

    /** Token tags -> entities as [first token, last token + 1) and type, in order. */
    public static List<TagSpan> decodeTags(List<String> tags) {
        List<TagSpan> out = new ArrayList<TagSpan>();
        int start = -1;
        String kind = null;
        for (int i = 0; i < tags.size(); i++) {
            Tag tag = parseTag(tags.get(i));
            if (OUTSIDE.equals(tag.role)) {
                close(out, start, kind, i);
                start = -1;
                kind = null;
            } else if (BEGIN.equals(tag.role)) {
                close(out, start, kind, i);
                start = i;
                kind = tag.type;
            } else if (SINGLE.equals(tag.role)) {
                close(out, start, kind, i);
                start = -1;
                kind = null;
                out.add(new TagSpan(i, i + 1, tag.type));
            } else {
                if (start < 0 || !tag.type.equals(kind)) {
                    close(out, start, kind, i);
                    start = i;
                    kind = tag.type;
                }
                if (END.equals(tag.role)) {
                    close(out, start, kind, i + 1);
                    start = -1;
                    kind = null;
                }
            }
        }
        close(out, start, kind, tags.size());
        return out;
    }

    private static void close(List<TagSpan> out, int start, String kind, int end) {
        if (start >= 0 && kind != null) {
            out.add(new TagSpan(start, end, kind));
        }
    }
}
