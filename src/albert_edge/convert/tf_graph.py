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
  measured ~5% slower in LiteRT at seq 128 (benchmarks/records/tflite_graph_choices.py), so it is an option;
- dense layers are 2-D matmuls on ``[batch*seq, in]`` so they lower to FULLY_CONNECTED;
- GELU is the builtin GELU op (``tf.nn.gelu``) in the approximation the checkpoint was trained with;
- attention can run in groups of heads, V projected first, so one group's ``[seq, seq]`` scores are
  in memory at a time (``GraphOptions.attention_head_groups``: less memory, more ops to dispatch).

The block order lives in ``albert_edge.model.skeleton``; ``TfGraphOps`` is this target's ops.
ALBERT shares its layer weights across depth: each weight becomes one ``tf.Variable`` that is
read once per call and reused by every layer, so the frozen flatbuffer holds one buffer per
weight, not one per layer. Unrolled, XNNPACK still packs that buffer once per layer that uses it;
``GraphOptions.shared_layer_loop`` writes the layer once, in a WHILE body, so it is packed once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from albert_edge.errors import ConversionError
from albert_edge.inputs.option_ranges import HEAD_GROUPS
from albert_edge.model.skeleton import (
    INPUT_NAMES,
    MASK_VALUE,
    MAX_POOL_MASKED,
    MEAN_POOL_MIN_COUNT,
    NORM_EPS,
    encode,
    layer_plan,
)
from albert_edge.tasks import Task, get_task
from albert_edge.tasks.base import uses_weight

GELU_FORMS = ("config", "exact", "tanh", "tanh_ops")
ATTENTION_LAYOUTS = ("transpose_k", "adj_y")
HIDDEN_TENSOR_NAME = "albert_edge_last_hidden_state"
_SEQ = object()  # GraphOptions.batch_one: "the sequence axis", written -1 in constant reshape targets


@dataclass(frozen=True)
class GraphOptions:
    """Graph choices weighed in benchmarks/records/tflite_graph_choices.py; defaults are the faster ones.

    fused_qkv: one [H, 3H] projection + SPLIT for Q, K, V instead of three [H, H] ones (off: the
        SPLIT copy costs more than the two saved op dispatches; ratio 1.05 at batch 1, seq 128, 2 threads).
    gelu: "config" follows the checkpoint's hidden_act; "exact" / "tanh" force the builtin GELU
        op in that approximation; "tanh_ops" spells the tanh form out in MUL/ADD/TANH ops.
    attention_layout: "transpose_k" transposes K to [batch, heads, head_dim, seq] and runs a plain
        BATCH_MATMUL; "adj_y" keeps K as [batch, heads, seq, head_dim] and sets adj_y. The converter
        emits the same op census for both and they time alike (ratio 1.00 with rotated order).
    batch_one: a [1, seq] signature whose reshapes take constant shapes with a single -1, so they
        need no SHAPE/STRIDED_SLICE/PACK ops and XNNPACK can take them (one partition instead of 7, everything
        packed at load); the sequence length stays dynamic. On by default (record 0291): the same logits,
        never slower and up to a third faster at real lengths (record 0003), and 3.4 MiB less model memory
        for the sample's int8 file (record 0266). The runtime and convert's parity run a batch row by row;
        ``batch_one=False`` (``convert --dynamic-batch``) writes the [batch, seq] graph for callers that feed
        whole batches to the interpreter themselves.
    embedding_lookup: the .tflite reads its embedding tables with EMBEDDING_LOOKUP instead of the
        converter's GATHER (``convert/tflite_lookup.py``; exact), so litert-quantizer, which quantizes
        EMBEDDING_LOOKUP tables only, shrinks the word table too (sample, repacked: 5.1 MB instead of 13.0 MB,
        agreement with fp32 99.83 % on dev either way). fp32 logits are identical (max |d| 0 on the
        sample's 1,749 dev texts), MediaPipe reads it, LiteRT times the two alike (ratio 0.99, within
        the noise). Off by default for now: flipping it changes every file convert, quantize, android-assets
        and arm-check write, and their suites have not been run with it.
    shared_layer_loop: ALBERT's one shared layer written once, as the body of a TFLite WHILE that runs it
        ``num_hidden_layers`` times, instead of unrolled once per layer. LiteRT applies XNNPACK to the body
        subgraph too, so each shared matmul weight is packed once, not once per layer (sample, dynamic
        int8, bench worker at 128 tokens: model memory after the first call 17.8 -> 12.8 MiB, with
        ``batch_one`` 14.4 -> 10.8; the same fp32 logits; record 0265). Families whose layers do not share
        one group (BERT) keep the unrolled graph. Off by default: MediaPipe's TextClassifier refuses a file
        of more than one subgraph, and the quantize edits that rewrite FULLY_CONNECTED weights (int4,
        smoothing, float fallback) read the main subgraph only.
    attention_head_groups: the attention computed for this many groups of heads in turn (SPLIT of Q, K
        and V, then one group's scores, mask, softmax and probs @ V before the next group's, then a
        CONCATENATION of the contexts), so one group's ``[seq, seq]`` scores are live at a time and
        XNNPACK's memory planner gives the next group the same memory. A model whose heads do not
        split evenly uses the largest count below that does (``head_groups``). 3 groups (record 0300):
        the sample's shipped dynamic int8 file holds 0.56 MiB less after its first call at 128 tokens
        (11.06 -> 10.50 MiB of its own), 2.0 MiB less at 256, with bit-identical logits, but each group
        is ops the interpreter dispatches: 1.08x the time at 128 tokens and 1.12x at real lengths on 2
        threads. Off (1, all heads at once) by default for that; XNNPACK takes SPLIT and CONCATENATION
        of at most 4 parts.
    """

    fused_qkv: bool = False
    gelu: str = "config"
    attention_layout: str = "transpose_k"
    batch_one: bool = True
    embedding_lookup: bool = False
    shared_layer_loop: bool = False
    attention_head_groups: int = 1

    def __post_init__(self) -> None:
        if not HEAD_GROUPS.admits(self.attention_head_groups):
            raise ConversionError(f"GraphOptions.attention_head_groups={self.attention_head_groups!r}: "
                                  f"expected {HEAD_GROUPS.expected()}")
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
    return _activation_kind(str(config.hidden_act), options)


def _activation_kind(act: str, options: GraphOptions) -> str:
    if act.startswith("gelu") and options.gelu != "config":
        return {"exact": "gelu_exact", "tanh": "gelu_tanh", "tanh_ops": "gelu_tanh_ops"}[options.gelu]
    if act in ("gelu_exact", "gelu_tanh", "relu", "silu", "tanh"):
        return act
    raise ConversionError(f"config hidden_act={act!r}: no TFLite builtin form for this activation")


def head_groups(heads: int, options: GraphOptions) -> int:
    """The number of head groups the graph writes: ``options.attention_head_groups``, or the largest
    count below it that splits ``heads`` evenly (4 heads asked for 3 groups run in 2 groups of 2;
    1 head: 1)."""
    return max(g for g in range(1, options.attention_head_groups + 1) if heads % g == 0)


def graph_arrays(weights: Any, options: GraphOptions, task: Task | str | None = None) -> dict[str, np.ndarray]:
    """The float32 arrays the graph captures, one per shared weight, with the query scale folded in.

    Keys are canonical names, except that query/key/value become ``...attention.qkv.kernel``
    ``[H, 3H]`` / ``.bias`` ``[3H]`` when ``options.fused_qkv``.
    """
    task = get_task(task, weights)
    config = weights.config
    scale = 1.0 / math.sqrt(config.head_dim())
    arrays: dict[str, np.ndarray] = {}
    for name, value in weights.tensors.items():
        if not uses_weight(task, name):
            continue
        arrays[name] = np.asarray(value, dtype=np.float32)
    for group, inner in sorted(set(layer_plan(config))):
        prefix = f"encoder.group{group}.inner{inner}.attention."
        for part in ("kernel", "bias"):
            arrays[prefix + "query." + part] = arrays[prefix + "query." + part] * np.float32(scale)
        if options.fused_qkv and not config.mobilebert:  # MobileBERT's Q, K, V read different inputs
            for part, axis in (("kernel", 1), ("bias", 0)):
                arrays[prefix + "qkv." + part] = np.concatenate(
                    [arrays.pop(prefix + f"{n}.{part}") for n in ("query", "key", "value")], axis=axis
                )
    return arrays


def build_tf_module(weights: Any, task: Task | str | None = None, options: GraphOptions | None = None):
    """A ``tf.Module`` whose ``serve`` tf.function is the serving signature.

    ``serve(input_ids, attention_mask, token_type_ids)`` takes int32 ``[1, seq]`` tensors (``[batch, seq]``
    with ``options.batch_one`` off; seq dynamic) and returns the dict of ``task.outputs()`` (the task adds its head to the
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

    def forward(p, input_ids, attention_mask, token_type_ids):
        ops = TfGraphOps(tf, p, config, options, input_ids)
        sequence = encode(ops, config, input_ids, attention_mask, token_type_ids)
        return task.head(ops, sequence, attention_mask)

    return forward


@dataclass(frozen=True)
class _HeadGroups:
    """Attention scores not built yet: per group of heads its (Q, K), ``[batch, heads/groups, seq, D]``,
    and the elementwise steps (mask, softmax) that ``attend`` applies to the group's scores in order."""

    queries_keys: tuple[tuple[Any, Any], ...]
    steps: tuple[Callable, ...] = ()

    def then(self, step: Callable) -> _HeadGroups:
        return _HeadGroups(self.queries_keys, self.steps + (step,))

    def apply(self, scores: Any) -> Any:
        for step in self.steps:
            scores = step(scores)
        return scores


class TfGraphOps:
    """``EncoderOps`` as TF ops chosen for the TFLite converter (see the module docstring).

    Tensors are ``[batch*seq, W]`` rows between blocks so every dense layer is a 2-D matmul;
    ``output`` reshapes to ``[batch, seq, H]``. ``p`` holds ``graph_arrays``' tensors (the query
    scale already folded in, Q/K/V fused when ``options.fused_qkv``).
    """

    def __init__(self, tf: Any, p: dict[str, Any], config: Any, options: GraphOptions, input_ids: Any) -> None:
        self.tf, self.p, self.config, self.options = tf, p, config, options
        self.hidden = config.hidden_size
        self.attention_width = config.attention_width()
        self.heads = config.num_attention_heads
        self.head_dim = config.head_dim()
        shape = tf.shape(input_ids)
        self.batch, self.seq = (1, _SEQ) if options.batch_one else (shape[0], shape[1])
        if options.shared_layer_loop:
            self.repeat_shared_layers = self._while_loop

    #: ``encode`` unrolls the layers unless a target sets this (see ``_while_loop``).
    repeat_shared_layers: Callable | None = None

    def _while_loop(self, layer: Callable, x, count: int):
        """``layer`` applied ``count`` times as one tf.while_loop: the converter writes a WHILE whose body
        subgraph holds the shared layer once, with its weights sunk into the body as constants."""
        tf = self.tf
        _, out = tf.while_loop(lambda i, h: i < count, lambda i, h: (i + 1, layer(h)), [tf.constant(0), x],
                               shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, x.shape[-1]])])
        return out

    def _dims(self, *parts):
        """A reshape target: constant with seq as -1 when batch_one, else stacked from the runtime shape."""
        return [-1 if d is _SEQ else d for d in parts] if self.options.batch_one else self.tf.stack(parts)

    def lookup(self, table, ids):
        return self.tf.gather(self.p[table], self.tf.reshape(ids, [-1]))

    def positions(self, table, ids):
        """The first ``seq`` rows: a SLICE, or with ``batch_one`` a GATHER of position ids.

        With ``batch_one`` the ids are a running count of the input's own tokens, not taken from
        its shape: a SLICE sized by SHAPE/STRIDED_SLICE/PACK leaves a dynamic tensor, and the
        interpreter then re-prepares every op after it (the XNNPACK partition too) on every call,
        even at an unchanged length.
        """
        tf = self.tf
        if self.seq is _SEQ:
            ones = tf.cast(tf.equal(ids, ids), tf.int32)
            return tf.gather(self.p[table], tf.reshape(tf.cumsum(ones, axis=1) - 1, [-1]))
        width = self.p[table].shape[-1]
        return tf.slice(self.p[table], [0, 0], tf.stack([self.seq, width]))

    def embedding_sum(self, word, position, token_type):
        width = self.p["embeddings.position"].shape[-1]
        summed = self.tf.reshape(word + token_type, self._dims(self.batch, self.seq, width)) + position
        return self.tf.reshape(summed, [-1, width])

    def dense(self, x2d, prefix):
        """[rows, in] -> [rows, out]; a 2-D matmul with a constant kernel lowers to FULLY_CONNECTED."""
        y = self.tf.matmul(x2d, self.p[prefix + ".kernel"])
        return y + self.p[prefix + ".bias"] if prefix + ".bias" in self.p else y

    def layer_norm(self, x, prefix):
        tf = self.tf
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        centred = x - mean
        # A MUL, not tf.square: the converter fuses square(x - mean) into SQUARED_DIFFERENCE,
        # which has no int16 kernel in LiteRT, so a 16x8 model would not run.
        var = tf.reduce_mean(centred * centred, axis=-1, keepdims=True)
        # gamma multiplies the per-row scale, not the output: a constant MUL right before a
        # FULLY_CONNECTED is folded into a private copy of that layer's kernel, which would
        # store the first layer's shared QKV kernel twice.
        scale = tf.math.rsqrt(var + float(self.config.layer_norm_eps)) * self.p[prefix + ".gamma"]
        return centred * scale + self.p[prefix + ".beta"]

    def no_norm(self, x, prefix):
        return x * self.p[prefix + ".gamma"] + self.p[prefix + ".beta"]

    def trigram(self, x2d):
        """PAD the sequence axis by one row each side, then two STRIDED_SLICEs (no SHAPE op) and a
        CONCATENATION: [batch*seq, E] rows -> [batch*seq, 3E]."""
        tf = self.tf
        width = x2d.shape[-1]
        x = tf.reshape(x2d, self._dims(self.batch, self.seq, width))
        padded = tf.pad(x, [[0, 0], [1, 1], [0, 0]])
        return tf.reshape(tf.concat([padded[:, 2:, :], x, padded[:, :-2, :]], axis=2), [-1, 3 * width])

    def activation(self, x, name):
        tf = self.tf
        act = _activation_kind(name, self.options)
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

    def attention_mask(self, mask):
        """Built with RESHAPE (never ``x[:, None, None, :]``, a non-builtin StridedSlice)."""
        keep = self.tf.cast(mask, self.tf.float32)
        return self.tf.reshape((1.0 - keep) * MASK_VALUE, self._dims(self.batch, 1, 1, self.seq))

    def _split_heads(self, x2d):
        """[batch*seq, H] -> [batch, heads, seq, head_dim]."""
        shape = self._dims(self.batch, self.seq, self.heads, self.head_dim)
        return self.tf.transpose(self.tf.reshape(x2d, shape), [0, 2, 1, 3])

    def query_key_value(self, x2d, prefix):
        if self.options.fused_qkv:
            q, k, v = self.tf.split(self.dense(x2d, prefix + "qkv"), 3, axis=-1)
        elif head_groups(self.heads, self.options) > 1:
            # V before Q and K: written after them, every group's scores and softmax ran before the
            # first probs @ V, so all groups' [seq, seq] tensors were live at once (sample, 3 groups,
            # 512 tokens: 15.7 MiB at the first call, 8.2 with V first; record 0300).
            v, q, k = (self._split_heads(self.dense(x2d, prefix + n)) for n in ("value", "query", "key"))
            return q, k, v
        else:
            q, k, v = (self.dense(x2d, prefix + n) for n in ("query", "key", "value"))
        return tuple(self._split_heads(t) for t in (q, k, v))

    def query_key_value_from(self, q2d, k2d, v2d, prefix):
        """V first with head groups, as in ``query_key_value``."""
        order = (("value", v2d), ("query", q2d), ("key", k2d))
        if head_groups(self.heads, self.options) == 1:
            order = order[1:] + order[:1]
        heads = {n: self._split_heads(self.dense(x, prefix + n)) for n, x in order}
        return heads["query"], heads["key"], heads["value"]

    def attention_scores(self, q, k):
        """No scaling op: 1/sqrt(head_dim) is folded into the query kernel and bias.

        With ``options.attention_head_groups`` above 1 the scores are not built here but deferred
        (``_HeadGroups``): ``attend`` builds each group's scores, mask, softmax and context in turn, so
        the converter writes one group's ops before the next group's and only one group's
        ``[seq, seq]`` tensors are ever live.
        """
        groups = head_groups(self.heads, self.options)
        if groups > 1:
            return _HeadGroups(tuple(zip(self.tf.split(q, groups, axis=1), self.tf.split(k, groups, axis=1))))
        return self._scores(q, k)

    def _scores(self, q, k):
        if self.options.attention_layout == "transpose_k":
            return self.tf.matmul(q, self.tf.transpose(k, [0, 1, 3, 2]))
        return self.tf.matmul(q, k, adjoint_b=True)

    def add(self, a, b):
        if isinstance(a, _HeadGroups):
            return a.then(lambda scores: scores + b)
        return a + b

    def softmax(self, x):
        if isinstance(x, _HeadGroups):
            return x.then(self.softmax)
        return self.tf.nn.softmax(x, axis=-1)

    def attend(self, probs, v):
        """probs @ V, heads merged back to ``[batch*seq, W]`` rows; per group of heads when deferred."""
        tf = self.tf
        if isinstance(probs, _HeadGroups):
            contexts = [tf.matmul(probs.apply(self._scores(q, k)), v_group)
                        for (q, k), v_group in zip(probs.queries_keys, tf.split(v, len(probs.queries_keys), axis=1))]
            context = tf.concat(contexts, axis=1)
        else:
            context = tf.matmul(probs, v)
        return tf.reshape(tf.transpose(context, [0, 2, 1, 3]), tf.stack([-1, self.attention_width]))

    def residual(self, x, sublayer):
        return x + sublayer

    def dropout(self, x, site):
        return x

    def output(self, x):
        # Named so that parity checks can find it among a classifier's intermediate tensors.
        return self.tf.reshape(x, self._dims(self.batch, self.seq, self.hidden), name=HIDDEN_TENSOR_NAME)

    # ------------------------------------------------------------------ head ops (on [batch, seq, H])
    # Shapes come from the head's input (tf.shape), not the encoder's rows; every op lowers to a
    # TFLite builtin (RESHAPE rather than expand_dims or x[..., None], a non-builtin StridedSlice).

    def first_token(self, x):
        tf = self.tf
        batch, hidden = tf.shape(x)[0], x.shape[-1]
        return tf.reshape(tf.slice(x, [0, 0, 0], tf.stack([batch, 1, hidden])), tf.stack([batch, hidden]))

    def tanh(self, x, name=None):
        return self.tf.tanh(x, name=name)

    def token_dense(self, x, prefix):
        """One 2-D MatMul (FULLY_CONNECTED) over all positions, then back to [batch, seq, out]."""
        tf = self.tf
        shape = tf.shape(x)
        flat = tf.reshape(x, tf.stack([-1, x.shape[-1]]))
        return tf.reshape(self.dense(flat, prefix), tf.stack([shape[0], shape[1], -1]))

    def _float_mask(self, x, mask):
        tf = self.tf
        shape = tf.shape(x)
        return tf.reshape(tf.cast(mask, tf.float32), tf.stack([shape[0], shape[1], 1]))

    def masked_mean(self, x, mask):
        tf = self.tf
        m = self._float_mask(x, mask)
        return tf.reduce_sum(x * m, axis=1) / tf.maximum(tf.reduce_sum(m, axis=1), MEAN_POOL_MIN_COUNT)

    def masked_max(self, x, mask):
        return self.tf.reduce_max(x + (self._float_mask(x, mask) - 1.0) * -MAX_POOL_MASKED, axis=1)

    def l2_normalize(self, x):
        tf = self.tf
        return x * tf.math.rsqrt(tf.maximum(tf.reduce_sum(x * x, axis=-1, keepdims=True), NORM_EPS * NORM_EPS))

    def split(self, x, names):
        """UNPACK along the last axis."""
        parts = self.tf.unstack(x, num=len(names), axis=2)
        return [self.tf.identity(part, name=name) for part, name in zip(parts, names)]

    def named(self, x, name):
        return self.tf.identity(x, name=name)
