package org.albertedge.core;

/**
 * One token and the characters of the ORIGINAL text it came from.
 *
 * <p>Offsets convention: {@code start}/{@code end} count Unicode code points, exactly Python's
 * {@code str} indices, so they compare with the Python goldens as they are. Java strings index
 * UTF-16 units (an emoji or a CJK Extension B ideograph is two), so code that cuts a Java string
 * converts at that boundary with {@link #utf16Offset}, and only there.
 */
public final class TokenSpan {
    public final String token;
    /** First code point of the token's characters in the original text. */
    public final int start;
    /** One past the last code point. */
    public final int end;

    public TokenSpan(String token, int start, int end) {
        this.token = token;
        this.start = start;
        this.end = end;
    }

    /** The UTF-16 index in {@code text} of code point offset {@code codePoints} (0..length in code points). */
    public static int utf16Offset(String text, int codePoints) {
        return text.offsetByCodePoints(0, codePoints);
    }

    /** {@code text[start:end]} in Python's terms: the characters this token came from. */
    public String cut(String text) {
        return text.substring(utf16Offset(text, start), utf16Offset(text, end));
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof TokenSpan)) {
            return false;
        }
        TokenSpan other = (TokenSpan) o;
        return token.equals(other.token) && start == other.start && end == other.end;
    }

    @Override
    public int hashCode() {
        return (token.hashCode() * 31 + start) * 31 + end;
    }

    @Override
    public String toString() {
        return "(" + token + ", " + start + ", " + end + ")";
    }
}
