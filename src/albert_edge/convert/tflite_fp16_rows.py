"""fp16 embedding tables gathered before they are dequantized, so an fp16 file does not inflate at run time.

With ``supported_types = [tf.float16]`` the TF converter stores every weight as float16 behind a
DEQUANTIZE op. XNNPACK absorbs the DEQUANTIZE of a matmul weight, but an embedding table feeds a
GATHER, which it does not delegate: TFLite's DEQUANTIZE kernel then keeps a persistent float32 copy of
the whole table from the first call on. For the sample's 21,128 x 128 word table that is 10.3 MiB on
top of the 5.2 MiB fp16 table (benchmarks/decisions/0160). Gathering the fp16 rows first and
dequantizing only them (what dynamic int8 files already do with their int8 tables) gives the same
numbers bit for bit, since float16 -> float32 is exact, and keeps only ``[n, width]`` float32 rows.
"""

from __future__ import annotations

import copy
from typing import Any

import flatbuffers
import numpy as np

_GATHER = 36      # BuiltinOperator.GATHER
_DEQUANTIZE = 6   # BuiltinOperator.DEQUANTIZE


def _code(model: Any, op: Any) -> int:
    code = model.operatorCodes[op.opcodeIndex]
    return max(int(code.builtinCode), int(code.deprecatedBuiltinCode))


def _has_candidates(flatbuffer: bytes) -> bool:
    """Whether any GATHER reads a DEQUANTIZE of a float16 constant (cheap read; no rewrite otherwise)."""
    from albert_edge.runtime.flatbuffer import read_tflite_graph

    graph = read_tflite_graph(flatbuffer)
    fp16_dequantized = {op.outputs[0] for op in graph.ops if op.name == "DEQUANTIZE" and op.inputs
                        and graph.tensors[op.inputs[0]].dtype == "float16" and graph.tensors[op.inputs[0]].constant}
    return any(op.name == "GATHER" and op.inputs and op.inputs[0] in fp16_dequantized for op in graph.ops)


def _rewrite_subgraph(schema: Any, model: Any, sg: Any) -> int:
    """Swap every DEQUANTIZE(fp16 table) -> GATHER pair of ``sg`` to GATHER -> DEQUANTIZE; how many."""
    swapped = 0
    outputs = {int(t) for t in (sg.outputs if sg.outputs is not None else [])}
    for gather in [op for op in sg.operators if _code(model, op) == _GATHER and op.inputs is not None]:
        table = int(gather.inputs[0])
        dequantize = next((op for op in sg.operators if _code(model, op) == _DEQUANTIZE
                           and op.outputs is not None and int(op.outputs[0]) == table), None)
        if dequantize is None or sg.tensors[int(dequantize.inputs[0])].type != schema.TensorType.FLOAT16:
            continue
        readers = [op for op in sg.operators if op.inputs is not None and table in {int(i) for i in op.inputs}]
        if len(readers) != 1 or table in outputs:
            continue   # the float32 table is used elsewhere too: dequantizing it whole is still needed
        rows = int(gather.outputs[0])
        half_rows = copy.deepcopy(sg.tensors[rows])
        half_rows.type = schema.TensorType.FLOAT16
        half_rows.buffer = 0
        half_rows.name = (sg.tensors[rows].name or b"") + b"/fp16_rows"
        half_rows.quantization = None
        sg.tensors.append(half_rows)
        half = len(sg.tensors) - 1
        # The object API's index arrays are read-only views of the input bytes: replace, do not assign into.
        gather.inputs = np.array([int(dequantize.inputs[0]), *map(int, gather.inputs[1:])], dtype=np.int32)
        gather.outputs = np.array([half, *map(int, gather.outputs[1:])], dtype=np.int32)
        dequantize.inputs = np.array([half], dtype=np.int32)
        dequantize.outputs = np.array([rows], dtype=np.int32)
        sg.operators.remove(dequantize)
        sg.operators.insert(sg.operators.index(gather) + 1, dequantize)
        swapped += 1
    return swapped


def fp16_rows_after_gather(flatbuffer: bytes) -> tuple[bytes, int]:
    """``flatbuffer`` with each fp16 table gathered before it is dequantized (module doc); and how many."""
    if not _has_candidates(flatbuffer):
        return bytes(flatbuffer), 0
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(flatbuffer, 0))
    swapped = sum(_rewrite_subgraph(schema, model, sg) for sg in model.subgraphs)
    if not swapped:
        return bytes(flatbuffer), 0
    builder = flatbuffers.Builder(len(flatbuffer) + 4096)
    builder.Finish(model.Pack(builder), b"TFL3")
    return bytes(builder.Output()), swapped
