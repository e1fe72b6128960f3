"""The ALBERT/BERT encoder written once, against a small ops interface.

Every target that builds the encoder (the TF graph for the TFLite converter, the ONNX builder,
the trainable TensorFlow model) implements ``EncoderOps`` and calls ``encode``, then the task's
``head``, written once in the same ops (first token, tanh, masked mean/max, L2 norm, dense,
split); the order of the blocks, ALBERT's shared layers, pre-LN and post-LN, the embedding orders and the dropout sites
are decided here and nowhere else. What a target chooses for itself stays in its ops: tensor
layout (2-D rows for FULLY_CONNECTED, 3-D for ONNX), how Q/K/V are projected and scaled, how the
activation is spelled. The numpy reference (``reference.py``) does not use this module: it is the
independent judge of everything built from it.

Shapes: B batch, S sequence, E embedding width, H hidden, N heads, D = H / N. A target may hold
``[B, S, W]`` as ``[B*S, W]`` rows; ``encode`` never looks inside a tensor.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# Google's BERT/ALBERT code and Hugging Face both add this to masked scores; exp() of it is 0.
MASK_VALUE = -10000.0

#: Dropout site numbers (the trainable model folds them into its stateless seed): the embedding
#: output, then ``LAYER_SITE_BASE + LAYER_SITE_STRIDE * i`` + 0 (attention probabilities),
#: + 1 (attention output), + 2 (feed-forward output) for the i-th block in execution order.
EMBEDDING_SITE = 1
LAYER_SITE_BASE = 10
LAYER_SITE_STRIDE = 4
#: The dropout site of a head's pooled output (the [CLS] pooler's, before the classifier).
POOLER_SITE = 2
#: sentence-transformers' Pooling: a masked token's value before the max, and the mean's count floor.
MAX_POOL_MASKED = -1e9
MEAN_POOL_MIN_COUNT = 1e-9
#: torch.nn.functional.normalize's floor on the norm.
NORM_EPS = 1e-12

T = TypeVar("T")


class EncoderOps(Protocol[T]):
    """What a target provides; prefixes are canonical weight names without ``.kernel``/``.gamma``."""

    def lookup(self, table: str, ids: Any) -> T:
        """Rows of embedding ``table`` for int ids ``[B, S]`` -> ``[B, S, W]``."""

    def positions(self, table: str, ids: Any) -> T:
        """The first S rows of the position table, ``[S, W]`` (broadcast over the batch)."""

    def embedding_sum(self, word: T, position: T, token_type: T) -> T:
        """word + position + token type, ``[B, S, W]``."""

    def dense(self, x: T, prefix: str) -> T:
        """``x @ kernel (+ bias when the weights have one)``: ``[..., in]`` -> ``[..., out]``."""

    def layer_norm(self, x: T, prefix: str) -> T:
        """LayerNorm over the last axis with the config's epsilon."""

    def no_norm(self, x: T, prefix: str) -> T:
        """MobileBERT's NoNorm: ``x * gamma + beta``, elementwise over the last axis."""

    def trigram(self, x: T) -> T:
        """MobileBERT's 3-gram input: ``[B, S, E]`` -> ``[B, S, 3E]``, each position the concatenation
        of the next, its own and the previous row (zeros past either end of the sequence)."""

    def activation(self, x: T, name: str) -> T:
        """The FFN activation ``name`` (one of ``albert_edge.model.config.ACTIVATIONS``)."""

    def attention_mask(self, mask: Any) -> T:
        """int ``[B, S]`` (1 token, 0 padding) -> additive ``[B, 1, 1, S]``, 0 or MASK_VALUE."""

    def query_key_value(self, x: T, prefix: str) -> tuple[T, T, T]:
        """``[B, S, H]`` -> Q, K, V split into heads, in whatever layout ``attention_scores`` takes."""

    def query_key_value_from(self, q: T, k: T, v: T, prefix: str) -> tuple[T, T, T]:
        """Q, K and V each projected from its own input (MobileBERT's bottlenecks), split into heads."""

    def attention_scores(self, q: T, k: T) -> T:
        """Q K^T / sqrt(D), ``[B, N, S, S]``."""

    def add(self, a: T, b: T) -> T:
        """a + b (the additive mask on the scores)."""

    def softmax(self, x: T) -> T:
        """Softmax over the last axis."""

    def attend(self, probs: T, v: T) -> T:
        """probs @ V with the heads merged back: ``[B, S, config.attention_width()]``."""

    def residual(self, x: T, sublayer: T) -> T:
        """x + sublayer(x)."""

    def dropout(self, x: T, site: int) -> T:
        """Dropout at ``site`` while training; identity in every exported graph."""

    def output(self, x: T) -> T:
        """The last hidden state ``[B, S, H]`` as the target hands it to a task head."""

    # ------------------------------------------------------------------ head ops (``Task.head``)
    # ``name``: the graph output this op's result is (ONNX names the node's output by it; TF
    # names the op); None for an inner value.

    def first_token(self, x: T) -> T:
        """The first position's hidden state, ``[B, S, H]`` -> ``[B, H]`` (the [CLS] pooler's input)."""

    def tanh(self, x: T, name: str | None = None) -> T:
        """tanh, elementwise."""

    def token_dense(self, x: T, prefix: str) -> T:
        """``dense`` at every position, ``[B, S, H]`` -> ``[B, S, out]``."""

    def masked_mean(self, x: T, mask: Any) -> T:
        """Mean over the real positions (int ``mask`` ``[B, S]``), ``[B, S, H]`` -> ``[B, H]``
        (sentence-transformers' count floor ``MEAN_POOL_MIN_COUNT``)."""

    def masked_max(self, x: T, mask: Any) -> T:
        """Max over the real positions, ``[B, S, H]`` -> ``[B, H]`` (padding set to ``MAX_POOL_MASKED``)."""

    def l2_normalize(self, x: T) -> T:
        """Rows divided by their L2 norm, floored at ``NORM_EPS`` (torch's F.normalize)."""

    def split(self, x: T, names: tuple[str, ...]) -> list[T]:
        """``[B, S, k]`` -> k tensors ``[B, S]``, the i-th the graph output ``names[i]``."""

    def named(self, x: T, name: str) -> T:
        """``x`` as the graph output ``name``."""


def pooler_activation(ops: EncoderOps[T], x: T, name: str | None = None) -> T:
    """The [CLS] head's activation after its dense layer: tanh (BERT, ALBERT, RoBERTa pooler and
    classification head), ReLU (DistilBERT ``pre_classifier``) or GELU (ELECTRA's classification
    head), as ``config.pooler_act`` of the ops' model says; ``name`` as in ``tanh``."""
    act = getattr(getattr(ops, "config", None), "pooler_act", "tanh")
    if act == "tanh":
        return ops.tanh(x, name=name)
    if act == "identity":  # MobileBERT without classifier_activation: its pooler is the identity
        return x if name is None else ops.named(x, name)
    y = ops.activation(x, act)
    return y if name is None else ops.named(y, name)


def layer_plan(config: Any) -> list[tuple[int, int]]:
    """(group, inner) weight keys in execution order: layer l runs every inner layer of its group.

    ALBERT shares one group across all layers; BERT has one group per layer.
    """
    return [
        (config.group_of_layer(layer), inner)
        for layer in range(config.num_hidden_layers)
        for inner in range(config.inner_group_num)
    ]


def encode(ops: EncoderOps[T], config: Any, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> T:
    """The encoder: int ``[B, S]`` inputs -> last hidden state ``[B, S, H]`` (what ``ops.output`` makes)."""
    x = embeddings(ops, config, input_ids, token_type_ids)
    mask = ops.attention_mask(attention_mask)
    preln = config.ln_type == "preln"
    block = mobilebert_block if config.mobilebert else transformer_block
    plan = layer_plan(config)
    repeat = getattr(ops, "repeat_shared_layers", None)
    if repeat is not None and shared_layer_repeats(config) > 1:
        # One group run by every layer (ALBERT): the target may write it once and run it in a loop.
        # Dropout sites are the first layer's: a loop body is traced once, and every exported graph
        # drops nothing.
        def one_layer(h: T) -> T:
            for index, (group, inner) in enumerate(plan[: config.inner_group_num]):
                h = block(ops, config, h, f"encoder.group{group}.inner{inner}.", mask,
                          LAYER_SITE_BASE + LAYER_SITE_STRIDE * index, preln)
            return h

        return ops.output(repeat(one_layer, x, shared_layer_repeats(config)))
    for index, (group, inner) in enumerate(plan):
        x = block(ops, config, x, f"encoder.group{group}.inner{inner}.", mask,
                  LAYER_SITE_BASE + LAYER_SITE_STRIDE * index, preln)
    return ops.output(x)


def shared_layer_repeats(config: Any) -> int:
    """How many times one group's layers run when every layer runs the same group (ALBERT's
    ``num_hidden_groups == 1``: ``num_hidden_layers``); 0 when layers run different groups (BERT)."""
    groups = {group for group, _ in layer_plan(config)}
    return int(config.num_hidden_layers) if len(groups) == 1 else 0


def embeddings(ops: EncoderOps[T], config: Any, input_ids: Any, token_type_ids: Any) -> T:
    """ids ``[B, S]`` -> ``[B, S, H]``.

    add_then_project (Google ALBERT, HF): LN_E(word + pos + type) @ W[E, H] + b.
    project_then_add (brightmart albert_zh): LN_H(word @ W[E, H] (+ b) + pos + type).
    no_projection (BERT): LN_H(word + pos + type).
    MobileBERT: NoNorm_H(trigram(word) @ W[3E, H] + b + pos + type).
    """
    if config.mobilebert:
        word = ops.dense(ops.trigram(ops.lookup("embeddings.word", input_ids)), "embeddings.projection")
        summed = ops.embedding_sum(word, ops.positions("embeddings.position", input_ids),
                                   ops.lookup("embeddings.token_type", token_type_ids))
        return ops.dropout(ops.no_norm(summed, "embeddings.norm"), EMBEDDING_SITE)
    word = ops.lookup("embeddings.word", input_ids)
    position = ops.positions("embeddings.position", input_ids)
    token_type = ops.lookup("embeddings.token_type", token_type_ids)
    if config.embedding_order == "project_then_add":
        word = ops.dense(word, "embeddings.projection")
    x = ops.dropout(ops.layer_norm(ops.embedding_sum(word, position, token_type), "embeddings.layer_norm"),
                    EMBEDDING_SITE)
    if config.embedding_order == "add_then_project":
        x = ops.dense(x, "embeddings.projection")
    return x


def transformer_block(ops: EncoderOps[T], config: Any, x: T, prefix: str, mask: T, site: int, preln: bool) -> T:
    """One block, ``[B, S, H]`` -> ``[B, S, H]``.

    postln (BERT/ALBERT): x = LN(x + Attn(x)); x = LN(x + FFN(x)).
    preln (brightmart modeling_preln): x = x + Attn(LN(x)); x = x + FFN(LN(x)); no final LN.
    """
    if preln:
        h = ops.residual(x, attention(ops, ops.layer_norm(x, prefix + "attention.layer_norm"), prefix, mask, site))
        return ops.residual(h, feed_forward(ops, config, ops.layer_norm(h, prefix + "ffn.layer_norm"), prefix, site))
    h = ops.layer_norm(ops.residual(x, attention(ops, x, prefix, mask, site)), prefix + "attention.layer_norm")
    return ops.layer_norm(ops.residual(h, feed_forward(ops, config, h, prefix, site)), prefix + "ffn.layer_norm")


def attention(ops: EncoderOps[T], x: T, prefix: str, mask: T, site: int) -> T:
    """Multi-head self-attention ``[B, S, H]`` -> ``[B, S, H]`` (output projection, no residual)."""
    q, k, v = ops.query_key_value(x, prefix + "attention.")
    probs = ops.dropout(ops.softmax(ops.add(ops.attention_scores(q, k), mask)), site)
    return ops.dropout(ops.dense(ops.attend(probs, v), prefix + "attention.output"), site + 1)


def feed_forward(ops: EncoderOps[T], config: Any, x: T, prefix: str, site: int) -> T:
    """Position-wise FFN ``[B, S, H]`` -> ``[B, S, I]`` -> ``[B, S, H]`` (no residual)."""
    inner = ops.activation(ops.dense(x, prefix + "ffn.intermediate"), config.hidden_act)
    return ops.dropout(ops.dense(inner, prefix + "ffn.output"), site + 2)


def mobilebert_block(ops: EncoderOps[T], config: Any, x: T, prefix: str, mask: T, site: int, preln: bool) -> T:
    """One MobileBERT layer (transformers' MobileBertLayer with use_bottleneck), ``[B, S, H]`` -> ``[B, S, H]``.

    inner = NoNorm(x W_in + b)                                  [B, S, Bn], the attention's residual
    Q, K from NoNorm(x W_att + b) (key_query_shared_bottleneck), from inner (use_bottleneck_attention)
      or from x; V from inner (use_bottleneck_attention) or x
    h = NoNorm(Attn(Q, K, V) W_o + b + inner)
    h = NoNorm(FFN_k(h) + h) for each of the num_feedforward_networks FFNs
    out = NoNorm(h W_out + b + x)                               [B, S, H]
    ``preln`` does not apply (MobileBERT has one order).
    """
    layout = config.mobilebert
    inner = ops.no_norm(ops.dense(x, prefix + "bottleneck.input"), prefix + "bottleneck.input.norm")
    if layout.use_bottleneck_attention:
        qk_in, v_in = inner, inner
    elif layout.key_query_shared_bottleneck:
        qk_in, v_in = ops.no_norm(ops.dense(x, prefix + "bottleneck.attention"), prefix + "bottleneck.attention.norm"), x
    else:
        qk_in, v_in = x, x
    q, k, v = ops.query_key_value_from(qk_in, qk_in, v_in, prefix + "attention.")
    probs = ops.dropout(ops.softmax(ops.add(ops.attention_scores(q, k), mask)), site)
    attended = ops.dropout(ops.dense(ops.attend(probs, v), prefix + "attention.output"), site + 1)
    h = ops.no_norm(ops.residual(inner, attended), prefix + "attention.norm")
    for ffn in [f"ffn{k}." for k in range(layout.num_feedforward_networks - 1)] + ["ffn."]:
        hidden = ops.activation(ops.dense(h, prefix + ffn + "intermediate"), config.hidden_act)
        h = ops.no_norm(ops.residual(h, ops.dense(hidden, prefix + ffn + "output")), prefix + ffn + "norm")
    widened = ops.dropout(ops.dense(h, prefix + "output_bottleneck"), site + 2)
    return ops.no_norm(ops.residual(x, widened), prefix + "output_bottleneck.norm")
