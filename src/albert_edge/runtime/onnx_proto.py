"""What the runtime reads of an ONNX file without onnx: its pack and the graph's shape facts.

The pack lives in ``metadata_props``; the load-time check needs the graph's shapes. The runtime
must not import ``onnx`` (an app ships onnxruntime only), and onnxruntime's session does not
expose initializer shapes or nodes. So this walks ModelProto -> GraphProto by hand:
node op types and tensor names, initializer names/dims/dtypes, graph input/output types and
shapes. Large fields (raw weight bytes) are skipped by length, never copied. Field numbers are
from onnx/onnx.proto3. Every malformed byte becomes a ModelFileError naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from albert_edge.errors import ModelFileError

# ModelProto.graph / metadata_props, and StringStringEntryProto.key / value.
_MODEL_GRAPH, MODEL_METADATA_PROPS, _ENTRY_KEY, _ENTRY_VALUE = 7, 14, 1, 2
# GraphProto.node / initializer / input / output.
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 1, 5, 11, 12
# NodeProto.input / output / op_type; TensorProto.dims / data_type / name.
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP_TYPE = 1, 2, 4
_TENSOR_DIMS, _TENSOR_DATA_TYPE, _TENSOR_NAME = 1, 2, 8
# ValueInfoProto.name / type; TypeProto.tensor_type; Tensor.elem_type / shape; dim value / param.
_VI_NAME, _VI_TYPE, _TYPE_TENSOR, _TT_ELEM, _TT_SHAPE, _SHAPE_DIM, _DIM_VALUE, _DIM_PARAM = 1, 2, 1, 1, 2, 1, 1, 2
#: TensorProto.DataType codes -> numpy-style names.
ONNX_TYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
              11: "float64", 16: "bfloat16"}


@dataclass(frozen=True)
class OnnxValue:
    """A graph input, output or initializer: name, element type and shape (-1 for a symbolic dim)."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class OnnxNode:
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class OnnxGraph:
    nodes: tuple[OnnxNode, ...]
    initializers: dict[str, OnnxValue]
    inputs: dict[str, OnnxValue]
    outputs: dict[str, OnnxValue]


class _Proto:
    """Protobuf wire-format walking over one buffer, bounds-checked."""

    def __init__(self, data: bytes, source: str) -> None:
        self.view = memoryview(data)
        self.source = source

    def fail(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: ONNX protobuf is truncated or corrupt ({what})")

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        result = shift = 0
        while True:
            if pos >= end or shift > 63:
                raise self.fail(f"varint at byte {pos} runs past its message")
            b = self.view[pos]
            result |= (b & 0x7F) << shift
            pos += 1
            if not b & 0x80:
                return result, pos
            shift += 7

    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """(field number, wire type, value or payload start, payload end) for each field in [start, end)."""
        pos = start
        while pos < end:
            key, pos = self.varint(pos, end)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = self.varint(pos, end)
                yield number, wire, value, pos
            elif wire == 2:
                n, pos = self.varint(pos, end)
                if pos + n > end:
                    raise self.fail(f"field {number} needs {n} bytes, {end - pos} remain")
                yield number, wire, pos, pos + n
                pos += n
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
                if pos > end:
                    raise self.fail(f"field {number} runs past its message")
            else:
                raise self.fail(f"wire type {wire} of field {number} at byte {pos}")

    def text(self, start: int, end: int) -> str:
        try:
            return bytes(self.view[start:end]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"string at byte {start} is not UTF-8") from None

    def packed_or_single(self, wire: int, a: int, b: int) -> list[int]:
        if wire == 0:
            return [a]
        out, pos = [], a
        while pos < b:
            value, pos = self.varint(pos, b)
            out.append(value)
        return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _value_info(p: _Proto, start: int, end: int) -> OnnxValue:
    name, elem, dims = "", 0, []
    for number, wire, a, b in p.fields(start, end):
        if number == _VI_NAME and wire == 2:
            name = p.text(a, b)
        elif number == _VI_TYPE and wire == 2:
            for n2, w2, a2, b2 in p.fields(a, b):
                if n2 != _TYPE_TENSOR or w2 != 2:
                    continue
                for n3, w3, a3, b3 in p.fields(a2, b2):
                    if n3 == _TT_ELEM and w3 == 0:
                        elem = a3
                    elif n3 == _TT_SHAPE and w3 == 2:
                        for n4, w4, a4, b4 in p.fields(a3, b3):
                            if n4 != _SHAPE_DIM or w4 != 2:
                                continue
                            dim = -1
                            for n5, w5, a5, _ in p.fields(a4, b4):
                                if n5 == _DIM_VALUE and w5 == 0:
                                    dim = _signed(a5)
                            dims.append(dim)
    return OnnxValue(name, ONNX_TYPES.get(elem, "unknown"), tuple(dims))


def read_onnx_graph(data: bytes, source: str = "<bytes>") -> OnnxGraph:
    """Nodes, initializers, inputs and outputs of the model's main graph."""
    p = _Proto(data, source)
    graph = None
    for number, wire, a, b in p.fields(0, len(data)):
        if number == _MODEL_GRAPH and wire == 2:
            graph = (a, b)
    if graph is None:
        raise ModelFileError(f"{source}: ONNX model has no graph")
    nodes: list[OnnxNode] = []
    inits: dict[str, OnnxValue] = {}
    inputs: dict[str, OnnxValue] = {}
    outputs: dict[str, OnnxValue] = {}
    for number, wire, a, b in p.fields(*graph):
        if wire != 2:
            continue
        if number == _GRAPH_NODE:
            ins, outs, op = [], [], ""
            for n2, w2, a2, b2 in p.fields(a, b):
                if w2 != 2:
                    continue
                if n2 == _NODE_INPUT:
                    ins.append(p.text(a2, b2))
                elif n2 == _NODE_OUTPUT:
                    outs.append(p.text(a2, b2))
                elif n2 == _NODE_OP_TYPE:
                    op = p.text(a2, b2)
            nodes.append(OnnxNode(op, tuple(ins), tuple(outs)))
        elif number == _GRAPH_INITIALIZER:
            name, elem, dims = "", 0, []
            for n2, w2, a2, b2 in p.fields(a, b):
                if n2 == _TENSOR_DIMS:
                    dims += [_signed(v) for v in p.packed_or_single(w2, a2, b2)]
                elif n2 == _TENSOR_DATA_TYPE and w2 == 0:
                    elem = a2
                elif n2 == _TENSOR_NAME and w2 == 2:
                    name = p.text(a2, b2)
            inits[name] = OnnxValue(name, ONNX_TYPES.get(elem, "unknown"), tuple(dims))
        elif number in (_GRAPH_INPUT, _GRAPH_OUTPUT):
            value = _value_info(p, a, b)
            (inputs if number == _GRAPH_INPUT else outputs)[value.name] = value
    # Older exporters list initializers among the inputs too; those are weights, not feeds.
    inputs = {k: v for k, v in inputs.items() if k not in inits}
    return OnnxGraph(tuple(nodes), inits, inputs, outputs)


def top_level_fields(data: bytes, source: str = "<bytes>") -> set[int]:
    """The field numbers of a serialized message's own fields (nested messages skipped by length, not read);
    ModelFileError when ``data`` is not a well-formed message."""
    return {number for number, _, _, _ in _Proto(data, source).fields(0, len(data))}


def read_onnx_metadata(data: bytes, source: str = "<bytes>") -> dict[str, str]:
    """ModelProto.metadata_props as a dict (top-level fields only; the graph is skipped by length)."""
    p = _Proto(data, source)
    props: dict[str, str] = {}
    for number, wire, a, b in p.fields(0, len(data)):
        if number == MODEL_METADATA_PROPS and wire == 2:
            entry = {n: p.text(a2, b2) for n, w, a2, b2 in p.fields(a, b) if w == 2}
            props[entry.get(_ENTRY_KEY, "")] = entry.get(_ENTRY_VALUE, "")
    return props
