"""Give a hidden-state .tflite the one ``[1, H]`` embedding output MediaPipe's TextEmbedder reads.

MediaPipe's TextEmbedder turns *every* output tensor into one embedding (head), flattening it as it
is, and allocates its output buffers from the flatbuffer's static shapes (tensors_to_embeddings_
calculator.cc, inference_calculator). A feature-extraction file whose graph already pools
(``sentence_embedding`` [batch, H], the default) needs nothing. A file that returns hidden states
(pooling "none", or ``--pooling-in-runtime``) fails there twice: ``last_hidden_state`` is stored
as ``[1, 1, H]`` (the converter's placeholder for ``[-1, -1, H]``) while the interpreter produces
``[1, max_seq_len, H]``, and no output is a sentence embedding.

So ``add_sentence_embedding`` appends, after the encoder, the pooling our ``TextEmbedder`` does in
numpy for such a pack (mean for "none"; the pack's CLS / mean / max and L2 normalisation otherwise)
as a new output ``sentence_embedding``, placed first (MediaPipe's head 0), and ``fix_output_shapes``
writes the static shapes MediaPipe allocates from. The ops take their sizes from the tensors at run
time, so LiteRT still resizes the file to any ``[batch, length]`` for our runtime, which keeps
reading ``last_hidden_state`` by its signature name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from albert_edge.tasks.feature_extraction import MAX_POOL_MASKED, MEAN_POOL_MIN_COUNT

EMBEDDING_OUTPUT = "sentence_embedding"
HIDDEN_OUTPUT = "last_hidden_state"
MASK_INPUT = "attention_mask"


def _s(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class _GraphEditor:
    """Appends tensors, constants and builtin ops to subgraph 0 of a ``ModelT`` (LiteRT's object API)."""

    def __init__(self, schema: Any, model: Any) -> None:
        self.schema, self.model, self.sg = schema, model, model.subgraphs[0]

    def tensor(self, name: str, shape: list[int], signature: list[int] | None, dtype: int | None = None,
               data: np.ndarray | None = None) -> int:
        t = self.schema.TensorT()
        t.name = name
        t.shape = np.array(shape, dtype=np.int32)
        t.shapeSignature = None if signature is None else np.array(signature, dtype=np.int32)
        t.type = self.schema.TensorType.FLOAT32 if dtype is None else dtype
        t.buffer = 0  # buffer 0 is the empty sentinel every converter writes
        if data is not None:
            buf = self.schema.BufferT()
            buf.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
            self.model.buffers.append(buf)
            t.buffer = len(self.model.buffers) - 1
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def const(self, name: str, value: Any, dtype: Any) -> int:
        arr = np.asarray(value, dtype=dtype)
        kind = self.schema.TensorType.INT32 if arr.dtype == np.int32 else self.schema.TensorType.FLOAT32
        return self.tensor(name, list(arr.shape), None, kind, arr)

    def _opcode(self, builtin: int) -> int:
        for i, code in enumerate(self.model.operatorCodes):
            if max(int(code.builtinCode), int(code.deprecatedBuiltinCode)) == builtin and code.customCode is None:
                return i
        code = self.schema.OperatorCodeT()
        code.builtinCode = builtin
        code.deprecatedBuiltinCode = min(builtin, 127)
        code.version = 1
        self.model.operatorCodes.append(code)
        return len(self.model.operatorCodes) - 1

    def op(self, builtin: int, inputs: list[int], output: int, options_type: int = 0, options: Any = None) -> int:
        o = self.schema.OperatorT()
        o.opcodeIndex = self._opcode(builtin)
        o.inputs = np.array(inputs, dtype=np.int32)
        o.outputs = np.array([output], dtype=np.int32)
        o.builtinOptionsType = options_type
        o.builtinOptions = options
        self.sg.operators.append(o)
        return output

    def binary(self, builtin: int, name: str, a: int, b: int, shape: list[int], signature: list[int]) -> int:
        kinds = {self.schema.BuiltinOperator.MUL: ("MulOptions", "MulOptionsT"),
                 self.schema.BuiltinOperator.DIV: ("DivOptions", "DivOptionsT"),
                 self.schema.BuiltinOperator.ADD: ("AddOptions", "AddOptionsT"),
                 self.schema.BuiltinOperator.MAXIMUM: ("MaximumMinimumOptions", "MaximumMinimumOptionsT")}
        kind, cls = kinds[builtin]
        return self.op(builtin, [a, b], self.tensor(name, shape, signature), getattr(self.schema.BuiltinOptions, kind),
                       getattr(self.schema, cls)())

    def reduce(self, builtin: int, name: str, x: int, axis: int, shape: list[int], signature: list[int]) -> int:
        options = self.schema.ReducerOptionsT()
        options.keepDims = False
        return self.op(builtin, [x, self.const(name + "/axis", [axis], np.int32)], self.tensor(name, shape, signature),
                       self.schema.BuiltinOptions.ReducerOptions, options)


def fix_output_shapes(model: Any, max_seq_len: int) -> None:
    """Static shapes of dynamic outputs as MediaPipe feeds them: batch 1, sequence ``max_seq_len``.

    The shape signature (what LiteRT resizes by) keeps its -1s; only the placeholder shape changes.
    """
    sg = model.subgraphs[0]
    for i in sg.outputs:
        t = sg.tensors[int(i)]
        if t.shapeSignature is None or t.shape is None or len(t.shape) != len(t.shapeSignature):
            continue
        sig = [int(d) for d in t.shapeSignature]
        if -1 in sig:
            t.shape = np.array([1 if (k == 0 and d == -1) else (max_seq_len if d == -1 else d)
                                for k, d in enumerate(sig)], dtype=np.int32)


def add_sentence_embedding(schema: Any, model: Any, pooling: str, normalize: bool) -> bool:
    """Append ``sentence_embedding`` [batch, H] (``pooling`` of ``last_hidden_state`` under the mask) as output 0.

    Returns False, changing nothing, when the graph has it already, lacks a float32
    ``last_hidden_state`` or an ``attention_mask`` input (e.g. a fully integer model).
    """
    sig = model.signatureDefs[0]
    outputs = {_s(t.name): int(t.tensorIndex) for t in sig.outputs}
    inputs = {_s(t.name): int(t.tensorIndex) for t in sig.inputs}
    if EMBEDDING_OUTPUT in outputs or HIDDEN_OUTPUT not in outputs or MASK_INPUT not in inputs:
        return False
    g = _GraphEditor(schema, model)
    hidden, mask = outputs[HIDDEN_OUTPUT], inputs[MASK_INPUT]
    src = g.sg.tensors[hidden]
    if src.type != schema.TensorType.FLOAT32 or src.shape is None or len(src.shape) != 3:
        return False
    width = int(src.shape[2])
    ops = schema.BuiltinOperator
    vec, vec_sig = [1, width], [-1, width]
    seq3, seq3_sig = [1, 1, 1], [-1, -1, 1]
    prefix = "albert_edge_mediapipe/"
    if pooling == "cls":
        options = schema.GatherOptionsT()
        options.axis, options.batchDims = 1, 0
        x = g.op(ops.GATHER, [hidden, g.const(prefix + "first", 0, np.int32)], g.tensor(prefix + "cls", vec, vec_sig),
                 schema.BuiltinOptions.GatherOptions, options)
    else:
        cast = schema.CastOptionsT()
        cast.inDataType, cast.outDataType = schema.TensorType.INT32, schema.TensorType.FLOAT32
        maskf = g.op(ops.CAST, [mask], g.tensor(prefix + "mask_float", [1, 1], [-1, -1]),
                     schema.BuiltinOptions.CastOptions, cast)
        mask3 = g.op(ops.EXPAND_DIMS, [maskf, g.const(prefix + "last_axis", 2, np.int32)],
                     g.tensor(prefix + "mask3", seq3, seq3_sig), schema.BuiltinOptions.ExpandDimsOptions,
                     schema.ExpandDimsOptionsT())
        if pooling == "mean":
            masked = g.binary(ops.MUL, prefix + "masked", hidden, mask3, [1, 1, width], [-1, -1, width])
            total = g.reduce(ops.SUM, prefix + "sum", masked, 1, vec, vec_sig)
            count = g.reduce(ops.SUM, prefix + "count", mask3, 1, [1, 1], [-1, 1])
            count = g.binary(ops.MAXIMUM, prefix + "count_floor", count,
                             g.const(prefix + "min_count", [MEAN_POOL_MIN_COUNT], np.float32), [1, 1], [-1, 1])
            x = g.binary(ops.DIV, prefix + "mean", total, count, vec, vec_sig)
        else:  # max: padding pushed far below any activation first, as sentence-transformers does
            shifted = g.binary(ops.ADD, prefix + "mask_minus_one", mask3,
                               g.const(prefix + "minus_one", [-1.0], np.float32), seq3, seq3_sig)
            offset = g.binary(ops.MUL, prefix + "offset", shifted,
                              g.const(prefix + "masked_value", [-MAX_POOL_MASKED], np.float32), seq3, seq3_sig)
            lifted = g.binary(ops.ADD, prefix + "lifted", hidden, offset, [1, 1, width], [-1, -1, width])
            x = g.reduce(ops.REDUCE_MAX, prefix + "max", lifted, 1, vec, vec_sig)
    if normalize:
        x = g.op(ops.L2_NORMALIZATION, [x], g.tensor(prefix + "normalized", vec, vec_sig),
                 schema.BuiltinOptions.L2NormOptions, schema.L2NormOptionsT())
    g.sg.tensors[x].name = EMBEDDING_OUTPUT
    g.sg.outputs = np.array([x, *[int(o) for o in g.sg.outputs]], dtype=np.int32)
    entry = schema.TensorMapT()
    entry.name, entry.tensorIndex = EMBEDDING_OUTPUT, x
    sig.outputs = [entry, *sig.outputs]
    return True
