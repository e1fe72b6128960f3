"""A TF1 checkpoint read without TensorFlow: the ``.index`` TensorBundle table and the ``.data`` bytes.

``inspect`` only needs names, shapes and dtypes, and importing TensorFlow to get them took 40-50 s.
The ``.index`` file is a LevelDB-format SSTable (TensorFlow's ``core/lib/io/table``): data blocks of
prefix-compressed key/value entries, an index block pointing at them, and a 48-byte footer ending in a
magic number. Each key is a variable name and each value a ``BundleEntryProto`` (dtype, shape, shard,
offset, size, crc32c); the empty key holds the ``BundleHeaderProto``. The values are raw little-endian
bytes at ``offset`` in ``prefix.data-SSSSS-of-NNNNN``.

Every byte is untrusted: each length and offset is checked against what remains before it is used, and
every failure is one CheckpointError line. Block checksums of the index are verified (it is small);
tensor data checksums are not (crc32c over megabytes in Python costs seconds), so the readers that
convert a model keep TensorFlow's reader, which verifies them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from albert_edge.errors import CheckpointError

_MAGIC = 0xDB4775248B80FB57
_FOOTER = 48
_TRAILER = 5  # block type byte + masked crc32c
#: A real index is a few kB per thousand variables; this bounds a hostile one before it is read.
MAX_INDEX_BYTES = 256 << 20
#: TensorFlow's DataType enum values the readers accept, as numpy dtypes (bfloat16 is decoded by hand).
DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8", 8: "complex64",
          9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16", 18: "complex128", 19: "float16",
          22: "uint32", 23: "uint64"}


@dataclass(frozen=True)
class BundleEntry:
    """Where one variable's bytes are: ``BundleEntryProto`` without the slices."""

    dtype: str
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int


class _Bytes:
    """A bounded cursor over untrusted bytes; every read past the end is a CheckpointError."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.pos, self.where = data, 0, where

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.left():
            raise CheckpointError(f"{self.where}: truncated ({n} bytes wanted, {self.left()} left)")
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def varint(self) -> int:
        value = 0
        for shift in range(0, 70, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise CheckpointError(f"{self.where}: varint longer than 10 bytes")


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def _masked_crc32c(data: bytes) -> int:
    """LevelDB's masked CRC-32C of a block (Castagnoli polynomial, rotated and offset)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _block(data: bytes, handle: _Bytes, where: str) -> bytes:
    """The checked contents of the block a BlockHandle (offset, size varints) points at."""
    offset, size = handle.varint(), handle.varint()
    if offset + size + _TRAILER > len(data):
        raise CheckpointError(f"{where}: block at {offset} (+{size} bytes) runs past the file's {len(data)} bytes")
    contents, kind = data[offset:offset + size], data[offset + size]
    (stored,) = struct.unpack_from("<I", data, offset + size + 1)
    if _masked_crc32c(contents + bytes([kind])) != stored:
        raise CheckpointError(f"{where}: block at {offset} fails its checksum (file damaged)")
    if kind != 0:
        raise CheckpointError(f"{where}: block at {offset} is compressed (type {kind}); TensorBundle writes none")
    return contents


def _entries(block: bytes, where: str) -> Iterator[tuple[bytes, bytes]]:
    """The (key, value) pairs of one table block, keys rebuilt from their shared prefixes."""
    if len(block) < 4:
        raise CheckpointError(f"{where}: table block of {len(block)} bytes is too short")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * restarts
    if restarts < 1 or end < 0:
        raise CheckpointError(f"{where}: table block claims {restarts} restart points")
    cursor, key = _Bytes(block[:end], where), b""
    while cursor.left():
        shared, unshared, length = cursor.varint(), cursor.varint(), cursor.varint()
        if shared > len(key):
            raise CheckpointError(f"{where}: entry shares {shared} bytes of a {len(key)}-byte key")
        key = key[:shared] + cursor.take(unshared)
        yield key, cursor.take(length)


def _fields(message: bytes, where: str) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: varints as ints, length-delimited as bytes."""
    cursor = _Bytes(message, where)
    while cursor.left():
        tag = cursor.varint()
        wire = tag & 7
        if wire == 0:
            yield tag >> 3, cursor.varint()
        elif wire == 1:
            yield tag >> 3, struct.unpack("<Q", cursor.take(8))[0]
        elif wire == 2:
            yield tag >> 3, cursor.take(cursor.varint())
        elif wire == 5:
            yield tag >> 3, struct.unpack("<I", cursor.take(4))[0]
        else:
            raise CheckpointError(f"{where}: protobuf wire type {wire} is not valid here")


def _shape(message: bytes, where: str) -> tuple[int, ...]:
    """TensorShapeProto: repeated dim (field 2) with size (field 1); unknown rank (field 3) is refused."""
    dims = []
    for number, value in _fields(message, where):
        if number == 3 and value:
            raise CheckpointError(f"{where}: shape of unknown rank")
        if number == 2 and isinstance(value, bytes):
            size = dict(_fields(value, where)).get(1, 0)
            if not isinstance(size, int) or size >= 1 << 62:  # negative int64s arrive as huge varints
                raise CheckpointError(f"{where}: dimension {size!r} is not a size")
            dims.append(size)
    return tuple(dims)


def _entry(value: bytes, where: str) -> BundleEntry:
    """One BundleEntryProto: dtype 1, shape 2, shard_id 3, offset 4, size 5, slices 7."""
    fields: dict[int, int | bytes] = {}
    for number, field_value in _fields(value, where):
        if number == 7:
            raise CheckpointError(f"{where}: a partitioned (sliced) variable, which this reader does not join")
        fields[number] = field_value
    # A string variable (TF2's object graph) may sit beside the weights: named here, refused when read.
    dtype = DTYPES.get(fields.get(1, 0), "string" if fields.get(1) == 7 else f"TensorFlow dtype {fields.get(1)}")
    shape_bytes, ints = fields.get(2, b""), [fields.get(n, 0) for n in (3, 4, 5)]
    if not isinstance(shape_bytes, bytes) or not all(isinstance(n, int) and n < 1 << 62 for n in ints):
        raise CheckpointError(f"{where}: malformed entry (shard, offset or size out of range)")
    return BundleEntry(dtype, _shape(shape_bytes, where), *ints)  # type: ignore[arg-type]


def read_index(path: str | Path) -> tuple[int, dict[str, BundleEntry]]:
    """(number of data shards, variable name -> entry) from a TF1 ``.index`` file."""
    path = Path(path)
    where = str(path)
    try:
        if path.stat().st_size > MAX_INDEX_BYTES:
            raise CheckpointError(f"{where}: {path.stat().st_size:,} bytes, more than an index holds")
        data = path.read_bytes()
    except OSError as exc:
        raise CheckpointError(f"{where}: cannot read TF1 checkpoint index ({exc.strerror or exc})") from None
    if len(data) < _FOOTER or struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise CheckpointError(f"{where}: not a TF1 checkpoint index (table footer missing; truncated file?)")
    footer = _Bytes(data[len(data) - _FOOTER:len(data) - 8], where)
    footer.varint(), footer.varint()  # the meta-index handle: TensorBundle stores nothing there
    shards, entries = None, {}
    for _, handle in _entries(_block(data, footer, where), where):
        for key, value in _entries(_block(data, _Bytes(handle, where), where), where):
            if key == b"":
                header = dict(_fields(value, where))
                shards = header.get(1, 0)
                if header.get(2, 0) != 0:
                    raise CheckpointError(f"{where}: a big-endian checkpoint; only little-endian is read")
                continue
            try:
                name = key.decode("utf-8")
            except UnicodeDecodeError:
                raise CheckpointError(f"{where}: variable name {key[:40]!r} is not UTF-8") from None
            entries[name] = _entry(value, f"{where}: variable {name}")
    if not isinstance(shards, int) or not 1 <= shards <= 1 << 16:
        raise CheckpointError(f"{where}: bundle header missing or names {shards!r} data shards")
    return shards, entries


def read_tensor(prefix: str | Path, shards: int, name: str, entry: BundleEntry) -> np.ndarray:
    """One variable's values from its ``.data`` shard, checked against the shape, dtype and file size."""
    shard = Path(f"{prefix}.data-{entry.shard:05d}-of-{shards:05d}")
    where = f"{shard}: variable {name}"
    if not 0 <= entry.shard < shards:
        raise CheckpointError(f"{prefix}.index: variable {name} names shard {entry.shard} of {shards}")
    if entry.dtype not in DTYPES.values():
        raise CheckpointError(f"{where}: stored as {entry.dtype}, not a numeric type")
    storage = "uint16" if entry.dtype == "bfloat16" else entry.dtype
    count = int(np.prod(entry.shape, dtype=np.float64))
    if count * np.dtype(storage).itemsize != entry.size:
        raise CheckpointError(f"{where}: {entry.size} bytes stored for {entry.dtype} shape {list(entry.shape)}")
    try:
        with open(shard, "rb") as fh:
            fh.seek(entry.offset)
            raw = fh.read(entry.size)
    except OSError as exc:
        raise CheckpointError(f"{where}: cannot read ({exc.strerror or exc})") from None
    if len(raw) != entry.size:
        raise CheckpointError(f"{where}: {entry.size} bytes at offset {entry.offset}, the file holds {len(raw)}")
    values = np.frombuffer(raw, dtype=np.dtype(storage).newbyteorder("<")).reshape(entry.shape)
    if entry.dtype == "bfloat16":  # bfloat16 is the top half of a float32
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(values.dtype.newbyteorder("="))
