"""int8 lookup tables with one scale per embedding column instead of one per table.

Why (measured on all-MiniLM-L6-v2, tests/data/english_sentences.txt, cosine to fp32): the
per-tensor int8 tables of ``dynamic_int8`` cost 7.3e-4 of its 1.8e-3 cosine loss (mean 0.99927
with every FULLY_CONNECTED float and only the tables int8). Pretrained BERTs carry an outlier
embedding dimension (MiniLM's column 99: |x| up to 1.87 in the position table, 1.05 in the word
table, against a median column max of 0.26), so one scale per table leaves the other 383 columns
a few int8 steps. Fake-quantized in the fp32 graph: per-tensor word table 1.6e-4 loss, position
table 5.6e-4; per-column 1.1e-5 and 2.4e-6.

Both kinds of table keep their ops: the word table is GATHERed as int8 and DEQUANTIZEd after the
lookup, the position table is DEQUANTIZEd whole and SLICEd (``tflite_edit.int8_lookup_tables``).
A DEQUANTIZE takes per-channel parameters (``quantized_dimension`` = 1, the embedding axis), so
the fix is a change of quantization parameters and int8 values only: no new op, the same bytes
plus one float32 scale per column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from albert_edge.errors import QuantizationError

#: Tables smaller than this stay as they are (the same threshold as ``int8_lookup_tables``).
MIN_TABLE_ELEMENTS = 16384


def per_column_lookup_tables(model: bytes, float_model: bytes) -> tuple[bytes, list[str]]:
    """(edited flatbuffer, table names) with every int8 lookup table re-quantized per column.

    ``model`` is a quantized flatbuffer (after ``int8_lookup_tables``); ``float_model`` the fp32
    flatbuffer of the same graph, whose float tables (matched by tensor name) are re-quantized,
    so no precision of the per-tensor rounding is inherited.
    """
    from albert_edge.quantize.tflite_edit import pack_tflite, unpack_tflite

    root, opcode_names, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    floats = _float_constants(float_model, schema)
    changed: list[str] = []
    for op in graph.operators:
        kind = opcode_names[op.opcodeIndex]
        if kind not in ("GATHER", "DEQUANTIZE"):
            continue
        table = graph.tensors[int(op.inputs[0])]
        if (table.type != schema.TensorType.INT8 or not table.buffer or root.buffers[table.buffer].data is None
                or table.shape is None or len(table.shape) != 2 or int(np.prod(table.shape)) < MIN_TABLE_ELEMENTS):
            continue
        # A DEQUANTIZEd table is named after the float tensor it replaced: its output's name.
        name = (graph.tensors[int(op.outputs[0])] if kind == "DEQUANTIZE" else table).name
        values = floats.get(name)
        if values is None or values.size != int(np.prod(table.shape)):
            continue
        values = values.reshape(tuple(int(d) for d in table.shape))
        quantized, scales = quantize_columns(values)
        root.buffers[table.buffer].data = np.frombuffer(quantized.tobytes(), dtype=np.uint8)
        table.quantization = _per_column_params(schema, scales)
        if kind == "GATHER":
            # The gathered rows keep the table's columns, so they carry its scales to the DEQUANTIZE.
            rows = graph.tensors[int(op.outputs[0])]
            if rows.type != schema.TensorType.INT8:
                raise QuantizationError(f"table {name.decode('utf-8', 'replace')}: GATHER of int8 gives a non-int8 tensor")
            rows.quantization = _per_column_params(schema, scales)
        changed.append(name.decode("utf-8", "replace"))
    if not changed:
        return model, []
    return pack_tflite(root, len(model) + 1024), changed


def quantize_columns(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 ``[rows, cols]``, float32 scale per column): symmetric, zero point 0, range ±127."""
    scales = (np.abs(values).max(axis=0) / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    quantized = np.clip(np.round(values / scales), -127, 127).astype(np.int8)
    return quantized, scales


def _per_column_params(schema: Any, scales: np.ndarray) -> Any:
    params = schema.QuantizationParametersT()
    params.scale = [float(s) for s in scales]
    params.zeroPoint = [0] * len(scales)
    params.quantizedDimension = 1
    return params


def _float_constants(model: bytes, schema: Any) -> dict[bytes, np.ndarray]:
    """Tensor name -> float32 values of every 2-D float constant of ``model`` (its tables)."""
    root = schema.ModelT.InitFromPackedBuf(bytearray(model), 0)
    out = {}
    for tensor in root.subgraphs[0].tensors:
        buffer = root.buffers[tensor.buffer] if tensor.buffer else None
        if (tensor.type == schema.TensorType.FLOAT32 and buffer is not None and buffer.data is not None
                and tensor.shape is not None and len(tensor.shape) == 2):
            out[tensor.name] = np.frombuffer(bytes(np.asarray(buffer.data, dtype=np.uint8)), dtype=np.float32)
    return out
