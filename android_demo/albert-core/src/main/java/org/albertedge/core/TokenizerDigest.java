package org.albertedge.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * Compact parity check over all of Unicode: the SHA-256 of how a block of code points tokenizes,
 * each placed between a prefix and a suffix. Python's {@code albert_edge.android.goldens.codepoint_digests}
 * computes the same digests, so a JVM test, or the phone itself, can prove the two tokenizers
 * agree on every character without shipping millions of golden lines.
 */
public final class TokenizerDigest {
    private TokenizerDigest() {}

    /**
     * Hex SHA-256 of the tokens of {@code before + cp + after} for cp in
     * {@code [block * size, (block + 1) * size)}, surrogates skipped; tokens joined by U+0001,
     * code points by '\n'.
     */
    public static String blockDigest(TextTokenizer tokenizer, String before, String after, int block, int size) {
        StringBuilder sb = new StringBuilder();
        boolean first = true;
        for (int cp = block * size; cp < (block + 1) * size; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) {
                continue;
            }
            if (!first) {
                sb.append('\n');
            }
            first = false;
            List<String> tokens = tokenizer.tokenize(before + new String(Character.toChars(cp)) + after);
            for (int i = 0; i < tokens.size(); i++) {
                if (i > 0) {
                    sb.append('\u0001');
                }
                sb.append(tokens.get(i));
            }
        }
        byte[] hash;
        try {
            hash = MessageDigest.getInstance("SHA-256").digest(sb.toString().getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new AlbertCoreException("SHA-256: not available on this platform");
        }
        StringBuilder hex = new StringBuilder();
        for (byte x : hash) {
            hex.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        }
        return hex.toString();
    }
}
