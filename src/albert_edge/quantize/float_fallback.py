"""Keep chosen FULLY_CONNECTED ops of a dynamic-range (hybrid) model in float, by editing the flatbuffer.

The converter's selective quantization (``QuantizationDebugger``'s deny lists) exists only for
calibrated models; a dynamic-range model is all or nothing. Its quantized ops are "hybrid" FCs:
float activations (quantized per row at run time), int8 weights. Pointing such an op at a float32
copy of its weights (taken from the fp32 model of the same graph, where the FC output has the same
name) makes it a plain float FC, with the rest of the model untouched, so the search can float
back exactly the ops the error table ranks worst. ALBERT's shared layer makes one int8 weight feed
L ops: each edited op gets the float copy, shared among the edited uses of the same weight, while
the other uses keep the int8 tensor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from albert_edge.errors import QuantizationError
from albert_edge.quantize.tflite_edit import (
    append_float32_buffer,
    dequantize_int8,
    drop_unread_buffers,
    pack_tflite,
    unpack_tflite,
)


def hybrid_fc_outputs(model: bytes) -> list[str]:
    """Output tensor names of the FCs that run hybrid (float input, int8 weights), in graph order."""
    from ai_edge_litert import schema_py_generated as schema

    root = schema.Model.GetRootAsModel(bytes(model), 0)
    graph = root.Subgraphs(0)
    names = []
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = root.OperatorCodes(op.OpcodeIndex())
        if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) != schema.BuiltinOperator.FULLY_CONNECTED:
            continue
        if op.InputsLength() < 2:
            continue
        x, w = graph.Tensors(op.Inputs(0)), graph.Tensors(op.Inputs(1))
        if x.Type() == schema.TensorType.FLOAT32 and w.Type() == schema.TensorType.INT8:
            names.append(graph.Tensors(op.Outputs(0)).Name().decode("utf-8", "replace"))
    return names


def float_fc_ops(model: bytes, fp32_model: bytes, outputs: Sequence[str]) -> bytes:
    """``model`` with the hybrid FCs producing ``outputs`` (tensor names) turned back into float FCs.

    Raises QuantizationError naming an output that is not a hybrid FC of ``model``.
    """
    root, _, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    fp32_kernels = _fp32_kernels(fp32_model, set(outputs))
    wanted = set(outputs)
    copies: dict[int, int] = {}
    done = set()
    for op in graph.operators:
        name = (graph.tensors[op.outputs[0]].name or b"").decode("utf-8", "replace")
        if name not in wanted:
            continue
        weight_index = int(op.inputs[1])
        weight = graph.tensors[weight_index]
        if weight.type != schema.TensorType.INT8 or graph.tensors[int(op.inputs[0])].type != schema.TensorType.FLOAT32:
            raise QuantizationError(f"float fallback: {name} is not a hybrid FULLY_CONNECTED (float input, int8 weights)")
        if weight_index not in copies:
            values = fp32_kernels.get(name)
            if values is None:
                values = dequantize_int8(root, weight)
            tensor = schema.TensorT()
            tensor.shape = np.asarray(weight.shape, dtype=np.int32)
            tensor.type = schema.TensorType.FLOAT32
            tensor.buffer = append_float32_buffer(root, schema, values)
            tensor.name = (weight.name or b"kernel") + b"_float"
            graph.tensors.append(tensor)
            copies[weight_index] = len(graph.tensors) - 1
        inputs = np.asarray(op.inputs, dtype=np.int32).copy()
        inputs[1] = copies[weight_index]
        op.inputs = inputs
        done.add(name)
    missing = wanted - done
    if missing:
        raise QuantizationError(f"float fallback: no FULLY_CONNECTED produces {', '.join(sorted(missing))}")
    drop_unread_buffers(root)  # the int8 weights whose every use was floated back
    return pack_tflite(root, len(model) + 4 * sum(len(b.data) for b in root.buffers[-len(copies):] if b.data is not None) + 1024)


def _fp32_kernels(fp32_model: bytes, outputs: set[str]) -> dict[str, np.ndarray]:
    """FC output name -> float32 kernel [out, in] of the fp32 model."""
    from ai_edge_litert import schema_py_generated as schema

    root = schema.Model.GetRootAsModel(bytes(fp32_model), 0)
    graph = root.Subgraphs(0)
    kernels = {}
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        if op.OutputsLength() < 1 or op.InputsLength() < 2:
            continue
        name = graph.Tensors(op.Outputs(0)).Name().decode("utf-8", "replace")
        if name not in outputs:
            continue
        w = graph.Tensors(op.Inputs(1))
        data = root.Buffers(w.Buffer()).DataAsNumpy() if w.Buffer() else 0
        if w.Type() == schema.TensorType.FLOAT32 and not isinstance(data, int):
            kernels[name] = np.frombuffer(data.tobytes(), dtype=np.float32).reshape(w.ShapeAsNumpy())
    return kernels
