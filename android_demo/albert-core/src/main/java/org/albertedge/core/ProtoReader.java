package org.albertedge.core;

import java.nio.charset.StandardCharsets;

/**
 * Minimal protobuf wire-format reader over a byte range, bounds-checked: enough for
 * SentencePiece's ModelProto without the protobuf runtime (every length is checked against the
 * range, so a damaged model fails with an {@link AlbertCoreException} naming its source).
 */
final class ProtoReader {
    private final byte[] data;
    private int pos;
    private final int end;
    private final String source;
    int field;
    int wire;

    ProtoReader(byte[] data, int start, int end, String source) {
        this.data = data;
        this.pos = start;
        this.end = end;
        this.source = source;
    }

    boolean next() {
        if (pos >= end) {
            return false;
        }
        long tag = varint();
        field = (int) (tag >>> 3);
        wire = (int) (tag & 7);
        return true;
    }

    long varint() {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= end) {
                throw broken();
            }
            byte b = data[pos++];
            value |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw broken();
    }

    int fixed32() {
        if (end - pos < 4) {
            throw broken();
        }
        int v = (data[pos] & 0xFF) | (data[pos + 1] & 0xFF) << 8 | (data[pos + 2] & 0xFF) << 16
                | (data[pos + 3] & 0xFF) << 24;
        pos += 4;
        return v;
    }

    private int length() {
        long n = varint();
        if (n < 0 || n > end - pos) {
            throw broken();
        }
        return (int) n;
    }

    byte[] bytes() {
        int n = length();
        byte[] out = java.util.Arrays.copyOfRange(data, pos, pos + n);
        pos += n;
        return out;
    }

    String string() {
        return new String(bytes(), StandardCharsets.UTF_8);
    }

    ProtoReader message() {
        int n = length();
        ProtoReader sub = new ProtoReader(data, pos, pos + n, source);
        pos += n;
        return sub;
    }

    void skip() {
        switch (wire) {
            case 0:
                varint();
                break;
            case 1:
                if (end - pos < 8) {
                    throw broken();
                }
                pos += 8;
                break;
            case 2:
                int n = length();  // not "pos += length()": Java reads pos before length() moves it
                pos += n;
                break;
            case 5:
                fixed32();
                break;
            default:
                throw broken();
        }
    }

    private AlbertCoreException broken() {
        return new AlbertCoreException(source + ": not a valid SentencePiece model (broken protobuf at byte " + pos + ")");
    }
}
