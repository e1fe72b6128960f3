"""A bounds-checked look at a TFLite flatbuffer before any interpreter touches it.

Interpreters trust the bytes they are given: a truncated download or a random file with the
right suffix can crash the process instead of raising. ``inspect_tflite`` checks the file
identifier ``TFL3``, the root offset, every table/vector it follows and the extent of every
weight buffer, and returns the operator codes with their versions (what an older interpreter
such as tflite_runtime 2.14 must support). Pure Python, schema field numbers from
tensorflow/lite/schema/schema.fbs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cached_property

from albert_edge.errors import ModelFileError
from albert_edge.runtime.tflite_columns import OpColumns, TensorColumns, Unusual, buffer_sizes, read_columns
from albert_edge.runtime.tflite_op_names import BUILTIN_OP_NAMES

# Model table fields (schema.fbs order).
_MODEL_VERSION, _MODEL_OPERATOR_CODES, _MODEL_SUBGRAPHS, _MODEL_BUFFERS, _MODEL_SIGNATURE_DEFS = 0, 1, 2, 4, 7
# OperatorCode fields.
_OPC_DEPRECATED_CODE, _OPC_CUSTOM_CODE, _OPC_VERSION, _OPC_BUILTIN_CODE = 0, 1, 2, 3
# Buffer fields.
_BUF_DATA, _BUF_OFFSET, _BUF_SIZE = 0, 1, 2
# SignatureDef fields: inputs, outputs (TensorMap vectors), signature_key, subgraph_index.
_SIG_INPUTS, _SIG_OUTPUTS, _SIG_KEY, _SIG_SUBGRAPH = 0, 1, 2, 4
# TensorMap fields.
_TMAP_NAME, _TMAP_INDEX = 0, 1
# SubGraph fields.
_SG_TENSORS, _SG_INPUTS, _SG_OUTPUTS, _SG_OPERATORS = 0, 1, 2, 3
# Tensor fields.
_T_SHAPE, _T_TYPE, _T_BUFFER, _T_NAME, _T_QUANT, _T_SPARSITY, _T_SHAPE_SIGNATURE = 0, 1, 2, 3, 4, 6, 7
# QuantizationParameters fields.
_Q_SCALE, _Q_ZERO_POINT = 2, 3
# Operator fields.
_OP_OPCODE_INDEX, _OP_INPUTS, _OP_OUTPUTS = 0, 1, 2
#: TensorType codes (schema.fbs) -> numpy-style names, for messages and dtype checks.
TENSOR_TYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string", 6: "bool",
                7: "int16", 8: "complex64", 9: "int8", 10: "float64", 17: "int4"}
_CUSTOM = 32  # BuiltinOperator.CUSTOM


@dataclass(frozen=True)
class OperatorCode:
    """One entry of the model's operator_codes: which kernel, at which version."""

    code: int
    name: str
    version: int
    custom_code: str | None = None


@dataclass(frozen=True)
class TfliteInfo:
    """What the flatbuffer says about itself."""

    schema_version: int
    operator_codes: tuple[OperatorCode, ...]
    num_subgraphs: int
    num_buffers: int
    signature_keys: tuple[str, ...]
    # Bytes of weight data in each buffer (inline data or offset/size), as the extent check read them: the
    # graph read takes a tensor's weight size from here instead of reading its buffer table again.
    buffer_sizes: tuple[int, ...] = ()


def builtin_op_name(code: int) -> str:
    """Name of a BuiltinOperator code: the static table, else LiteRT's generated schema when installed.

    The table first: importing the generated schema costs 25-55 ms of every app's cold start.
    """
    if code in BUILTIN_OP_NAMES:
        return BUILTIN_OP_NAMES[code]
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        return f"BUILTIN_{code}"
    for key, value in vars(schema.BuiltinOperator).items():
        if value == code and not key.startswith("_"):
            return key
    return f"BUILTIN_{code}"


# Compiled once: ``struct.unpack_from(fmt, ...)`` re-parses its format on every one of a graph's ~10k reads.
_STRUCTS: dict[str, struct.Struct] = {fmt: struct.Struct(fmt) for fmt in ("<i", "<H", "<I", "<b", "<B", "<Q", "<q", "<f")}
_VTABLE_HEADER = struct.Struct("<HH")
_U32 = _STRUCTS["<I"].unpack_from
_I32 = _STRUCTS["<i"].unpack_from

#: What a read is of, for the error message only: a string, or a ``%``-format and its arguments, formatted
#: only when the read fails (a load reads ~10k fields; formatting every name cost more than the reads).
What = str | tuple


def _named(what: What) -> str:
    return what if isinstance(what, str) else what[0] % what[1:]


class _Reader:
    """Bounds-checked flatbuffer primitives; every failure names the file and what broke."""

    def __init__(self, data: bytes | memoryview, source: str) -> None:
        self.data = data
        self.size = len(data)
        self.source = source
        # vtable position -> its field offsets: tables of one kind share a vtable (248 tensors, a few
        # vtables), so each is unpacked once instead of once per field read.
        self._vtables: dict[int, tuple[int, ...]] = {}

    def fail(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: TFLite flatbuffer is truncated or corrupt ({what})")

    def _outside(self, what: What, pos: int, suffix: str = "") -> ModelFileError:
        return self.fail(f"{_named(what)}{suffix} at byte {pos} lies outside the {self.size}-byte file")

    def _unpack(self, fmt: str, pos: int, what: What):
        packed = _STRUCTS.get(fmt) or struct.Struct(fmt)
        if pos < 0 or pos + packed.size > self.size:
            raise self._outside(what, pos)
        return packed.unpack_from(self.data, pos)[0]

    def table(self, pos: int, what: What) -> tuple[int, int, int]:
        """(table_pos, vtable_pos, vtable_len) of the table at ``pos``."""
        size = self.size
        if pos < 0 or pos + 4 > size:
            raise self._outside(what, pos)
        vtable = pos - _I32(self.data, pos)[0]
        if vtable < 0 or vtable + 4 > size:
            raise self.fail(f"{_named(what)} vtable at byte {vtable} lies outside the {size}-byte file")
        vlen, tlen = _VTABLE_HEADER.unpack_from(self.data, vtable)
        if vlen < 4 or vlen % 2 or vtable + vlen > size or pos + tlen > size:
            raise self.fail(f"{_named(what)} vtable has impossible sizes")
        return pos, vtable, vlen

    def offsets(self, tab: tuple[int, int, int]) -> tuple[int, ...]:
        """The table's field offsets from its vtable (0: field absent), unpacked once per vtable."""
        offsets = self._vtables.get(tab[1])
        if offsets is None:
            # table() checked vtable + vlen <= size and that vlen is even and >= 4.
            offsets = self._vtables[tab[1]] = struct.unpack_from(f"<{(tab[2] - 4) // 2}H", self.data, tab[1] + 4)
        return offsets

    def field_pos(self, tab: tuple[int, int, int], index: int) -> int | None:
        offsets = self._vtables.get(tab[1]) or self.offsets(tab)
        if index >= len(offsets) or not offsets[index]:
            return None
        return tab[0] + offsets[index]

    # scalar() and ref() look the field up themselves: they are most of a load's ~30k reads.
    def scalar(self, tab, index: int, fmt: str, default: int) -> int:
        offsets = self._vtables.get(tab[1]) or self.offsets(tab)
        if index >= len(offsets) or not offsets[index]:
            return default
        return self._unpack(fmt, tab[0] + offsets[index], "scalar field")

    def ref(self, tab, index: int, what: What) -> int | None:
        """Position of the object an offset field points to."""
        offsets = self._vtables.get(tab[1]) or self.offsets(tab)
        if index >= len(offsets) or not offsets[index]:
            return None
        p = tab[0] + offsets[index]
        if p + 4 > self.size:
            raise self._outside(what, p)
        return p + _U32(self.data, p)[0]

    def vector(self, pos: int, elem_size: int, what: What) -> tuple[int, int]:
        """(first_element_pos, length) of the vector at ``pos``, after checking it fits."""
        if pos < 0 or pos + 4 > self.size:
            raise self._outside(what, pos, " length")
        n = _U32(self.data, pos)[0]
        start = pos + 4
        if start + n * elem_size > self.size:
            raise self.fail(f"{_named(what)} claims {n} elements past the end of the file")
        return start, n

    def table_vector(self, tab, index: int, what: What) -> list[tuple[int, int, int]]:
        pos = self.ref(tab, index, what)
        if pos is None:
            return []
        start, n = self.vector(pos, 4, what)
        # vector() checked that all n offsets lie inside the file.
        data, table, name = self.data, self.table, _named(what)
        return [table(start + 4 * i + _U32(data, start + 4 * i)[0], ("%s[%d]", name, i)) for i in range(n)]

    def string(self, pos: int, what: What) -> str:
        start, n = self.vector(pos, 1, what)
        try:
            return bytes(self.data[start : start + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{_named(what)} is not UTF-8") from None


# A fast pass met something it does not read the common way; the checked walk decides (and names it).
_Unusual = Unusual


def _checked_buffer_sizes(r: _Reader, buffers: list[tuple[int, int, int]]) -> list[int]:
    """Bytes of weight data in each buffer, field by field: every failed read names its buffer.

    Run only where ``tflite_columns.buffer_sizes`` (the same checks over whole vectors) defers."""
    sizes = []
    for i, buf in enumerate(buffers):
        data_pos = r.ref(buf, _BUF_DATA, ("buffers[%d].data", i))
        inline = r.vector(data_pos, 1, ("buffers[%d].data", i))[1] if data_pos is not None else 0
        offset = r.scalar(buf, _BUF_OFFSET, "<Q", 0)
        size = r.scalar(buf, _BUF_SIZE, "<Q", 0)
        if offset > 1 and offset + size > r.size:
            raise r.fail(f"buffers[{i}] spans bytes {offset}..{offset + size} of a {r.size}-byte file")
        sizes.append(size if offset > 1 else inline)
    return sizes


def inspect_tflite(data: bytes | memoryview, source: str = "<bytes>") -> TfliteInfo:
    """Validate the flatbuffer's structure and extents; return its operator codes.

    ``data`` is bytes or a memoryview of them (``pack.tflite_flatbuffer_view``: no copy).

    Raises ModelFileError when the identifier is not ``TFL3``, an offset points outside the
    file, or a weight buffer (inline or external ``offset``/``size``) does not fit.
    """
    r = _Reader(data, source)
    if len(data) < 8 or bytes(data[4:8]) != b"TFL3":
        raise ModelFileError(f"{source}: not a TFLite model (file identifier 'TFL3' missing at bytes 4..8)")
    root = r._unpack("<I", 0, "root offset")
    model = r.table(root, "Model")
    schema_version = r.scalar(model, _MODEL_VERSION, "<I", 0)
    if schema_version != 3:
        raise ModelFileError(f"{source}: TFLite schema version is {schema_version}, expected 3")

    codes = []
    for i, opc in enumerate(r.table_vector(model, _MODEL_OPERATOR_CODES, "operator_codes")):
        deprecated = r.scalar(opc, _OPC_DEPRECATED_CODE, "<b", 0)
        builtin = r.scalar(opc, _OPC_BUILTIN_CODE, "<i", 0)
        # Codes above 127 live only in builtin_code; older writers fill only the deprecated byte.
        code = max(deprecated, builtin)
        custom_pos = r.ref(opc, _OPC_CUSTOM_CODE, ("operator_codes[%d].custom_code", i))
        custom = r.string(custom_pos, ("operator_codes[%d].custom_code", i)) if custom_pos is not None else None
        name = custom if code == _CUSTOM and custom else builtin_op_name(code)
        codes.append(OperatorCode(code, name, r.scalar(opc, _OPC_VERSION, "<i", 1), custom))

    subgraphs = r.table_vector(model, _MODEL_SUBGRAPHS, "subgraphs")
    if not subgraphs:
        raise ModelFileError(f"{source}: TFLite model has no subgraphs")

    try:
        sizes = buffer_sizes(data, model[0], r.offsets(model) + (0,) * 8)
    except _Unusual:
        sizes = tuple(_checked_buffer_sizes(r, r.table_vector(model, _MODEL_BUFFERS, "buffers")))

    keys = []
    for i, sig in enumerate(r.table_vector(model, _MODEL_SIGNATURE_DEFS, "signature_defs")):
        key_pos = r.ref(sig, _SIG_KEY, ("signature_defs[%d].signature_key", i))
        keys.append(r.string(key_pos, ("signature_defs[%d].signature_key", i)) if key_pos is not None else "")
    return TfliteInfo(schema_version, tuple(codes), len(subgraphs), len(sizes), tuple(keys), sizes)


@dataclass(slots=True)
class TfliteTensor:
    """One tensor of the main subgraph: what the consistency check needs, nothing more.

    ``shape`` is the signature shape (-1 for a dynamic dim) when the file has one, else the
    static shape. ``constant`` is True when a weight buffer backs the tensor, of ``nbytes`` bytes
    (packed, not ``shape``-sized, when ``sparse``); ``buffer`` is that buffer's index, so two tensors
    (or two ops) sharing one weight, as ALBERT's layers do, can be told from copies. Slotted, not frozen: a load makes one per tensor,
    and a frozen dataclass's ``__init__`` cost four times as much; nothing writes them after the read.
    """

    index: int
    name: str
    dtype: str
    shape: tuple[int, ...]
    constant: bool
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    nbytes: int = 0
    sparse: bool = False
    buffer: int = 0


@dataclass(slots=True)
class TfliteOp:
    """One operator of the main subgraph: its kernel name and tensor indices (-1 = absent input)."""

    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class TfliteGraph:
    """The serving subgraph as data: tensors, operators, and the signature's name -> tensor maps.

    Read as numpy columns (``columns``) when the file is laid out the common way, else by the checked
    walk (``walked``); ``tensors`` and ``ops`` are made from either on first use: the load-time check reads
    the columns only, and a Python object per tensor cost it more than the reading.
    """

    signature_inputs: dict[str, int]
    signature_outputs: dict[str, int]
    # The structure check that read this graph, kept so an interpreter built next need not repeat it.
    info: TfliteInfo
    columns: tuple[TensorColumns, OpColumns] | None = None
    walked: tuple[tuple[TfliteTensor, ...], tuple[TfliteOp, ...]] | None = None

    @cached_property
    def _objects(self) -> tuple[tuple[TfliteTensor, ...], tuple[TfliteOp, ...]]:
        if self.walked is not None:
            return self.walked
        assert self.columns is not None
        tensors, ops = _column_objects(self.columns, self.info.operator_codes, self.info.buffer_sizes)
        return tuple(tensors), tuple(ops)

    @property
    def tensors(self) -> tuple[TfliteTensor, ...]:
        return self._objects[0]

    @property
    def ops(self) -> tuple[TfliteOp, ...]:
        return self._objects[1]


def _ints(r: _Reader, tab, index: int, what: What, fmt: str = "<i", size: int = 4) -> tuple[int, ...]:
    pos = r.ref(tab, index, what)
    if pos is None:
        return ()
    start, n = r.vector(pos, size, what)
    return struct.unpack_from(f"<{n}{fmt[1:]}", r.data, start)


def _text(r: _Reader, tab, index: int, what: What) -> str:
    pos = r.ref(tab, index, what)
    return "" if pos is None else r.string(pos, what)


def _indices(r: _Reader, tab, index: int, what: What, allow_absent: bool, n: int) -> tuple[int, ...]:
    got = _ints(r, tab, index, what)
    low = -1 if allow_absent else 0
    if got and (max(got) >= n or min(got) < low):
        raise r.fail(f"{_named(what)} names tensor {next(k for k in got if k >= n or k < low)} of {n}")
    return got


def _checked_tensors_and_ops(r: _Reader, sub, codes: tuple[OperatorCode, ...],
                             buffer_sizes: tuple[int, ...]) -> tuple[list[TfliteTensor], list[TfliteOp]]:
    """The subgraph's tensors and operators, field by field: every failed read names its field."""
    tensors = []
    for i, t in enumerate(r.table_vector(sub, _SG_TENSORS, "tensors")):
        quant = r.ref(t, _T_QUANT, ("tensors[%d].quantization", i))
        scales: tuple[float, ...] = ()
        zero_points: tuple[int, ...] = ()
        if quant is not None:
            qtab = r.table(quant, ("tensors[%d].quantization", i))
            scales = _ints(r, qtab, _Q_SCALE, ("tensors[%d].scale", i), "<f")
            zero_points = _ints(r, qtab, _Q_ZERO_POINT, ("tensors[%d].zero_point", i), "<q", 8)
        buffer_index = r.scalar(t, _T_BUFFER, "<I", 0)
        # Bytes of weight data behind the tensor (0: an activation; buffer 0 is the empty sentinel).
        nbytes = buffer_sizes[buffer_index] if 0 < buffer_index < len(buffer_sizes) else 0
        tensors.append(TfliteTensor(
            i, _text(r, t, _T_NAME, ("tensors[%d].name", i)), TENSOR_TYPES.get(r.scalar(t, _T_TYPE, "<b", 0), "unknown"),
            _ints(r, t, _T_SHAPE_SIGNATURE, ("tensors[%d].shape_signature", i)) or _ints(r, t, _T_SHAPE, ("tensors[%d].shape", i)),
            nbytes > 0, scales, zero_points, nbytes, r.field_pos(t, _T_SPARSITY) is not None, buffer_index))
    n = len(tensors)
    ops = []
    for i, op in enumerate(r.table_vector(sub, _SG_OPERATORS, "operators")):
        code = r.scalar(op, _OP_OPCODE_INDEX, "<I", 0)
        if code >= len(codes):
            raise r.fail(f"operators[{i}] uses operator code {code} of {len(codes)}")
        ops.append(TfliteOp(codes[code].name, _indices(r, op, _OP_INPUTS, ("operators[%d].inputs", i), True, n),
                            _indices(r, op, _OP_OUTPUTS, ("operators[%d].outputs", i), False, n)))
    return tensors, ops


def _column_objects(columns: tuple[TensorColumns, OpColumns], codes: tuple[OperatorCode, ...],
                   buffer_sizes: tuple[int, ...]) -> tuple[list[TfliteTensor], list[TfliteOp]]:
    """The columns as the checked walk's objects (same values, same types)."""
    t, o = columns
    n_buffers = len(buffer_sizes)
    shapes, scales, zero_points = t.shapes.lists(), t.scales.lists(), t.zero_points.lists()
    tensors = []
    for i, (name, code, buffer, sparse) in enumerate(zip(t.names, t.type_codes.tolist(), t.buffers.tolist(),
                                                          t.sparse.tolist())):
        nbytes = buffer_sizes[buffer] if 0 < buffer < n_buffers else 0
        tensors.append(TfliteTensor(i, name, TENSOR_TYPES.get(code, "unknown"), shapes[i], nbytes > 0, scales[i],
                                    zero_points[i], nbytes, sparse, buffer))
    names = [c.name for c in codes]
    ops = [TfliteOp(names[c], ins, outs) for c, ins, outs in zip(o.opcodes.tolist(), o.inputs.lists(), o.outputs.lists())]
    return tensors, ops


def _fast_tensors_and_ops(r: _Reader, sub, codes: tuple[OperatorCode, ...],
                          buffer_sizes: tuple[int, ...]) -> tuple[list[TfliteTensor], list[TfliteOp]]:
    """The subgraph's tensors and operators read as columns (``runtime.tflite_columns``), as objects.

    Raises ``_Unusual`` where the columns cannot be read; the caller then repeats the checked walk, which
    raises the error that names the field, so a bad file fails with the same message as before.
    """
    return _column_objects(read_columns(r.data, sub[0], r.offsets(sub) + (0,) * 8, len(codes)), codes, buffer_sizes)


def read_tflite_graph(data: bytes | memoryview, source: str = "<bytes>", signature: str = "serving_default") -> TfliteGraph:
    """Tensors, operators and signature maps of the subgraph that ``signature`` runs, bounds-checked.

    Used to check a model file against its pack before an interpreter is built (see
    ``albert_edge.runtime.consistency``). Without that signature, the only signature (or
    subgraph 0 with its own input/output names) is read. Raises ModelFileError on bad bytes.
    """
    info = inspect_tflite(data, source)
    r = _Reader(data, source)
    model = r.table(r._unpack("<I", 0, "root offset"), "Model")
    codes = info.operator_codes
    subgraphs = r.table_vector(model, _MODEL_SUBGRAPHS, "subgraphs")
    sigs = r.table_vector(model, _MODEL_SIGNATURE_DEFS, "signature_defs")
    keys = info.signature_keys
    chosen = sigs[keys.index(signature)] if signature in keys else (sigs[0] if len(sigs) == 1 else None)
    sub_index = r.scalar(chosen, _SIG_SUBGRAPH, "<I", 0) if chosen is not None else 0
    if sub_index >= len(subgraphs):
        raise r.fail(f"signature names subgraph {sub_index} of {len(subgraphs)}")
    sub = subgraphs[sub_index]
    columns: tuple[TensorColumns, OpColumns] | None = None
    walked: tuple[tuple[TfliteTensor, ...], tuple[TfliteOp, ...]] | None = None
    try:
        columns = read_columns(r.data, sub[0], r.offsets(sub) + (0,) * 8, len(codes))
        n = len(columns[0])
    except _Unusual:
        tensors, ops = _checked_tensors_and_ops(r, sub, codes, info.buffer_sizes)
        walked = tuple(tensors), tuple(ops)
        n = len(tensors)

    def tensor_map(index: int, what: str, fallback: tuple[int, ...]) -> dict[str, int]:
        if chosen is None:
            names = columns[0].names if columns is not None else tuple(t.name for t in tensors)
            return {names[k]: k for k in fallback}
        out = {}
        for j, entry in enumerate(r.table_vector(chosen, index, what)):
            k = r.scalar(entry, _TMAP_INDEX, "<I", 0)
            if k >= n:
                raise r.fail(f"{what}[{j}] names tensor {k} of {n}")
            out[_text(r, entry, _TMAP_NAME, f"{what}[{j}].name")] = k
        return out

    return TfliteGraph(
        signature_inputs=tensor_map(_SIG_INPUTS, "signature inputs",
                                    _indices(r, sub, _SG_INPUTS, "subgraph inputs", False, n)),
        signature_outputs=tensor_map(_SIG_OUTPUTS, "signature outputs",
                                     _indices(r, sub, _SG_OUTPUTS, "subgraph outputs", False, n)),
        info=info, columns=columns, walked=walked,
    )


def read_tflite_subgraphs(data: bytes | memoryview, source: str = "<bytes>") -> list[TfliteGraph]:
    """Tensors and operators of every subgraph, in file order (no signature maps), bounds-checked.

    A WHILE's body is a subgraph of its own that the interpreter runs, and delegates, apart from the
    main one (``GraphOptions.shared_layer_loop`` puts ALBERT's shared layer there); readers that count
    what a delegate packs need them all. Raises ModelFileError on bad bytes.
    """
    info = inspect_tflite(data, source)
    r = _Reader(data, source)
    model = r.table(r._unpack("<I", 0, "root offset"), "Model")
    graphs = []
    for sub in r.table_vector(model, _MODEL_SUBGRAPHS, "subgraphs"):
        try:
            tensors, ops = _fast_tensors_and_ops(r, sub, info.operator_codes, info.buffer_sizes)
        except _Unusual:
            tensors, ops = _checked_tensors_and_ops(r, sub, info.operator_codes, info.buffer_sizes)
        graphs.append(TfliteGraph({}, {}, info, walked=(tuple(tensors), tuple(ops))))
    return graphs


def unsupported_ops(info: TfliteInfo, max_versions: dict[str, int]) -> list[OperatorCode]:
    """Operator codes whose version exceeds what an interpreter supports (by op name)."""
    return [op for op in info.operator_codes if op.name in max_versions and op.version > max_versions[op.name]]
