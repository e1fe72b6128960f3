"""Read embedding tables with EMBEDDING_LOOKUP instead of GATHER, so outside quantizers quantize them.

The TF converter lowers ``tf.gather(table, ids)`` (and ``tf.nn.embedding_lookup``) to GATHER.
litert-quantizer's recipes (``dynamic_wi8_afp32``, the int4 ones, weight-only) quantize the tables
of EMBEDDING_LOOKUP ops and leave a GATHER's table float, although for an ALBERT-Tiny the word
table is most of the file. Our graph gathers with axis 0, no batch dims, a constant 2-D table and a
1-D int32 index vector (the ids flattened to ``[batch * seq]``) -- exactly EMBEDDING_LOOKUP's
contract (``lookup`` int32 ``[n]``, ``value`` ``[rows, ...]`` -> ``[n, ...]``), so the swap is exact
and LiteRT runs it (float tables, and int8 tables with their scales after quantization).
"""

from __future__ import annotations

from typing import Any

import flatbuffers
import numpy as np

_GATHER = 36  # BuiltinOperator.GATHER
_EMBEDDING_LOOKUP = 7  # BuiltinOperator.EMBEDDING_LOOKUP


def _code(op_code: Any) -> int:
    return max(int(op_code.builtinCode), int(op_code.deprecatedBuiltinCode))


def _is_table_gather(schema: Any, model: Any, sg: Any, op: Any) -> bool:
    """A GATHER of rows of a constant 2-D float table by a 1-D int32 index vector, axis 0, no batch dims."""
    if _code(model.operatorCodes[op.opcodeIndex]) != _GATHER or op.inputs is None or len(op.inputs) != 2:
        return False
    options = op.builtinOptions
    if options is not None and (int(options.axis) != 0 or int(getattr(options, "batchDims", 0)) != 0):
        return False
    table, index = (sg.tensors[int(i)] for i in op.inputs)
    buffer = model.buffers[table.buffer] if 0 <= table.buffer < len(model.buffers) else None
    constant = buffer is not None and (buffer.data is not None and len(buffer.data) > 0 or int(buffer.offset or 0) > 1)
    # Float tables only: a quantized GATHER returns int8 rows, EMBEDDING_LOOKUP of an int8 table float ones.
    return (constant and table.shape is not None and len(table.shape) == 2 and index.type == schema.TensorType.INT32
            and index.shape is not None and len(index.shape) == 1 and table.type == schema.TensorType.FLOAT32)


def gathers_as_embedding_lookups(flatbuffer: bytes) -> tuple[bytes, int]:
    """``flatbuffer`` with every table GATHER (see module doc) replaced by EMBEDDING_LOOKUP; and how many."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(flatbuffer, 0))
    lookup_index = None
    swapped = 0
    for sg in model.subgraphs:
        for op in sg.operators:
            if not _is_table_gather(schema, model, sg, op):
                continue
            if lookup_index is None:
                code = schema.OperatorCodeT()
                code.builtinCode = code.deprecatedBuiltinCode = _EMBEDDING_LOOKUP
                code.version = 1
                model.operatorCodes.append(code)
                lookup_index = len(model.operatorCodes) - 1
            op.opcodeIndex = lookup_index
            op.inputs = np.array([int(op.inputs[1]), int(op.inputs[0])], dtype=np.int32)
            op.builtinOptionsType = schema.BuiltinOptions.NONE
            op.builtinOptions = None
            swapped += 1
    if not swapped:
        return bytes(flatbuffer), 0
    builder = flatbuffers.Builder(len(flatbuffer) + 4096)
    builder.Finish(model.Pack(builder), b"TFL3")
    return bytes(builder.Output()), swapped
