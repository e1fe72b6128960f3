"""Keep chosen FULLY_CONNECTED ops of a dynamic-range int8 flatbuffer float, ranked by measured gain.

Why: the TFLite converter offers no denylist for dynamic-range quantization (the
QuantizationDebugger's ``denylisted_nodes`` needs a calibrated, static model), and on real
pretrained weights the loss of dynamic int8 is not spread evenly. Measured on all-MiniLM-L6-v2
(cosine to fp32, 48 English sentences, per-column tables): every FC int8 1.07e-3 loss; the six
attention value projections float 6.1e-4, the six FFN outputs float 7.5e-4, Q, K or attention
output float ~1.05e-3 (no gain). So the ops are ranked by what keeping each one float buys on
calibration text, and the fallback keeps the best few float, not a kind chosen by name.

A kept-float op gets its fp32 weights back (from the fp32 flatbuffer of the same graph, paired op by
op) and becomes a plain float FULLY_CONNECTED: XNNPACK runs it in the same partition.
A weight tensor shared by several ops (ALBERT's shared layer) is one unit: all its uses go float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from albert_edge.errors import QuantizationError
from albert_edge.quantize.tflite_edit import (
    append_float32_buffer,
    dequantize_int8,
    drop_unread_buffers,
    pack_tflite,
    unpack_tflite,
)


@dataclass(frozen=True)
class FloatGain:
    """One int8 weight tensor: its name, the op outputs it feeds, and the error drop when float."""

    weight: str
    outputs: tuple[str, ...]
    error_int8: float
    error_float: float

    @property
    def gain(self) -> float:
        return self.error_int8 - self.error_float

    def describe(self) -> str:
        return (f"FULLY_CONNECTED {self.weight} -> {', '.join(self.outputs)[:80]} "
                f"(relative error {self.error_int8:.2e} -> {self.error_float:.2e} when float)")


def int8_fc_weights(model: bytes) -> dict[str, tuple[str, ...]]:
    """Int8 FULLY_CONNECTED weight tensor name -> output tensor names of the ops using it, in graph order."""
    root, opcode_names, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    found: dict[str, list[str]] = {}
    for op in graph.operators:
        if opcode_names[op.opcodeIndex] != "FULLY_CONNECTED" or len(op.inputs) < 2:
            continue
        weight = graph.tensors[int(op.inputs[1])]
        if weight.type == schema.TensorType.INT8 and weight.buffer and root.buffers[weight.buffer].data is not None:
            name = weight.name.decode("utf-8", "replace")
            found.setdefault(name, []).append(graph.tensors[int(op.outputs[0])].name.decode("utf-8", "replace"))
    return {name: tuple(outputs) for name, outputs in found.items()}


def keep_float(model: bytes, float_model: bytes | Mapping[str, np.ndarray], weights: Sequence[str]) -> bytes:
    """``model`` with the int8 FC weight tensors named in ``weights`` replaced by their fp32 values
    (``float_model``: the fp32 flatbuffer of the same graph, or ``float_counterparts(model, float_model)``).

    Raises QuantizationError when a name is not an int8 weight of ``model`` or ``float_model`` has
    no float tensor of that name and size (the two files are not the same graph).
    """
    root, _, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    wanted = set(weights)
    floats = float_model if isinstance(float_model, Mapping) else float_counterparts(model, float_model)
    done = set()
    for tensor in graph.tensors:
        name = tensor.name.decode("utf-8", "replace")
        if name not in wanted or tensor.type != schema.TensorType.INT8:
            continue
        values = floats.get(name)
        if values is None or values.size != int(np.prod(tensor.shape)):
            raise QuantizationError(f"weight {name}: no float counterpart in the fp32 model")
        tensor.buffer = append_float32_buffer(root, schema, values)
        tensor.type = schema.TensorType.FLOAT32
        tensor.quantization = None
        done.add(name)
    missing = wanted - done
    if missing:
        raise QuantizationError(f"weight {sorted(missing)[0]}: not an int8 FULLY_CONNECTED weight of the model")
    drop_unread_buffers(root)  # the replaced int8 buffers are referenced by nothing now
    return pack_tflite(root, len(model) + 1024)


def relative_error(values: np.ndarray, reference: np.ndarray) -> float:
    """Mean squared error of ``values`` against ``reference`` over the reference's mean square: task-neutral
    (for unit embeddings it is about 2 (1 - cosine); for logits the share of their energy that moved)."""
    values, reference = np.asarray(values, np.float64), np.asarray(reference, np.float64)
    return float(np.mean((values - reference) ** 2) / max(np.mean(reference ** 2), 1e-30))


def rank_float_gains(model: bytes, float_model: bytes, evaluate: Callable[[bytes], np.ndarray],
                     reference: np.ndarray) -> list[FloatGain]:
    """Every int8 FC weight of ``model``, best gain first: the error of ``evaluate(model)`` against
    ``reference`` minus that of the model with only this weight float (one build and run per weight)."""
    base = relative_error(evaluate(model), reference)
    candidates = int8_fc_weights(model)
    floats = float_counterparts(model, float_model)
    gains = [FloatGain(name, outputs, base, relative_error(evaluate(keep_float(model, floats, [name])), reference))
             for name, outputs in candidates.items()]
    return sorted(gains, key=lambda g: -g.gain)


def float_counterparts(model: bytes, float_model: bytes) -> dict[str, np.ndarray]:
    """Int8 FC weight name of ``model`` -> float32 values of the same weight in ``float_model``.

    The two files come from one graph, so their FULLY_CONNECTED ops are paired in graph order (tensor
    names are not stable: the converter calls small weights ``tfl.pseudo_qconst``); each pair is checked
    (same shape, the int8 values within half a step of the float ones), so another graph is an error.
    """
    root, opcode_names, schema = unpack_tflite(model)
    froot, fopcode_names, _ = unpack_tflite(float_model)
    ours, theirs = _fc_weight_tensors(root, opcode_names), _fc_weight_tensors(froot, fopcode_names)
    if len(ours) != len(theirs):
        raise QuantizationError(f"the fp32 model has {len(theirs)} FULLY_CONNECTED ops, the quantized one {len(ours)}")
    out: dict[str, np.ndarray] = {}
    for (tensor, buffer), (ftensor, fbuffer) in zip(ours, theirs):
        if tensor.type != schema.TensorType.INT8 or fbuffer is None or fbuffer.data is None:
            continue
        name = tensor.name.decode("utf-8", "replace")
        shape = tuple(int(d) for d in tensor.shape)
        values = np.frombuffer(bytes(np.asarray(fbuffer.data, dtype=np.uint8)), dtype=np.float32)
        if ftensor.type != schema.TensorType.FLOAT32 or values.size != int(np.prod(shape)):
            raise QuantizationError(f"weight {name}: the fp32 model's FULLY_CONNECTED at the same place differs in shape")
        values = values.reshape(shape)
        scale = np.asarray(tensor.quantization.scale, np.float32).reshape((-1,) + (1,) * (len(shape) - 1))
        if np.any(np.abs(dequantize_int8(root, tensor) - values) > 0.51 * scale + 1e-6):
            raise QuantizationError(f"weight {name}: its int8 values are not a rounding of the fp32 model's weight")
        out[name] = values
    return out


def _fc_weight_tensors(root: Any, opcode_names: list[str | None]) -> list[tuple[Any, Any]]:
    graph = root.subgraphs[0]
    pairs = []
    for op in graph.operators:
        if opcode_names[op.opcodeIndex] == "FULLY_CONNECTED" and len(op.inputs) >= 2:
            tensor = graph.tensors[int(op.inputs[1])]
            pairs.append((tensor, root.buffers[tensor.buffer] if tensor.buffer else None))
    return pairs
