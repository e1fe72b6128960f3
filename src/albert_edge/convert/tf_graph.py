"""The ALBERT forward pass as a TensorFlow graph written for the TFLite converter.

The graph is not traced from a training model: every op is chosen so that the converter emits
only TFLite builtins (no Flex, no Einsum, no one-hot embedding) and so that the interpreter does
as little work as possible per token:

- embeddings are GATHERs and the position table is a SLICE of the first ``seq`` rows;
- the additive attention mask ``[batch, 1, 1, seq]`` is built once, with RESHAPE (never
  ``x[:, None, None, :]``, which becomes a non-builtin StridedSlice), and reused by every layer;
- the 1/sqrt(head_dim) score scale is folded into the query kernel and bias, so no op scales
  the ``[batch, heads, seq, seq]`` scores;
- Q, K and V are three FULLY_CONNECTEDs by default: one fused ``[H, 3H]`` projection plus SPLIT
  measured ~5% slower in LiteRT at seq 128 (benchmarks/tflite_graph_choices.py), so it is an option;
- dense layers are 2-D matmuls on ``[batch*seq, in]`` so they lower to FULLY_CONNECTED;
- GELU is the builtin GELU op (``tf.nn.gelu``) in the approximation the checkpoint was trained with.

ALBERT shares its layer weights across depth: each weight becomes one ``tf.Variable`` that is
read once per call and reused by every layer, so the frozen flatbuffer holds one buffer per
weight, not one per layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from albert_edge.errors import ConversionError
from albert_edge.tasks import Task, get_task

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
GELU_FORMS = ("config", "exact", "tanh", "tanh_ops")
ATTENTION_LAYOUTS = ("transpose_k", "adj_y")
# Google's BERT/ALBERT code and Hugging Face both add this to masked scores; exp() of it is 0.
MASK_VALUE = -10000.0
HIDDEN_TENSOR_NAME = "albert_edge_last_hidden_state"
_SEQ = object()  # GraphOptions.batch_one: "the sequence axis", written -1 in constant reshape targets


@dataclass(frozen=True)
class GraphOptions:
    """Graph choices weighed in benchmarks/tflite_graph_choices.py; defaults are the faster ones.

    fused_qkv: one [H, 3H] projection + SPLIT for Q, K, V instead of three [H, H] ones (off: the
        SPLIT copy costs more than the two saved op dispatches; ratio 1.05 at batch 1, seq 128, 2 threads).
    gelu: "config" follows the checkpoint's hidden_act; "exact" / "tanh" force the builtin GELU
        op in that approximation; "tanh_ops" spells the tanh form out in MUL/ADD/TANH ops.
    attention_layout: "transpose_k" transposes K to [batch, heads, head_dim, seq] and runs a plain
        BATCH_MATMUL; "adj_y" keeps K as [batch, heads, seq, head_dim] and sets adj_y. The converter
        emits the same op census for both and they time alike (ratio 1.00 with rotated order).
    batch_one: a [1, seq] signature whose reshapes take constant shapes with a single -1, so they
        need no SHAPE/STRIDED_SLICE/PACK ops and XNNPACK can take them (fewer partitions); the file
        then accepts batch 1 only (benchmarks/real_length_tax.py weighs it).
    """

    fused_qkv: bool = False
    gelu: str = "config"
    attention_layout: str = "transpose_k"
    batch_one: bool = False

    def __post_init__(self) -> None:
        if self.gelu not in GELU_FORMS:
            raise ConversionError(f"GraphOptions.gelu={self.gelu!r}: expected one of {', '.join(GELU_FORMS)}")
        if self.attention_layout not in ATTENTION_LAYOUTS:
            raise ConversionError(
                f"GraphOptions.attention_layout={self.attention_layout!r}: expected one of {', '.join(ATTENTION_LAYOUTS)}"
            )


def activation_kind(config: Any, options: GraphOptions) -> str:
    """The activation the graph computes: "gelu_exact", "gelu_tanh", "gelu_tanh_ops", "relu", "silu" or "tanh".

    ``config.hidden_act`` is canonical (albert_edge.model.config.ACTIVATIONS); the GELU options
    override it only for the graph-choice benchmark and drift measurements.
    """
    act = str(config.hidden_act)
    if act.startswith("gelu") and options.gelu != "config":
        return {"exact": "gelu_exact", "tanh": "gelu_tanh", "tanh_ops": "gelu_tanh_ops"}[options.gelu]
    if act in ("gelu_exact", "gelu_tanh", "relu", "silu", "tanh"):
        return act
    raise ConversionError(f"config hidden_act={config.hidden_act!r}: no TFLite builtin form for this activation")


def layer_plan(config: Any) -> list[tuple[int, int]]:
    """(group, inner) weight keys in execution order: layer l runs every inner layer of its group."""
    return [
        (config.group_of_layer(layer), inner)
        for layer in range(config.num_hidden_layers)
        for inner in range(config.inner_group_num)
    ]


def graph_arrays(weights: Any, options: GraphOptions, task: Task | str | None = None) -> dict[str, np.ndarray]:
    """The float32 arrays the graph captures, one per shared weight, with the query scale folded in.

    Keys are canonical names, except that query/key/value become ``...attention.qkv.kernel``
    ``[H, 3H]`` / ``.bias`` ``[3H]`` when ``options.fused_qkv``.
    """
    task = get_task(task, weights)
    config = weights.config
    scale = 1.0 / math.sqrt(config.hidden_size // config.num_attention_heads)
    arrays: dict[str, np.ndarray] = {}
    for name, value in weights.tensors.items():
        if not task.uses_weight(name):
            continue
        arrays[name] = np.asarray(value, dtype=np.float32)
    for group, inner in sorted(set(layer_plan(config))):
        prefix = f"encoder.group{group}.inner{inner}.attention."
        for part in ("kernel", "bias"):
            arrays[prefix + "query." + part] = arrays[prefix + "query." + part] * np.float32(scale)
        if options.fused_qkv:
            for part, axis in (("kernel", 1), ("bias", 0)):
                arrays[prefix + "qkv." + part] = np.concatenate(
                    [arrays.pop(prefix + f"{n}.{part}") for n in ("query", "key", "value")], axis=axis
                )
    return arrays


def build_tf_module(weights: Any, task: Task | str | None = None, options: GraphOptions | None = None):
    """A ``tf.Module`` whose ``serve`` tf.function is the serving signature.

    ``serve(input_ids, attention_mask, token_type_ids)`` takes int32 ``[batch, seq]`` tensors
    (both dims dynamic) and returns the dict of ``task.outputs()`` (the task adds its head to the
    encoder; by default the task detected from the weights). ``module.signatures()`` gives the
    dict for ``tf.saved_model.save``.
    """
    import tensorflow as tf

    task = get_task(task, weights)
    options = options or GraphOptions()
    task.check_weights(weights)
    forward = _forward_fn(weights.config, options, task)
    arrays = graph_arrays(weights, options, task)

    class AlbertServing(tf.Module):
        def __init__(self) -> None:
            super().__init__(name="albert_edge")
            self.params = {name: tf.Variable(value, trainable=False, name=name.replace(".", "_"))
                           for name, value in arrays.items()}

        @tf.function(input_signature=[tf.TensorSpec([1 if options.batch_one else None, None], tf.int32, name=n)
                                      for n in INPUT_NAMES])
        def serve(self, input_ids, attention_mask, token_type_ids):
            params = {name: var.read_value() for name, var in self.params.items()}
            return forward(params, input_ids, attention_mask, token_type_ids)

        def signatures(self) -> dict:
            return {"serving_default": self.serve.get_concrete_function()}

    return AlbertServing()


def _forward_fn(config: Any, options: GraphOptions, task: Task) -> Callable:
    """The forward pass over a dict of weight tensors; closed over the static config."""
    import tensorflow as tf

    hidden = config.hidden_size
    heads = config.num_attention_heads
    head_dim = hidden // heads
    eps = float(config.layer_norm_eps)
    # brightmart pre-LN normalises each sub-block's input and has no final LayerNorm.
    act = activation_kind(config, options)
    plan = layer_plan(config)
    preln = str(getattr(config, "ln_type", "postln")) == "preln"

    def dims(*parts):
        """A reshape target: constant with seq as -1 when batch_one, else stacked from the runtime shape."""
        return [-1 if d is _SEQ else d for d in parts] if options.batch_one else tf.stack(parts)

    def layer_norm(x, p, prefix):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        centred = x - mean
        # A MUL, not tf.square: the converter fuses square(x - mean) into SQUARED_DIFFERENCE,
        # which has no int16 kernel in LiteRT, so a 16x8 model would not run.
        var = tf.reduce_mean(centred * centred, axis=-1, keepdims=True)
        # gamma multiplies the per-row scale, not the output: a constant MUL right before a
        # FULLY_CONNECTED is folded into a private copy of that layer's kernel, which would
        # store the first layer's shared QKV kernel twice.
        return centred * (tf.math.rsqrt(var + eps) * p[prefix + ".gamma"]) + p[prefix + ".beta"]

    def dense(x2d, p, prefix):
        """[rows, in] -> [rows, out]; a 2-D matmul with a constant kernel lowers to FULLY_CONNECTED."""
        return tf.matmul(x2d, p[prefix + ".kernel"]) + p[prefix + ".bias"]

    def activation(x):
        if act == "gelu_exact":
            return tf.nn.gelu(x, approximate=False)
        if act == "gelu_tanh":
            return tf.nn.gelu(x, approximate=True)
        if act == "gelu_tanh_ops":
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
            return 0.5 * x * (1.0 + tf.tanh(inner))
        if act == "silu":
            return x * tf.sigmoid(x)
        if act == "tanh":
            return tf.tanh(x)
        return tf.nn.relu(x)

    def split_heads(x2d, batch, seq):
        """[batch*seq, H] -> [batch, heads, seq, head_dim]."""
        return tf.transpose(tf.reshape(x2d, dims(batch, seq, heads, head_dim)), [0, 2, 1, 3])

    def attention(x2d, p, prefix, mask, batch, seq):
        if options.fused_qkv:
            qkv = dense(x2d, p, prefix + "qkv")
            q, k, v = tf.split(qkv, 3, axis=-1)
        else:
            q, k, v = (dense(x2d, p, prefix + n) for n in ("query", "key", "value"))
        q, k, v = (split_heads(t, batch, seq) for t in (q, k, v))
        if options.attention_layout == "transpose_k":
            scores = tf.matmul(q, tf.transpose(k, [0, 1, 3, 2]))
        else:
            scores = tf.matmul(q, k, adjoint_b=True)
        probs = tf.nn.softmax(scores + mask, axis=-1)
        context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
        return dense(tf.reshape(context, tf.stack([-1, hidden])), p, prefix + "output")

    def transformer_layer(x2d, p, prefix, mask, batch, seq):
        if preln:
            h = x2d + attention(layer_norm(x2d, p, prefix + "attention.layer_norm"), p, prefix + "attention.", mask, batch, seq)
            f = activation(dense(layer_norm(h, p, prefix + "ffn.layer_norm"), p, prefix + "ffn.intermediate"))
            return h + dense(f, p, prefix + "ffn.output")
        h = layer_norm(x2d + attention(x2d, p, prefix + "attention.", mask, batch, seq), p, prefix + "attention.layer_norm")
        f = activation(dense(h, p, prefix + "ffn.intermediate"))
        return layer_norm(h + dense(f, p, prefix + "ffn.output"), p, prefix + "ffn.layer_norm")

    def embeddings(p, input_ids, token_type_ids, batch, seq):
        """int32 [batch, seq] -> [batch*seq, H] following config.embedding_order."""
        word = tf.gather(p["embeddings.word"], tf.reshape(input_ids, [-1]))
        width = p["embeddings.position"].shape[-1]
        if seq is _SEQ:
            # Position ids from the input itself (a running count of its tokens), not from its
            # shape: a SLICE sized by SHAPE/STRIDED_SLICE/PACK leaves a dynamic tensor, and the
            # interpreter then re-prepares every op after it (the XNNPACK partition too) on
            # every call, even at an unchanged length.
            ones = tf.cast(tf.equal(input_ids, input_ids), tf.int32)
            position = tf.gather(p["embeddings.position"], tf.reshape(tf.cumsum(ones, axis=1) - 1, [-1]))
        else:
            position = tf.slice(p["embeddings.position"], [0, 0], tf.stack([seq, width]))
        token_type = tf.gather(p["embeddings.token_type"], tf.reshape(token_type_ids, [-1]))
        if config.embedding_order == "project_then_add":
            word = tf.matmul(word, p["embeddings.projection.kernel"])
            if "embeddings.projection.bias" in p:
                word = word + p["embeddings.projection.bias"]
        summed = tf.reshape(word + token_type, dims(batch, seq, width)) + position
        x = layer_norm(tf.reshape(summed, [-1, width]), p, "embeddings.layer_norm")
        if config.embedding_order == "add_then_project":
            x = dense(x, p, "embeddings.projection")
        return x

    def forward(p, input_ids, attention_mask, token_type_ids):
        shape = tf.shape(input_ids)
        batch, seq = (1, _SEQ) if options.batch_one else (shape[0], shape[1])
        mask = tf.reshape((1.0 - tf.cast(attention_mask, tf.float32)) * MASK_VALUE, dims(batch, 1, 1, seq))
        x = embeddings(p, input_ids, token_type_ids, batch, seq)
        for group, inner in plan:
            x = transformer_layer(x, p, f"encoder.group{group}.inner{inner}.", mask, batch, seq)
        # Named so that parity checks can find it among a classifier's intermediate tensors.
        sequence = tf.reshape(x, dims(batch, seq, hidden), name=HIDDEN_TENSOR_NAME)
        return task.tf_head(tf, p, sequence, attention_mask)

    return forward
