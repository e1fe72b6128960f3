"""Flatbuffer edits the converter does not offer: int8 storage for float lookup tables.

The dynamic-range converter quantizes the weights of FULLY_CONNECTED and GATHER, but a table read
by SLICE (ALBERT's position embeddings, ``[512, H]``) stays float32: 0.64 MB of ALBERT-Tiny's
4.8 MB. ``int8_lookup_tables`` stores such tables as int8 (symmetric, per tensor) and inserts
one DEQUANTIZE in front: the op XNNPACK itself uses for int8 constants, so the graph stays in one
partition, and the table costs a quarter of the bytes. Accuracy cost: one int8 rounding of a
table the encoder reads once, at the input.

The steps every flatbuffer edit shares (unpack with LiteRT's object API, append a float32 buffer,
dequantize an int8 constant, drop the buffers an edit orphaned, repack with the TFL3 identifier) are
here too, so float_ops, float_fallback and column_tables write them once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Float constant tables smaller than this are left alone: the saving is not worth an op.
MIN_TABLE_ELEMENTS = 16384
_TABLE_READERS = ("SLICE", "GATHER")


def int8_lookup_tables(model: bytes, min_elements: int = MIN_TABLE_ELEMENTS) -> tuple[bytes, list[str]]:
    """(edited flatbuffer, names of the tables converted) for float32 constant inputs of SLICE/GATHER."""
    root, opcode_names, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    consumers: dict[int, int] = {}
    for op in graph.operators:
        for t in op.inputs if op.inputs is not None else []:
            consumers[int(t)] = consumers.get(int(t), 0) + 1
    converted: list[str] = []
    new_ops = []
    for op in graph.operators:
        if opcode_names[op.opcodeIndex] not in _TABLE_READERS:
            continue
        index = int(op.inputs[0])
        tensor = graph.tensors[index]
        buffer = root.buffers[tensor.buffer] if tensor.buffer else None
        if (tensor.type != schema.TensorType.FLOAT32 or buffer is None or buffer.data is None
                or len(buffer.data) < 4 * min_elements or consumers.get(index, 0) != 1):
            continue
        values = np.frombuffer(bytes(np.asarray(buffer.data, dtype=np.uint8)), dtype=np.float32)
        scale = float(np.abs(values).max()) / 127.0 or 1.0
        quantized = np.clip(np.round(values / scale), -127, 127).astype(np.int8)
        q_buffer = schema.BufferT()
        q_buffer.data = np.frombuffer(quantized.tobytes(), dtype=np.uint8)
        root.buffers.append(q_buffer)
        buffer.data = None  # the float tensor is now computed by DEQUANTIZE at run time
        q_params = schema.QuantizationParametersT()
        q_params.scale, q_params.zeroPoint = [scale], [0]
        q_tensor = schema.TensorT()
        q_tensor.shape = np.asarray(tensor.shape, dtype=np.int32)
        q_tensor.type = schema.TensorType.INT8
        q_tensor.buffer = len(root.buffers) - 1
        q_tensor.name = (tensor.name or b"table") + b"_int8"
        q_tensor.quantization = q_params
        graph.tensors.append(q_tensor)
        dequantize = schema.OperatorT()
        dequantize.opcodeIndex = _opcode(root, schema, schema.BuiltinOperator.DEQUANTIZE, version=2)
        dequantize.inputs = np.asarray([len(graph.tensors) - 1], dtype=np.int32)
        dequantize.outputs = np.asarray([index], dtype=np.int32)
        new_ops.append(dequantize)
        converted.append((tensor.name or b"").decode("utf-8", "replace"))
    if not new_ops:
        return model, []
    # A DEQUANTIZE of a constant has no inputs to wait for: running first keeps topological order.
    graph.operators = new_ops + list(graph.operators)
    return pack_tflite(root, len(model) + 1024), converted


def _opcode(root, schema, code: int, version: int) -> int:
    for i, c in enumerate(root.operatorCodes):
        if max(c.builtinCode, c.deprecatedBuiltinCode) == code:
            c.version = max(c.version, version)
            return i
    opcode = schema.OperatorCodeT()
    opcode.builtinCode = code
    opcode.deprecatedBuiltinCode = min(code, 127)
    opcode.version = version
    root.operatorCodes.append(opcode)
    return len(root.operatorCodes) - 1


def unpack_tflite(model: bytes) -> tuple[Any, list[str | None], Any]:
    """(ModelT object tree, builtin op name per operator code, the LiteRT schema module) of a flatbuffer."""
    from ai_edge_litert import schema_py_generated as schema

    root = schema.ModelT.InitFromPackedBuf(bytearray(model), 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    return root, [names.get(max(c.builtinCode, c.deprecatedBuiltinCode)) for c in root.operatorCodes], schema


def pack_tflite(root: Any, size_hint: int) -> bytes:
    """The flatbuffer of an edited ModelT (``size_hint``: the expected size in bytes, to avoid regrowing)."""
    import flatbuffers

    builder = flatbuffers.Builder(size_hint)
    builder.Finish(root.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def append_float32_buffer(root: Any, schema: Any, values: np.ndarray) -> int:
    """Append a buffer holding ``values`` as float32 bytes; return its index."""
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(np.ascontiguousarray(values, np.float32).tobytes(), dtype=np.uint8)
    root.buffers.append(buffer)
    return len(root.buffers) - 1


def dequantize_int8(root: Any, tensor: Any) -> np.ndarray:
    """float32 values of a constant int8 tensor with per-channel (axis 0) or per-tensor symmetric scales."""
    values = np.frombuffer(bytes(np.asarray(root.buffers[tensor.buffer].data, dtype=np.uint8)), dtype=np.int8)
    values = values.reshape(tuple(int(d) for d in tensor.shape)).astype(np.float32)
    scales = np.asarray(tensor.quantization.scale, dtype=np.float32)
    return values * (scales.reshape(-1, *([1] * (values.ndim - 1))) if scales.size > 1 else scales[0])


def drop_unread_buffers(root: Any) -> None:
    """Empty every buffer (but the sentinel 0) that no live tensor and no metadata entry refers to.

    ``Pack`` keeps buffers whatever refers to them, so the int8 weights an edit replaced would still
    fill the file. Live: an operator's input or output, or a subgraph's input or output (a tensor an
    edit left behind, or one no tensor names any more, is not). Metadata buffers (min_runtime_version,
    conversion metadata) are kept.
    """
    used = {int(m.buffer) for m in (root.metadata or [])}
    for graph in root.subgraphs:
        live = {int(t) for op in graph.operators for ts in (op.inputs, op.outputs) if ts is not None for t in ts}
        live |= {int(t) for ts in (graph.inputs, graph.outputs) if ts is not None for t in ts}
        used |= {int(graph.tensors[t].buffer) for t in live if t >= 0}
    for index, buffer in enumerate(root.buffers):
        if index and index not in used and buffer.data is not None:
            buffer.data = None
