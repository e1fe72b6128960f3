"""A subgraph's tensor and operator tables read as numpy columns, every bound checked over whole vectors.

The load-time check reads the same fields as ``flatbuffer._checked_tensors_and_ops`` (shape, type, buffer,
name, quantization, sparsity; opcode, inputs, outputs), but a Python pass over the sample's 248 tensors and
199 ops cost 2-4 ms of every first answer, nearly all of it per-field calls. Here each field is one gather
over all tables and each bound one comparison over all of them, so the cost no longer grows with Python
calls per tensor.

It reads only what a flatbuffer writer lays out aligned (every scalar and offset at a multiple of its size,
as the flatbuffers builder writes and LiteRT's verifier demands): an unaligned field, an out-of-bounds read,
a name that is not UTF-8, or an op naming a tensor that does not exist raises ``Unusual``, and the caller
repeats the field-by-field walk, which accepts what it can read and names the first field it cannot. So a
file this reader passes is one the walk passes with the same values (tests check both on damaged copies).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

# Tensor fields (schema.fbs), as in flatbuffer.py.
_T_SHAPE, _T_TYPE, _T_BUFFER, _T_NAME, _T_QUANT, _T_SPARSITY, _T_SHAPE_SIGNATURE = 0, 1, 2, 3, 4, 6, 7
_Q_SCALE, _Q_ZERO_POINT = 2, 3
_OP_OPCODE_INDEX, _OP_INPUTS, _OP_OUTPUTS = 0, 1, 2


class Unusual(Exception):
    """The columns cannot be read the common way; the checked walk decides (and names the field)."""


@dataclass(frozen=True)
class Ragged:
    """One vector per table, stored flat: table ``i``'s values are ``values[ends[i] - counts[i]:ends[i]]``."""

    values: np.ndarray
    counts: np.ndarray

    @property
    def ends(self) -> np.ndarray:
        return self.counts.cumsum()

    def lists(self) -> list[tuple]:
        """Every table's vector as a tuple of Python numbers (what the object walk returns)."""
        flat = self.values.tolist()
        out, at = [], 0
        for n in self.counts.tolist():
            out.append(tuple(flat[at : at + n]))
            at += n
        return out


@dataclass(frozen=True)
class TensorColumns:
    """The subgraph's tensors, one array entry per tensor (index order)."""

    type_codes: np.ndarray      # TensorType code, int8
    buffers: np.ndarray         # buffer index, int64
    shapes: Ragged              # shape_signature where non-empty, else shape
    scales: Ragged              # float32
    zero_points: Ragged         # int64
    sparse: np.ndarray          # bool
    # Every name's UTF-8 bytes, each followed by one "\n" (checked to decode as a whole: so each one does),
    # and where each ends: the check itself never needs a name as a str.
    name_bytes: bytes
    name_ends: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.type_codes)

    @cached_property
    def names(self) -> tuple[str, ...]:
        starts = (0, *(end + 1 for end in self.name_ends[:-1]))
        return tuple(self.name_bytes[a:b].decode("utf-8") for a, b in zip(starts, self.name_ends))


@dataclass(frozen=True)
class OpColumns:
    """The subgraph's operators, one entry per op (execution order)."""

    opcodes: np.ndarray         # index into the model's operator_codes, int64
    inputs: Ragged              # tensor indices, -1 for an absent optional input
    outputs: Ragged


class _Views:
    """The file as arrays of each width: an aligned field at byte ``p`` is ``view[p // width]``."""

    def __init__(self, data) -> None:
        self.size = len(data)
        self.u8 = np.frombuffer(data, np.uint8)
        self.i8 = self.u8.view(np.int8)
        self.u16 = np.frombuffer(data, "<u2", count=self.size // 2)
        self.u32 = np.frombuffer(data, "<u4", count=self.size // 4)
        self.i32 = self.u32.view("<i4")
        self.f32 = self.u32.view("<f4")
        self.i64 = np.frombuffer(data, "<i8", count=self.size // 8)


def _require(ok: np.ndarray) -> None:
    # Array methods, not numpy's Python-level wrappers: a fresh process pays each wrapper's first call.
    if not ok.all():
        raise Unusual


def _tables(v: _Views, pos: np.ndarray, nfields: int) -> np.ndarray:
    """Field offsets [len(pos), nfields] of the tables at ``pos`` (0: field absent), after the checks of
    ``flatbuffer._Reader.table``.

    Written for few numpy calls (a fresh process pays 5-10 us for each, the three calls of a load 0.4-0.6 ms): a
    negative position cast to uint64 fails the upper bound, and the vtable's two lengths and its field slots are one
    gather (slots past a short vtable are read clipped and masked, never used)."""
    if v.size < 8:
        raise Unusual
    _require((pos.astype(np.uint64) <= v.size - 4) & (pos % 4 == 0))
    vt = pos - v.i32[pos // 4]
    _require((vt.astype(np.uint64) <= v.size - 4) & (vt % 2 == 0))
    at = (vt // 2)[:, None] + np.arange(2 + nfields)
    np.minimum(at, len(v.u16) - 1, out=at)
    block = v.u16[at].astype(np.int64)
    vlen = block[:, 0]
    _require((vlen >= 4) & (vlen % 2 == 0) & (vt + vlen <= v.size) & (pos + block[:, 1] <= v.size))
    return np.where(np.arange(6, 6 + 2 * nfields, 2) <= vlen[:, None], block[:, 2:], 0)


def _refs(v: _Views, pos: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Where the offset fields at ``pos + offsets`` point (entries with offset 0 are not read: -1).

    ``pos`` are checked table positions and ``offsets`` vtable entries (uint16), so ``pos + offsets`` is not
    negative; an absent field is read at byte 0 (aligned, inside) and dropped."""
    has = offsets != 0
    p = np.where(has, pos + offsets, 0)
    _require((p <= v.size - 4) & (p % 4 == 0))
    return np.where(has, p + v.u32[p // 4], -1)


def _spans(v: _Views, pos: np.ndarray, offsets: np.ndarray, elem: int) -> tuple[np.ndarray, np.ndarray]:
    """(first element's byte, length) of the vectors the offset fields point to (absent: length 0), each
    checked to lie in the file; nothing of their elements is read."""
    at = _refs(v, pos, offsets)
    has = at >= 0
    at = np.where(has, at, 0)    # an absent vector read at byte 0 (aligned, inside) and given length 0
    _require((at <= v.size - 4) & (at % 4 == 0))
    counts = np.where(has, v.u32[at // 4], 0).astype(np.int64)
    first = at + 4
    # The length word is 4-aligned, so elements of up to 4 bytes are aligned after it; 8-byte ones are checked.
    _require((first + counts * elem <= v.size) & ((counts == 0) | (first % elem == 0) if elem > 4 else True))
    return first, counts


def _vectors(v: _Views, pos: np.ndarray, offsets: np.ndarray, elem: int, view: np.ndarray) -> Ragged:
    """The vectors the offset fields point to (an absent field: empty), each checked to lie in the file."""
    first, counts = _spans(v, pos, offsets, elem)
    index = np.arange(int(counts.sum())) + (first // elem - counts.cumsum() + counts).repeat(counts)
    return Ragged(view[index], counts)


def _vectors_of(v: _Views, fields: list[tuple[np.ndarray, np.ndarray]], elem: int, view: np.ndarray) -> list[Ragged]:
    """``_vectors`` of several (table positions, offset fields) pairs with one element type, read in one pass: the
    bounds checks and the gather are one numpy call each for all of them (a fresh process pays every call's cost
    once per call site, about 5-10 us each)."""
    pos = np.concatenate([p for p, _ in fields])
    offsets = np.concatenate([o for _, o in fields])
    both = _vectors(v, pos, offsets, elem, view)
    ends = [0, *both.counts.cumsum().tolist()]   # where each table's vector ends in the values
    out, at = [], 0
    for p, _ in fields:
        out.append(Ragged(both.values[ends[at] : ends[at + len(p)]], both.counts[at : at + len(p)]))
        at += len(p)
    return out


def _strings(v: _Views, pos: np.ndarray, offsets: np.ndarray) -> tuple[bytes, tuple[int, ...]]:
    """The strings the offset fields point to, as one blob of each string + "\\n" and the strings' ends.

    Decoding the blob once checks every string: UTF-8 validity is local, and an ASCII byte between two
    strings neither completes nor breaks a character of either (248 decodes cost 0.3-0.5 ms of a fresh
    process; one costs 0.02)."""
    first, counts = _spans(v, pos, offsets, 1)
    rows = np.arange(len(counts)).repeat(counts)
    blob = np.full(int(counts.sum()) + len(counts), 10, np.uint8)
    blob[np.arange(len(rows)) + rows] = v.u8[np.arange(len(rows)) + (first - counts.cumsum() + counts).repeat(counts)]
    raw = blob.tobytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unusual from None
    return raw, tuple((counts.cumsum() + np.arange(len(counts))).tolist())


def _vector_of_tables(v: _Views, table_pos: int, offset: int) -> np.ndarray:
    """Positions of the tables in the vector field at ``table_pos + offset`` (none when absent).

    One vector: its two offsets read as Python ints and its slots as one slice (the array form of ``_refs`` cost
    about 100 us a call in a fresh process, three calls a load)."""
    if not offset:
        return np.zeros(0, np.int64)
    field = table_pos + offset
    if field < 0 or field + 4 > v.size or field % 4:
        raise Unusual
    at = field + int(v.u32[field // 4])
    if at + 4 > v.size or at % 4:
        raise Unusual
    n = int(v.u32[at // 4])
    if at + 4 + 4 * n > v.size:
        raise Unusual
    slots = v.u32[at // 4 + 1 : at // 4 + 1 + n].astype(np.int64)
    slots += np.arange(at + 4, at + 4 + 4 * n, 4, dtype=np.int64)
    return slots


def read_columns(data, sub_pos: int, sub_fields: tuple[int, ...], num_codes: int) -> tuple[TensorColumns, OpColumns]:
    """The tensors and ops of the subgraph table at ``sub_pos`` (its field offsets ``sub_fields``, padded),
    or ``Unusual``. ``num_codes``: the model's operator_codes, which every op's opcode index must name."""
    v = _Views(data)
    tpos = _vector_of_tables(v, sub_pos, sub_fields[0])
    opos = _vector_of_tables(v, sub_pos, sub_fields[3])
    both = _tables(v, np.concatenate((tpos, opos)), 8)   # one pass over the tensor and the op tables
    n = len(tpos)
    t, o = both[:n], both[n:, :3]
    _require(~(t[:, _T_BUFFER] != 0) | (tpos + t[:, _T_BUFFER] + 4 <= v.size) & ((tpos + t[:, _T_BUFFER]) % 4 == 0))
    _require(~(t[:, _T_TYPE] != 0) | (tpos + t[:, _T_TYPE] + 1 <= v.size))
    buffers = np.where(t[:, _T_BUFFER] != 0, v.u32[np.where(t[:, _T_BUFFER] != 0, tpos + t[:, _T_BUFFER], 0) // 4], 0)
    types = np.where(t[:, _T_TYPE] != 0, v.i8[np.where(t[:, _T_TYPE] != 0, tpos + t[:, _T_TYPE], 0)], 0)
    qpos = _refs(v, tpos, t[:, _T_QUANT])
    quantized = qpos >= 0
    q = np.zeros((len(tpos), 4), np.int64)
    if quantized.any():
        q[quantized] = _tables(v, qpos[quantized], 4)
    qat = np.where(quantized, qpos, 0)
    # Every 4-byte vector in one read: shape signature and static shape (the walk reads the static shape only
    # where the signature is empty, ``a or b``, and so does _merged: reading it elsewhere can only defer a damaged
    # file to the walk), scales (as float32), op inputs and outputs (as int32; the same bytes, viewed twice).
    signature, static, scale_bits, inputs, outputs = _vectors_of(
        v, [(tpos, t[:, _T_SHAPE_SIGNATURE]), (tpos, t[:, _T_SHAPE]), (qat, q[:, _Q_SCALE]),
            (opos, o[:, _OP_INPUTS]), (opos, o[:, _OP_OUTPUTS])], 4, v.i32)
    shapes = _merged(signature, Ragged(static.values[(signature.counts == 0).repeat(static.counts)],
                                       np.where(signature.counts == 0, static.counts, 0)))
    scales = Ragged(scale_bits.values.view(np.float32), scale_bits.counts)
    zero_points = _vectors(v, qat, q[:, _Q_ZERO_POINT], 8, v.i64)
    tensors = TensorColumns(types.astype(np.int8), buffers.astype(np.int64), shapes, scales, zero_points,
                            t[:, _T_SPARSITY] != 0, *_strings(v, tpos, t[:, _T_NAME]))

    has_code = o[:, _OP_OPCODE_INDEX] != 0
    _require(~has_code | ((opos + o[:, _OP_OPCODE_INDEX] + 4 <= v.size) & ((opos + o[:, _OP_OPCODE_INDEX]) % 4 == 0)))
    opcodes = np.where(has_code, v.u32[np.where(has_code, opos + o[:, _OP_OPCODE_INDEX], 0) // 4], 0).astype(np.int64)
    _require(opcodes < num_codes)
    _require((inputs.values < n) & (inputs.values >= -1))
    _require((outputs.values < n) & (outputs.values >= 0))
    return tensors, OpColumns(opcodes, inputs, outputs)


def _merged(first: Ragged, second: Ragged) -> Ragged:
    """Per table, ``first``'s vector where it is non-empty, else ``second``'s (which is empty there)."""
    if not len(second.values):
        return first
    counts = first.counts + second.counts
    values = np.empty(int(counts.sum()), first.values.dtype)
    from_first = (first.counts > 0).repeat(counts)
    values[from_first] = first.values
    values[~from_first] = second.values
    return Ragged(values, counts)


def buffer_sizes(data, model_pos: int, model_fields: tuple[int, ...]) -> tuple[int, ...]:
    """Bytes of weight data in each of the model's buffers (inline ``data``, or ``offset``/``size`` past the
    flatbuffer), after the checks of ``flatbuffer._checked_buffer_sizes``; or ``Unusual``."""
    v = _Views(data)
    pos = _vector_of_tables(v, model_pos, model_fields[4])
    b = _tables(v, pos, 3)
    inline = _spans(v, pos, b[:, 0], 1)[1]
    u64 = np.frombuffer(data, "<u8", count=v.size // 8)
    words = []
    for field in (1, 2):
        has = b[:, field] != 0
        at = pos + b[:, field]
        _require(~has | ((at + 8 <= v.size) & (at % 8 == 0)))
        words.append(np.where(has, u64[np.where(has, at, 0) // 8], np.uint64(0)))
    offset, length = words
    outside = (offset > 1) & ((offset > v.size) | (length > np.uint64(v.size) - np.minimum(offset, np.uint64(v.size))))
    _require(~outside)
    return tuple(np.where(offset > 1, length, inline.astype(np.uint64)).tolist())
