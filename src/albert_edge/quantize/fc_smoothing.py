"""SmoothQuant for dynamic-range int8 FCs as a graph edit: one MUL in front of each FC input, scales in the weights.

Why: ``dynamic_int8`` quantizes each activation row at run time with one scale, so an outlier input channel
(pretrained BERTs carry a few, |x_j| 5-20x the median channel) leaves the other channels a few int8 steps.
``smoothing.py`` folds the per-channel division into the producer's weights, which post-LN BERT allows only for
V -> attention output (the LayerNorm output is also the residual, GELU is not homogeneous); measured, that fold
alone gains nothing. Here the division is an explicit ``MUL`` by a constant ``1 / s`` vector on the FC's input
(shared by the FCs reading one tensor: Q, K and V read one MUL), and row j of each consumer's kernel is multiplied
by ``s_j`` before it is rounded to int8 (per output channel, as the converter does). In real arithmetic the
model is unchanged; in int8 the activation row's range shrinks to where the weights have room.

``s_j = max|x_j|^alpha / max|W_j|^(1 - alpha)`` (Xiao et al. 2023), ``max|x_j|`` from the fp32 flatbuffer's FC
inputs. The ranges come from seeded random token ids (``synthetic_samples``), not from the user's texts: the
outlier channels of a pretrained encoder are the same for any input (they live in the weights), so ``--mode
dynamic`` needs no ``--calib`` and nothing it judges on was fitted to. A MUL is elementwise on ``[tokens, in]``:
XNNPACK runs it in the same partition. Measured on all-MiniLM-L6-v2 (48 English sentences, cosine to fp32):
``dynamic_int8_col`` 0.99854 worst / 0.99893 mean, with the MULs 0.99897 / 0.99939 at the same speed
(decision 0200).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from albert_edge.errors import QuantizationError
from albert_edge.quantize.tflite_edit import (
    _opcode,
    append_float32_buffer,
    drop_unread_buffers,
    pack_tflite,
    unpack_tflite,
)

#: Suffix of the tensor a smoothing MUL writes (``op_errors`` walks back through it to the unsmoothed input).
SMOOTHED_SUFFIX = "/smoothed"
#: SmoothQuant's migration strength used by default (measured on all-MiniLM-L6-v2: see decision 0200).
DEFAULT_ALPHA = 0.5


#: Lengths of the random token sequences the activation ranges are measured on (two of each, seeded).
SYNTHETIC_LENGTHS = (16, 32, 64, 128)
SYNTHETIC_SEED = 0


def synthetic_samples(vocab_size: int, max_len: int, lengths: Sequence[int] = SYNTHETIC_LENGTHS,
                      seed: int = SYNTHETIC_SEED) -> list[dict[str, np.ndarray]]:
    """Batch-1 model inputs of uniformly random token ids (two per length, lengths capped at ``max_len``)."""
    rng = np.random.default_rng(seed)
    samples = []
    for n in sorted({min(int(n), max_len) for n in lengths}):
        for _ in range(2):
            ids = rng.integers(0, vocab_size, n).astype(np.int32)[None]
            samples.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    return samples


def smoothed_dynamic_int8(model: bytes, float_model: bytes, vocab_size: int, max_len: int,
                          alpha: float = DEFAULT_ALPHA) -> bytes:
    """``model`` (dynamic-range int8) with every int8 FC input smoothed, ranges from ``synthetic_samples``."""
    absmax = fc_input_absmax(float_model, synthetic_samples(vocab_size, max_len))
    return smooth_fc_inputs(model, float_model, absmax, alpha)[0]


def fc_input_absmax(float_model: bytes, samples: Sequence[Mapping[str, np.ndarray]]) -> list[np.ndarray]:
    """max |input| per input channel of every FULLY_CONNECTED of ``float_model``, in graph order, over ``samples``."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from albert_edge.runtime.pack import strip_tflite_pack

    interpreter = Interpreter(model_content=strip_tflite_pack(bytes(float_model)), experimental_preserve_all_tensors=True,
                              experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    fcs = [int(op["inputs"][0]) for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
    inputs = interpreter.get_input_details()
    stats: list[np.ndarray | None] = [None] * len(fcs)
    for sample in samples:
        values = [next(v for n, v in sample.items() if n in d["name"]) for d in inputs]
        for detail, value in zip(inputs, values):
            interpreter.resize_tensor_input(detail["index"], value.shape)
        interpreter.allocate_tensors()
        for detail, value in zip(inputs, values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        for i, index in enumerate(fcs):
            value = interpreter.get_tensor(index)
            x = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            stats[i] = x if stats[i] is None else np.maximum(stats[i], x)
    if not samples or any(s is None for s in stats):
        raise QuantizationError("FC smoothing: no sample inputs to measure the activation ranges on")
    return [s for s in stats if s is not None]


def smooth_fc_inputs(model: bytes, float_model: bytes, input_absmax: Sequence[np.ndarray],
                     alpha: float = DEFAULT_ALPHA, min_ratio: float = 0.0) -> tuple[bytes, int]:
    """(edited ``model``, MUL ops inserted): every int8 FULLY_CONNECTED input smoothed as the module says.

    ``model`` is a dynamic-range int8 flatbuffer, ``float_model`` the fp32 flatbuffer of the same graph (its FC
    kernels are re-quantized after scaling, so no rounding is inherited) and ``input_absmax`` what
    ``fc_input_absmax`` measured on it. An input whose channel max / median is below ``min_ratio`` is left alone.
    """
    from albert_edge.quantize.float_ops import float_counterparts

    if not 0.0 <= alpha <= 1.0:
        raise QuantizationError(f"smoothing alpha {alpha!r}: expected a number between 0 and 1")
    floats = float_counterparts(model, float_model)
    root, opcode_names, schema = unpack_tflite(model)
    graph = root.subgraphs[0]
    fcs = [op for op in graph.operators if opcode_names[op.opcodeIndex] == "FULLY_CONNECTED"]
    if len(fcs) != len(input_absmax):
        raise QuantizationError(f"FC smoothing: {len(input_absmax)} input ranges for {len(fcs)} FULLY_CONNECTED ops")
    groups: dict[int, list[tuple[Any, np.ndarray]]] = {}
    for op, absmax in zip(fcs, input_absmax):
        weight = graph.tensors[int(op.inputs[1])]
        name = weight.name.decode("utf-8", "replace")
        if weight.type == schema.TensorType.INT8 and name in floats and weight.quantization is not None:
            groups.setdefault(int(op.inputs[0]), []).append((op, absmax))
    inserted = []
    for inputs in _sharing_sets(groups):
        members = [m for index in inputs for m in groups[index]]
        x = np.max([a for _, a in members], axis=0).astype(np.float64)
        if x.max() < min_ratio * max(np.median(x), 1e-12):
            continue
        kernels = {int(op.inputs[1]) for op, _ in members}
        w = np.max([np.abs(floats[graph.tensors[k].name.decode("utf-8", "replace")]).max(axis=0) for k in kernels], axis=0)
        s = np.power(np.maximum(x, 1e-5), alpha) / np.power(np.maximum(w, 1e-5), 1.0 - alpha)
        s = np.where(np.isfinite(s) & (s > 0), s, 1.0)
        for k in kernels:
            tensor = graph.tensors[k]
            _requantize_rows(root, tensor, floats[tensor.name.decode("utf-8", "replace")] * s[None, :])
        for index in inputs:
            scaled = _mul_by_constant(root, schema, index, (1.0 / s).astype(np.float32))
            first = min(graph.operators.index(op) for op, _ in groups[index])
            for op, _ in groups[index]:
                op.inputs[0] = scaled.outputs[0]
            inserted.append((first, scaled))
    if not inserted:
        return model, 0
    for first, op in sorted(inserted, key=lambda p: -p[0]):  # from the back, so earlier positions hold
        graph.operators.insert(first, op)
    drop_unread_buffers(root)
    return pack_tflite(root, len(model) + 4096 * len(inserted)), len(inserted)


def _sharing_sets(groups: Mapping[int, Sequence[tuple[Any, np.ndarray]]]) -> list[list[int]]:
    """FC input tensors grouped so that inputs whose FCs share a kernel are in one set (ALBERT applies its shared
    layer's kernels to every layer's input): one kernel holds one set of int8 rows, so all its inputs take one ``s``."""
    parent = {index: index for index in groups}

    def root_of(index: int) -> int:
        while parent[index] != index:
            index = parent[index]
        return index

    owner: dict[int, int] = {}
    for index, members in groups.items():
        for op, _ in members:
            other = owner.setdefault(int(op.inputs[1]), index)
            parent[root_of(index)] = root_of(other)
    sets: dict[int, list[int]] = {}
    for index in groups:
        sets.setdefault(root_of(index), []).append(index)
    return list(sets.values())


def _requantize_rows(root: Any, tensor: Any, values: np.ndarray) -> None:
    """Store ``values`` ([out, in] float) in the int8 ``tensor``: symmetric, one scale per output channel."""
    scales = (np.abs(values).max(axis=1) / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    quantized = np.clip(np.round(values / scales[:, None]), -127, 127).astype(np.int8)
    buffer = root.buffers[tensor.buffer]
    buffer.data = np.frombuffer(quantized.tobytes(), dtype=np.uint8)
    tensor.quantization.scale = [float(v) for v in scales]
    tensor.quantization.zeroPoint = [0] * len(scales)
    tensor.quantization.quantizedDimension = 0


def _mul_by_constant(root: Any, schema: Any, index: int, factor: np.ndarray) -> Any:
    """A new MUL operator (not yet placed) computing tensor ``index`` * ``factor`` into a new float tensor."""
    graph = root.subgraphs[0]
    source = graph.tensors[index]
    constant = schema.TensorT()
    constant.shape = np.asarray([factor.size], dtype=np.int32)
    constant.type = schema.TensorType.FLOAT32
    constant.buffer = append_float32_buffer(root, schema, factor)
    constant.name = (source.name or b"x") + b"/smooth_scale"
    graph.tensors.append(constant)
    output = schema.TensorT()
    output.shape = None if source.shape is None else np.asarray(source.shape, dtype=np.int32)
    output.shapeSignature = None if source.shapeSignature is None else np.asarray(source.shapeSignature, dtype=np.int32)
    output.type = schema.TensorType.FLOAT32
    output.name = (source.name or b"x") + SMOOTHED_SUFFIX.encode()
    graph.tensors.append(output)
    op = schema.OperatorT()
    op.opcodeIndex = _opcode(root, schema, schema.BuiltinOperator.MUL, version=1)
    op.inputs = np.asarray([index, len(graph.tensors) - 2], dtype=np.int32)
    op.outputs = np.asarray([len(graph.tensors) - 1], dtype=np.int32)
    op.builtinOptionsType = schema.BuiltinOptions.MulOptions
    op.builtinOptions = schema.MulOptionsT()
    return op
