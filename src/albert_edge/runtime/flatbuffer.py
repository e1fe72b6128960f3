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

# Model table fields (schema.fbs order).
_MODEL_VERSION, _MODEL_OPERATOR_CODES, _MODEL_SUBGRAPHS, _MODEL_BUFFERS, _MODEL_SIGNATURE_DEFS = 0, 1, 2, 4, 7
# OperatorCode fields.
_OPC_DEPRECATED_CODE, _OPC_CUSTOM_CODE, _OPC_VERSION, _OPC_BUILTIN_CODE = 0, 1, 2, 3
# Buffer fields.
_BUF_DATA, _BUF_OFFSET, _BUF_SIZE = 0, 1, 2
# SignatureDef field 2 is signature_key.
_SIG_KEY = 2
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
    from albert_edge.runtime.tflite_op_names import BUILTIN_OP_NAMES

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


class _Reader:
    """Bounds-checked flatbuffer primitives; every failure names the file and what broke."""

    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.size = len(data)
        self.source = source

    def fail(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: TFLite flatbuffer is truncated or corrupt ({what})")

    def _unpack(self, fmt: str, pos: int, what: str):
        n = struct.calcsize(fmt)
        if pos < 0 or pos + n > self.size:
            raise self.fail(f"{what} at byte {pos} lies outside the {self.size}-byte file")
        return struct.unpack_from(fmt, self.data, pos)[0]

    def table(self, pos: int, what: str) -> tuple[int, int, int]:
        """(table_pos, vtable_pos, vtable_len) of the table at ``pos``."""
        vtable = pos - self._unpack("<i", pos, what)
        vlen = self._unpack("<H", vtable, f"{what} vtable")
        tlen = self._unpack("<H", vtable + 2, f"{what} vtable")
        if vlen < 4 or vlen % 2 or vtable + vlen > self.size or pos + tlen > self.size:
            raise self.fail(f"{what} vtable has impossible sizes")
        return pos, vtable, vlen

    def field_pos(self, tab: tuple[int, int, int], index: int) -> int | None:
        pos, vtable, vlen = tab
        slot = 4 + 2 * index
        if slot + 2 > vlen:
            return None
        off = self._unpack("<H", vtable + slot, "vtable slot")
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

    def table_vector(self, tab, index: int, what: str) -> list[tuple[int, int, int]]:
        pos = self.ref(tab, index, what)
        if pos is None:
            return []
        start, n = self.vector(pos, 4, what)
        return [self.table(start + 4 * i + self._unpack("<I", start + 4 * i, what), f"{what}[{i}]") for i in range(n)]

    def string(self, pos: int, what: str) -> str:
        start, n = self.vector(pos, 1, what)
        try:
            return self.data[start : start + n].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None


def inspect_tflite(data: bytes, source: str = "<bytes>") -> TfliteInfo:
    """Validate the flatbuffer's structure and extents; return its operator codes.

    Raises ModelFileError when the identifier is not ``TFL3``, an offset points outside the
    file, or a weight buffer (inline or external ``offset``/``size``) does not fit.
    """
    r = _Reader(data, source)
    if len(data) < 8 or data[4:8] != b"TFL3":
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


def unsupported_ops(info: TfliteInfo, max_versions: dict[str, int]) -> list[OperatorCode]:
    """Operator codes whose version exceeds what an interpreter supports (by op name)."""
    return [op for op in info.operator_codes if op.name in max_versions and op.version > max_versions[op.name]]
