package org.albertedge.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;

/**
 * Reads the ZIP archive appended to a .tflite straight from its bytes.
 *
 * <p>An Android asset is a ByteBuffer (memory-mapped) or a stream, not a File, so
 * {@code java.util.zip.ZipFile} cannot open it. This parses the End-Of-Central-Directory record
 * and the central directory itself. The model file is untrusted input: every offset and length
 * is checked against the buffer, sizes are capped before copying, members are only ever
 * returned as bytes keyed by name (nothing is written to a path), and only ZIP_STORED members
 * are accepted, as the pack format specifies.
 */
final class ZipTail {
    private static final int EOCD_SIGNATURE = 0x06054b50;
    private static final int CENTRAL_SIGNATURE = 0x02014b50;
    private static final int LOCAL_SIGNATURE = 0x04034b50;
    private static final int EOCD_SIZE = 22;
    private static final int CENTRAL_SIZE = 46;
    private static final int LOCAL_SIZE = 30;
    private static final int MAX_COMMENT = 0xFFFF;
    private static final int METHOD_STORED = 0;

    private ZipTail() {}

    /** Limits on what one archive may make us copy into memory. */
    static final class Caps {
        final int maxMembers;
        final Map<String, Integer> perMember;
        final int otherMember;

        Caps(int maxMembers, Map<String, Integer> perMember, int otherMember) {
            this.maxMembers = maxMembers;
            this.perMember = perMember;
            this.otherMember = otherMember;
        }

        int capFor(String name) {
            Integer cap = perMember.get(name);
            return cap == null ? otherMember : cap;
        }
    }

    /** Offset of the EOCD record, or -1 when the buffer ends with no ZIP archive. */
    static int findEndOfCentralDirectory(ByteBuffer buf) {
        int limit = buf.limit();
        int lowest = Math.max(0, limit - EOCD_SIZE - MAX_COMMENT);
        for (int pos = limit - EOCD_SIZE; pos >= lowest; pos--) {
            if (buf.getInt(pos) == EOCD_SIGNATURE) {
                int commentLength = u16(buf, pos + 20);
                if (pos + EOCD_SIZE + commentLength == limit) {
                    return pos;
                }
            }
        }
        return -1;
    }

    /**
     * Member name -> bytes, in central-directory order.
     *
     * @param buf the whole model file; its position and limit are not changed
     * @return null when no archive is appended
     */
    static Map<String, byte[]> readMembers(ByteBuffer buf, Caps caps, String source) {
        ByteBuffer b = buf.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        b.position(0);
        b.limit(buf.limit());
        int eocd = findEndOfCentralDirectory(b);
        if (eocd < 0) {
            return null;
        }
        int disk = u16(b, eocd + 4);
        int cdDisk = u16(b, eocd + 6);
        int entriesOnDisk = u16(b, eocd + 8);
        int entries = u16(b, eocd + 10);
        long cdSize = u32(b, eocd + 12);
        long cdOffset = u32(b, eocd + 16);
        if (disk != 0 || cdDisk != 0 || entriesOnDisk != entries) {
            throw fail(source, "the pack archive spans several disks");
        }
        if (entries == 0xFFFF || cdSize == 0xFFFFFFFFL || cdOffset == 0xFFFFFFFFL) {
            throw fail(source, "the pack archive is ZIP64, which pack members never need");
        }
        if (entries > caps.maxMembers) {
            throw fail(source, "pack has " + entries + " members, at most " + caps.maxMembers + " are allowed");
        }
        if (cdSize > eocd) {
            throw fail(source, "the pack archive is corrupt (central directory larger than the file)");
        }
        // Offsets are absolute from the start of the model file (the pack format); an archive
        // whose offsets count from its own start is shifted by "concat", as zipfile does.
        long concat = eocd - cdSize - cdOffset;
        if (concat < 0) {
            throw fail(source, "the pack archive is corrupt (central directory offset past its end)");
        }
        long cdStart = eocd - cdSize;
        Map<String, byte[]> members = new LinkedHashMap<String, byte[]>();
        long pos = cdStart;
        for (int i = 0; i < entries; i++) {
            if (pos + CENTRAL_SIZE > eocd || b.getInt((int) pos) != CENTRAL_SIGNATURE) {
                throw fail(source, "the pack archive is corrupt (bad central directory entry " + i + ")");
            }
            int p = (int) pos;
            int flags = u16(b, p + 8);
            int method = u16(b, p + 10);
            long crc = u32(b, p + 16);
            long compressedSize = u32(b, p + 20);
            long size = u32(b, p + 24);
            int nameLength = u16(b, p + 28);
            int extraLength = u16(b, p + 30);
            int commentLength = u16(b, p + 32);
            long localOffset = u32(b, p + 42) + concat;
            if (pos + CENTRAL_SIZE + nameLength + extraLength + commentLength > eocd) {
                throw fail(source, "the pack archive is corrupt (central directory entry " + i + " overruns it)");
            }
            String name = utf8Name(b, p + CENTRAL_SIZE, nameLength, flags, source);
            checkName(name, source);
            if (members.containsKey(name)) {
                throw fail(source, "pack member " + name + " appears twice");
            }
            if ((flags & 1) != 0) {
                throw fail(source, "pack member " + name + " is encrypted");
            }
            if (method != METHOD_STORED || compressedSize != size) {
                throw fail(source, "pack member " + name + " is compressed; pack members must be ZIP_STORED");
            }
            int cap = caps.capFor(name);
            if (size > cap) {
                throw fail(source, "pack member " + name + " is " + size + " bytes, the limit is " + cap);
            }
            members.put(name, readLocal(b, localOffset, cdStart, name, (int) size, crc, source));
            pos += CENTRAL_SIZE + nameLength + extraLength + commentLength;
        }
        return members;
    }

    private static byte[] readLocal(ByteBuffer b, long offset, long cdStart, String name, int size, long crc,
                                    String source) {
        if (offset < 0 || offset + LOCAL_SIZE > cdStart || b.getInt((int) offset) != LOCAL_SIGNATURE) {
            throw fail(source, "pack member " + name + " is unreadable (bad local header offset)");
        }
        int p = (int) offset;
        long dataStart = offset + LOCAL_SIZE + u16(b, p + 26) + u16(b, p + 28);
        if (dataStart + size > cdStart) {
            throw fail(source, "pack member " + name + " has " + size + " bytes, more than the archive holds");
        }
        byte[] data = new byte[size];
        ByteBuffer view = b.duplicate();
        view.position((int) dataStart);
        view.get(data);
        CRC32 check = new CRC32();
        check.update(data, 0, data.length);
        if (check.getValue() != crc) {
            throw fail(source, "pack member " + name + " fails its CRC-32 check (file corrupt)");
        }
        return data;
    }

    private static String utf8Name(ByteBuffer b, int at, int length, int flags, String source) {
        byte[] raw = new byte[length];
        ByteBuffer view = b.duplicate();
        view.position(at);
        view.get(raw);
        // Bit 11 marks UTF-8 names; Python writes ASCII names without it, which decode the same.
        return new String(raw, (flags & 0x800) != 0 ? java.nio.charset.StandardCharsets.UTF_8
                : java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    /** Same rule as the Python reader: a name with a path in it marks a hostile or foreign archive. */
    private static void checkName(String name, String source) {
        if (name.isEmpty() || name.indexOf('/') >= 0 || name.indexOf('\\') >= 0 || name.startsWith(".")
                || name.indexOf('\0') >= 0) {
            throw fail(source, "pack member name '" + name + "' is not a plain file name");
        }
    }

    private static int u16(ByteBuffer b, int at) {
        return b.getShort(at) & 0xFFFF;
    }

    private static long u32(ByteBuffer b, int at) {
        return b.getInt(at) & 0xFFFFFFFFL;
    }

    private static AlbertCoreException fail(String source, String message) {
        return new AlbertCoreException(source + ": " + message);
    }
}
