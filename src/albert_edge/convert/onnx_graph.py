"""The ALBERT forward pass as an ONNX graph built directly from the weights with ``onnx.helper``.

Not routed through TensorFlow: tf2onnx output of an ALBERT graph gets no fusions from ONNX
Runtime's transformer optimizer. This graph is written in the standard-op form that the
optimizer's BERT fusions match (the form a PyTorch BERT export has): LayerNormalization
(opset 17), MatMul+Add projections per Q/K/V, Reshape/Transpose heads with K transposed to
``[batch, heads, head_dim, seq]``, Div by sqrt(head_dim), the ``(1 - mask) * -10000`` additive
mask built once from ``Unsqueeze``/``Cast``/``Sub``/``Mul``, Softmax, and the Erf (or tanh) GELU
spelled out. The block order is ``albert_edge.model.skeleton``'s; ``OnnxGraphBuilder`` is this
target's ops. A fused-op form is a different ``OnnxGraphBuilder`` method set, not a fork.

Every shared ALBERT weight is one initializer referenced by every layer that uses it, so the file
holds each weight once (no onnxruntime#10340-style blow-up). Inputs are int32 ``[batch, sequence]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from albert_edge.errors import ConversionError
from albert_edge.model.skeleton import INPUT_NAMES, MASK_VALUE, MAX_POOL_MASKED, MEAN_POOL_MIN_COUNT, NORM_EPS, encode
from albert_edge.tasks import Task, get_task

OPSET = 17
HIDDEN_OUTPUT = "last_hidden_state"


class OnnxGraphBuilder:
    """Accumulates nodes and initializers; the ``EncoderOps`` of the ONNX target.

    ``albert_edge.model.skeleton.encode`` calls the ops methods below in the order of the
    equations, and the task's ``head`` the head ops; a head op given a ``name`` produces that
    graph output itself.
    """

    def __init__(self, weights: Any, fp16: bool = False) -> None:
        self.weights = weights
        self.config = weights.config
        self.fp16 = fp16
        self.nodes: list = []
        self.initializers: list = []
        self._weight_names: dict[str, str] = {}
        self._const_names: dict[tuple, str] = {}
        self._counter = 0

    def _name(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}_{self._counter}"

    def op(self, op_type: str, inputs: list[str], stem: str | None = None, outputs: list[str] | None = None, **attrs) -> str:
        """Append one node; returns its (first) output name."""
        from onnx import helper

        outputs = outputs or [self._name(stem or op_type)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self._name(f"{op_type}_node"), **attrs))
        return outputs[0]

    def weight(self, canonical: str) -> str:
        """The float32 tensor for a canonical weight; the initializer is created on first use only."""
        from onnx import numpy_helper

        if canonical in self._weight_names:
            return self._weight_names[canonical]
        if canonical not in self.weights.tensors:
            raise ConversionError(f"{self.weights.source}: weight {canonical!r} is missing for the ONNX graph")
        value = np.asarray(self.weights.tensors[canonical], dtype=np.float32)
        if self.fp16:
            stored = canonical + ".fp16"
            self.initializers.append(numpy_helper.from_array(value.astype(np.float16), stored))
            from onnx import TensorProto

            name = self.op("Cast", [stored], outputs=[canonical], to=TensorProto.FLOAT)
        else:
            self.initializers.append(numpy_helper.from_array(value, canonical))
            name = canonical
        self._weight_names[canonical] = name
        return name

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        """A small constant initializer (scalars, shapes, axes), shared by every node that needs it."""
        from onnx import numpy_helper

        array = np.asarray(value, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._const_names:
            name = f"const_{len(self._const_names)}"
            self.initializers.append(numpy_helper.from_array(array, name))
            self._const_names[key] = name
        return self._const_names[key]

    # ------------------------------------------------------------------ EncoderOps
    def lookup(self, table: str, ids: str) -> str:
        return self.op("Gather", [self.weight(table), ids], axis=0)

    def positions(self, table: str, ids: str) -> str:
        seq_len = self.op("Shape", [ids], start=1, end=2)
        return self.op("Slice", [self.weight(table), self.const([0], np.int64), seq_len, self.const([0], np.int64)])

    def embedding_sum(self, word: str, position: str, token_type: str) -> str:
        return self.op("Add", [self.op("Add", [word, position]), token_type])

    def dense(self, x: str, prefix: str) -> str:
        """[..., in] -> [..., out]: MatMul then Add, the pair ORT fuses into its projections."""
        y = self.op("MatMul", [x, self.weight(prefix + ".kernel")])
        return self.op("Add", [y, self.weight(prefix + ".bias")]) if prefix + ".bias" in self.weights.tensors else y

    def layer_norm(self, x: str, prefix: str) -> str:
        return self.op("LayerNormalization", [x, self.weight(prefix + ".gamma"), self.weight(prefix + ".beta")],
                       axis=-1, epsilon=float(self.config.layer_norm_eps))

    def no_norm(self, x: str, prefix: str) -> str:
        return self.op("Add", [self.op("Mul", [x, self.weight(prefix + ".gamma")]), self.weight(prefix + ".beta")])

    def trigram(self, x: str) -> str:
        """[batch, seq, E] -> [batch, seq, 3E]: Pad the sequence axis, Slice next and previous, Concat."""
        padded = self.op("Pad", [x, self.const([0, 1, 0, 0, 1, 0], np.int64)])
        axis = self.const([1], np.int64)
        after = self.op("Slice", [padded, self.const([2], np.int64), self.const([np.iinfo(np.int64).max], np.int64),
                                  axis])
        before = self.op("Slice", [padded, self.const([0], np.int64), self.const([-2], np.int64), axis])
        return self.op("Concat", [after, x, before], axis=2)

    def activation(self, x: str, name: str | None = None) -> str:
        """The FFN activation ``name`` (the config's by default), GELU spelled out in standard ops."""
        act = str(self.config.hidden_act if name is None else name)
        if act == "gelu_exact":
            erf = self.op("Erf", [self.op("Div", [x, self.const(math.sqrt(2.0))])])
            return self.op("Mul", [self.op("Mul", [x, self.op("Add", [erf, self.const(1.0)])]), self.const(0.5)])
        if act == "gelu_tanh":
            cube = self.op("Mul", [self.op("Pow", [x, self.const(3.0)]), self.const(0.044715)])
            inner = self.op("Mul", [self.op("Add", [x, cube]), self.const(math.sqrt(2.0 / math.pi))])
            half_x = self.op("Mul", [x, self.const(0.5)])
            return self.op("Mul", [half_x, self.op("Add", [self.op("Tanh", [inner]), self.const(1.0)])])
        if act == "relu":
            return self.op("Relu", [x])
        if act == "silu":
            return self.op("Mul", [x, self.op("Sigmoid", [x])])
        if act == "tanh":
            return self.op("Tanh", [x])
        raise ConversionError(f"config hidden_act={act!r}: no ONNX form for this activation")

    def attention_mask(self, mask: str) -> str:
        """int32 [batch, seq] -> additive float [batch, 1, 1, seq], built once for all layers."""
        # Two single-axis Unsqueezes, not one: ORT's attention fusion matches exactly this chain.
        expanded = self.op("Unsqueeze", [self.op("Unsqueeze", [mask, self.const([1], np.int64)]), self.const([2], np.int64)])
        keep = self.op("Cast", [expanded], to=1)
        return self.op("Mul", [self.op("Sub", [self.const(1.0), keep]), self.const(MASK_VALUE)])

    def query_key_value(self, x: str, prefix: str) -> tuple[str, str, str]:
        """Separate Q/K/V MatMuls; heads by Reshape/Transpose, K already as [batch, heads, head_dim, seq]."""
        return self.query_key_value_from(x, x, x, prefix)

    def query_key_value_from(self, q: str, k: str, v: str, prefix: str) -> tuple[str, str, str]:
        """Q, K, V each from its own input (MobileBERT's bottlenecks; BERT passes one x three times)."""
        split_shape = self.const([0, 0, self.config.num_attention_heads, self.config.head_dim()], np.int64)

        def heads_of(x: str, name: str, perm: list[int]) -> str:
            return self.op("Transpose", [self.op("Reshape", [self.dense(x, prefix + name), split_shape])], perm=perm)

        return heads_of(q, "query", [0, 2, 1, 3]), heads_of(k, "key", [0, 2, 3, 1]), heads_of(v, "value", [0, 2, 1, 3])

    def attention_scores(self, q: str, k: str) -> str:
        head_dim = self.config.head_dim()
        return self.op("Div", [self.op("MatMul", [q, k]), self.const(math.sqrt(head_dim))])

    def add(self, a: str, b: str) -> str:
        return self.op("Add", [a, b])

    def softmax(self, x: str) -> str:
        return self.op("Softmax", [x], axis=-1)

    def attend(self, probs: str, v: str) -> str:
        context = self.op("Transpose", [self.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        return self.op("Reshape", [context, self.const([0, 0, self.config.attention_width()], np.int64)])

    def residual(self, x: str, sublayer: str) -> str:
        # Sub-layer first, as a PyTorch BERT export writes it (the form ORT's SkipLayerNorm fusion sees).
        return self.op("Add", [sublayer, x])

    def dropout(self, x: str, site: int) -> str:
        return x

    def output(self, x: str) -> str:
        return self.op("Identity", [x], outputs=[HIDDEN_OUTPUT])

    # ------------------------------------------------------------------ head ops (on [batch, seq, H])
    def first_token(self, x: str) -> str:
        return self.op("Gather", [x, self.const(0, np.int64)], axis=1)

    def tanh(self, x: str, name: str | None = None) -> str:
        return self.op("Tanh", [x], outputs=[name] if name else None)

    def token_dense(self, x: str, prefix: str) -> str:
        return self.dense(x, prefix)

    def _float_mask(self, mask: str) -> str:
        """int32 [batch, seq] -> float [batch, seq, 1]."""
        return self.op("Cast", [self.op("Unsqueeze", [mask, self.const([2], np.int64)])], to=1)

    def masked_mean(self, x: str, mask: str) -> str:
        m = self._float_mask(mask)
        axis = self.const([1], np.int64)
        total = self.op("ReduceSum", [self.op("Mul", [x, m]), axis], keepdims=0)
        count = self.op("Max", [self.op("ReduceSum", [m, axis], keepdims=0), self.const(MEAN_POOL_MIN_COUNT)])
        return self.op("Div", [total, count])

    def masked_max(self, x: str, mask: str) -> str:
        offset = self.op("Mul", [self.op("Sub", [self._float_mask(mask), self.const(1.0)]), self.const(-MAX_POOL_MASKED)])
        return self.op("ReduceMax", [self.op("Add", [x, offset])], axes=[1], keepdims=0)

    def l2_normalize(self, x: str) -> str:
        squares = self.op("ReduceSum", [self.op("Mul", [x, x]), self.const([-1], np.int64)], keepdims=1)
        return self.op("Div", [x, self.op("Max", [self.op("Sqrt", [squares]), self.const(NORM_EPS)])])

    def split(self, x: str, names: tuple[str, ...]) -> list[str]:
        # Gather with a scalar index drops the last axis: [B, S, k] -> [B, S].
        return [self.op("Gather", [x, self.const(index, np.int64)], outputs=[name], axis=2)
                for index, name in enumerate(names)]

    def named(self, x: str, name: str) -> str:
        return self.op("Identity", [x], outputs=[name])

    def build(self, task: Task):
        """The ModelProto: inputs int32 [batch, sequence], the encoder, then ``task``'s head and outputs."""
        from onnx import TensorProto, helper

        sequence = encode(self, self.config, *INPUT_NAMES)
        inputs = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", "sequence"]) for n in INPUT_NAMES]
        produced = task.head(self, sequence, "attention_mask")
        shapes = task.output_shapes(self.config, self.weights)
        missing = [name for name in task.outputs() if produced.get(name) != name]
        if missing:
            raise ConversionError(f"task {task.name}: its head does not produce the graph output {missing[0]!r}")
        outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shapes[name]) for name in task.outputs()]
        graph = helper.make_graph(self.nodes, "albert_edge", inputs, outputs, initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="albert-edge")
        # ORT 1.32 reads IR 10; pinning it keeps the file loadable by older mobile runtimes too.
        model.ir_version = 8
        return model


def build_onnx_model(weights: Any, task: Task | str | None = None, fp16: bool = False):
    """An ``onnx.ModelProto`` of the forward pass (fp16=True stores weights as float16 + Cast)."""
    task = get_task(task, weights)
    task.check_weights(weights)
    return OnnxGraphBuilder(weights, fp16=fp16).build(task)
