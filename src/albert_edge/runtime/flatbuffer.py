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

from albert_edge.errors import ModelFileError
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

    def _unpack(self, fmt: str, pos: int, what: str):
        packed = _STRUCTS.get(fmt) or struct.Struct(fmt)
        if pos < 0 or pos + packed.size > self.size:
            raise self.fail(f"{what} at byte {pos} lies outside the {self.size}-byte file")
        return packed.unpack_from(self.data, pos)[0]

    def table(self, pos: int, what: str) -> tuple[int, int, int]:
        """(table_pos, vtable_pos, vtable_len) of the table at ``pos``."""
        vtable = pos - self._unpack("<i", pos, what)
        if vtable < 0 or vtable + 4 > self.size:
            raise self.fail(f"{what} vtable at byte {vtable} lies outside the {self.size}-byte file")
        vlen, tlen = _VTABLE_HEADER.unpack_from(self.data, vtable)
        if vlen < 4 or vlen % 2 or vtable + vlen > self.size or pos + tlen > self.size:
            raise self.fail(f"{what} vtable has impossible sizes")
        return pos, vtable, vlen

    def field_pos(self, tab: tuple[int, int, int], index: int) -> int | None:
        pos, vtable, vlen = tab
        offsets = self._vtables.get(vtable)
        if offsets is None:
            # table() checked vtable + vlen <= size and that vlen is even and >= 4.
            offsets = self._vtables[vtable] = struct.unpack_from(f"<{(vlen - 4) // 2}H", self.data, vtable + 4)
        if index >= len(offsets):
            return None
        off = offsets[index]
        return None if off == 0 else pos + off

    def scalar(self, tab, index: int, fmt: str, default: int) -> int:
        p = self.field_pos(tab, index)
        return default if p is None else self._unpack(fmt, p, "scalar field")

    def ref(self, tab, index: int, what: str) -> int | None:
        """Position of the object an offset field points to."""
        p = self.field_pos(tab, index)
        if p is None:
            return None
        return p + self._unpack("<I", p, what)

    def vector(self, pos: int, elem_size: int, what: str) -> tuple[int, int]:
        """(first_element_pos, length) of the vector at ``pos``, after checking it fits."""
        n = self._unpack("<I", pos, f"{what} length")
        start = pos + 4
        if start + n * elem_size > self.size:
            raise self.fail(f"{what} claims {n} elements past the end of the file")
        return start, n

    def table_at(self, start: int, i: int, what: str) -> tuple[int, int, int]:
        """Table ``i`` of the table vector whose elements start at ``start``."""
        at = start + 4 * i
        return self.table(at + self._unpack("<I", at, what), f"{what}[{i}]")

    def table_vector(self, tab, index: int, what: str) -> list[tuple[int, int, int]]:
        pos = self.ref(tab, index, what)
        if pos is None:
            return []
        start, n = self.vector(pos, 4, what)
        return [self.table(start + 4 * i + self._unpack("<I", start + 4 * i, what), f"{what}[{i}]") for i in range(n)]

    def string(self, pos: int, what: str) -> str:
        start, n = self.vector(pos, 1, what)
        try:
            return bytes(self.data[start : start + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None


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
        custom_pos = r.ref(opc, _OPC_CUSTOM_CODE, f"operator_codes[{i}].custom_code")
        custom = r.string(custom_pos, f"operator_codes[{i}].custom_code") if custom_pos is not None else None
        name = custom if code == _CUSTOM and custom else builtin_op_name(code)
        codes.append(OperatorCode(code, name, r.scalar(opc, _OPC_VERSION, "<i", 1), custom))

    subgraphs = r.table_vector(model, _MODEL_SUBGRAPHS, "subgraphs")
    if not subgraphs:
        raise ModelFileError(f"{source}: TFLite model has no subgraphs")

    buffers = r.table_vector(model, _MODEL_BUFFERS, "buffers")
    for i, buf in enumerate(buffers):
        data_pos = r.ref(buf, _BUF_DATA, f"buffers[{i}].data")
        if data_pos is not None:
            r.vector(data_pos, 1, f"buffers[{i}].data")
        offset = r.scalar(buf, _BUF_OFFSET, "<Q", 0)
        size = r.scalar(buf, _BUF_SIZE, "<Q", 0)
        if offset > 1 and offset + size > len(data):
            raise r.fail(f"buffers[{i}] spans bytes {offset}..{offset + size} of a {len(data)}-byte file")

    keys = []
    for i, sig in enumerate(r.table_vector(model, _MODEL_SIGNATURE_DEFS, "signature_defs")):
        key_pos = r.ref(sig, _SIG_KEY, f"signature_defs[{i}].signature_key")
        keys.append(r.string(key_pos, f"signature_defs[{i}].signature_key") if key_pos is not None else "")
    return TfliteInfo(schema_version, tuple(codes), len(subgraphs), len(buffers), tuple(keys))


@dataclass(frozen=True)
class TfliteTensor:
    """One tensor of the main subgraph: what the consistency check needs, nothing more.

    ``shape`` is the signature shape (-1 for a dynamic dim) when the file has one, else the
    static shape. ``constant`` is True when a weight buffer backs the tensor, of ``nbytes`` bytes
    (packed, not ``shape``-sized, when ``sparse``).
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


@dataclass(frozen=True)
class TfliteOp:
    """One operator of the main subgraph: its kernel name and tensor indices (-1 = absent input)."""

    name: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class TfliteGraph:
    """The serving subgraph as data: tensors, operators, and the signature's name -> tensor maps."""

    tensors: tuple[TfliteTensor, ...]
    ops: tuple[TfliteOp, ...]
    signature_inputs: dict[str, int]
    signature_outputs: dict[str, int]
    # The structure check that read this graph, kept so an interpreter built next need not repeat it.
    info: TfliteInfo | None = None


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
    buffers_pos = r.ref(model, _MODEL_BUFFERS, "buffers")
    buffers_start, num_buffers = r.vector(buffers_pos, 4, "buffers") if buffers_pos is not None else (0, 0)
    subgraphs = r.table_vector(model, _MODEL_SUBGRAPHS, "subgraphs")
    sigs = r.table_vector(model, _MODEL_SIGNATURE_DEFS, "signature_defs")
    keys = info.signature_keys
    chosen = sigs[keys.index(signature)] if signature in keys else (sigs[0] if len(sigs) == 1 else None)
    sub_index = r.scalar(chosen, _SIG_SUBGRAPH, "<I", 0) if chosen is not None else 0
    if sub_index >= len(subgraphs):
        raise r.fail(f"signature names subgraph {sub_index} of {len(subgraphs)}")
    sub = subgraphs[sub_index]

    def ints(tab, index: int, what: str, fmt: str = "<i", size: int = 4) -> tuple[int, ...]:
        pos = r.ref(tab, index, what)
        if pos is None:
            return ()
        start, n = r.vector(pos, size, what)
        return tuple(struct.unpack_from(f"<{n}{fmt[1:]}", data, start))

    def text(tab, index: int, what: str) -> str:
        pos = r.ref(tab, index, what)
        return "" if pos is None else r.string(pos, what)

    def buffer_bytes(buffer_index: int) -> int:
        """Bytes of weight data behind a tensor (0: an activation); reads only used buffers (inspect_tflite checked all)."""
        if not 0 < buffer_index < num_buffers:
            return 0
        buf = r.table_at(buffers_start, buffer_index, "buffers")
        if r.scalar(buf, _BUF_OFFSET, "<Q", 0) > 1:
            return r.scalar(buf, _BUF_SIZE, "<Q", 0)
        pos = r.ref(buf, _BUF_DATA, "buffer data")
        return 0 if pos is None else r.vector(pos, 1, "buffer data")[1]

    tensors = []
    for i, t in enumerate(r.table_vector(sub, _SG_TENSORS, "tensors")):
        what = f"tensors[{i}]"
        quant = r.ref(t, _T_QUANT, f"{what}.quantization")
        scales: tuple[float, ...] = ()
        zero_points: tuple[int, ...] = ()
        if quant is not None:
            qtab = r.table(quant, f"{what}.quantization")
            scales = ints(qtab, _Q_SCALE, f"{what}.scale", "<f")
            zero_points = ints(qtab, _Q_ZERO_POINT, f"{what}.zero_point", "<q", 8)
        signature_shape = ints(t, _T_SHAPE_SIGNATURE, f"{what}.shape_signature")
        tensors.append(TfliteTensor(
            index=i,
            name=text(t, _T_NAME, f"{what}.name"),
            dtype=TENSOR_TYPES.get(r.scalar(t, _T_TYPE, "<b", 0), "unknown"),
            shape=signature_shape or ints(t, _T_SHAPE, f"{what}.shape"),
            constant=(nbytes := buffer_bytes(r.scalar(t, _T_BUFFER, "<I", 0))) > 0,
            nbytes=nbytes,
            sparse=r.field_pos(t, _T_SPARSITY) is not None,
            scales=scales,
            zero_points=zero_points,
        ))
    n = len(tensors)

    def indices(tab, index: int, what: str, allow_absent: bool) -> tuple[int, ...]:
        got = ints(tab, index, what)
        bad = [k for k in got if k >= n or k < (-1 if allow_absent else 0)]
        if bad:
            raise r.fail(f"{what} names tensor {bad[0]} of {n}")
        return got

    ops = []
    for i, op in enumerate(r.table_vector(sub, _SG_OPERATORS, "operators")):
        code = r.scalar(op, _OP_OPCODE_INDEX, "<I", 0)
        if code >= len(codes):
            raise r.fail(f"operators[{i}] uses operator code {code} of {len(codes)}")
        ops.append(TfliteOp(codes[code].name, indices(op, _OP_INPUTS, f"operators[{i}].inputs", True),
                            indices(op, _OP_OUTPUTS, f"operators[{i}].outputs", False)))

    def tensor_map(index: int, what: str, fallback: tuple[int, ...]) -> dict[str, int]:
        if chosen is None:
            return {tensors[k].name: k for k in fallback}
        out = {}
        for j, entry in enumerate(r.table_vector(chosen, index, what)):
            k = r.scalar(entry, _TMAP_INDEX, "<I", 0)
            if k >= n:
                raise r.fail(f"{what}[{j}] names tensor {k} of {n}")
            out[text(entry, _TMAP_NAME, f"{what}[{j}].name")] = k
        return out

    return TfliteGraph(
        tensors=tuple(tensors),
        ops=tuple(ops),
        signature_inputs=tensor_map(_SIG_INPUTS, "signature inputs", indices(sub, _SG_INPUTS, "subgraph inputs", False)),
        signature_outputs=tensor_map(_SIG_OUTPUTS, "signature outputs", indices(sub, _SG_OUTPUTS, "subgraph outputs", False)),
        info=info,
    )


def unsupported_ops(info: TfliteInfo, max_versions: dict[str, int]) -> list[OperatorCode]:
    """Operator codes whose version exceeds what an interpreter supports (by op name)."""
    return [op for op in info.operator_codes if op.name in max_versions and op.version > max_versions[op.name]]
