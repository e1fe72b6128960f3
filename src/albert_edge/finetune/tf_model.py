"""ALBERT sequence classifier in plain TensorFlow ops over canonically named variables.

The variables are keyed by the same canonical names as ``AlbertWeights.tensors`` and the
forward pass follows ``albert_edge.model.reference`` step by step (factorized embedding,
the shared layer applied L times, pooler, head), so that training produces exactly the
model the numpy judge, the converters and the checkpoint writers understand. No Keras
layers: their variable names and initialisers would be one more mapping to get wrong.
Dropout is the only thing that differs between training and inference.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from albert_edge.errors import ConfigError

# Additive mask for padded keys, as in BERT/ALBERT TF code; exp(-10000) is 0 in float32.
_MASK_VALUE = -10000.0


def _gelu_tanh(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def _gelu_exact(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def layer_norm(x: tf.Tensor, gamma, beta, eps: float) -> tf.Tensor:
    """LayerNorm over the last axis, as the TF1 BERT/ALBERT code computes it."""
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + eps) * gamma + beta


_ACTIVATIONS = {
    "gelu_tanh": _gelu_tanh,
    "gelu_new": _gelu_tanh,
    "gelu_exact": _gelu_exact,
    "gelu": _gelu_exact,
    "relu": tf.nn.relu,
    "silu": tf.nn.silu,
    "swish": tf.nn.silu,
}


class TfAlbertClassifier(tf.Module):
    """ALBERT/BERT encoder + pooler + classifier; one ``tf.Variable`` per canonical tensor.

    Built from an ``AlbertWeights`` (random or loaded) and turned back into one with
    ``to_weights``. ``call`` takes int32 ``[batch, seq]`` inputs and returns float32
    logits ``[batch, num_labels]``.
    """

    def __init__(self, weights, dropout: float = 0.0) -> None:
        super().__init__(name="albert")
        config = weights.config
        if config.ln_type != "postln":
            raise ConfigError(f"finetune: ln_type {config.ln_type!r} is not supported, expected 'postln'")
        if config.hidden_act not in _ACTIVATIONS:
            raise ConfigError(
                f"finetune: hidden_act {config.hidden_act!r} is not supported, expected one of {sorted(_ACTIVATIONS)}"
            )
        if "classifier.kernel" not in weights.tensors:
            raise ConfigError(f"{weights.source}: no classifier.kernel, cannot fine-tune a classifier without a head")
        self.config = config
        self.dropout = float(dropout)
        self.scheme = weights.scheme
        self.source = weights.source
        self.num_labels = int(weights.tensors["classifier.kernel"].shape[1])
        self.names = sorted(weights.tensors)
        self.variables_by_name = {
            name: tf.Variable(np.asarray(array, dtype=np.float32), name=name.replace(".", "/"), trainable=True)
            for name, array in sorted(weights.tensors.items())
        }
        self._activation = _ACTIVATIONS[config.hidden_act]

    @property
    def trainable_list(self) -> list[tf.Variable]:
        """Variables in canonical-name order (the optimizer's slot order)."""
        return [self.variables_by_name[n] for n in self.names]

    def to_weights(self):
        """Snapshot the current values as an ``AlbertWeights`` (numpy float32, canonical names)."""
        from albert_edge.model import AlbertWeights

        return AlbertWeights(
            config=self.config,
            tensors={n: v.numpy().astype(np.float32) for n, v in self.variables_by_name.items()},
            scheme=self.scheme,
            num_labels=self.num_labels,
            ignored=(),
            source=self.source,
        )

    # --- building blocks, in the order of the equations -------------------------------------

    def _v(self, name: str) -> tf.Variable:
        return self.variables_by_name[name]

    def _dropout(self, x: tf.Tensor, seed: tf.Tensor | None, salt: int) -> tf.Tensor:
        """Inverted dropout from a stateless seed, so a run is a pure function of its seed."""
        if seed is None or self.dropout <= 0.0:
            return x
        keep = 1.0 - self.dropout
        noise = tf.random.stateless_uniform(tf.shape(x), seed=tf.random.experimental.stateless_fold_in(seed, salt))
        return tf.where(noise < keep, x / keep, tf.zeros_like(x))

    def _layer_norm(self, x: tf.Tensor, prefix: str) -> tf.Tensor:
        """LayerNorm over the last axis ``[..., D]`` with the config's epsilon."""
        return layer_norm(x, self._v(f"{prefix}.gamma"), self._v(f"{prefix}.beta"), self.config.layer_norm_eps)

    def _dense(self, x: tf.Tensor, prefix: str) -> tf.Tensor:
        """``x @ kernel + bias`` for ``x`` ``[..., in]`` and kernel ``[in, out]`` (TF orientation)."""
        y = tf.tensordot(x, self._v(f"{prefix}.kernel"), axes=[[x.shape.rank - 1], [0]])
        bias = f"{prefix}.bias"
        return y + self._v(bias) if bias in self.variables_by_name else y

    def embed(self, input_ids, token_type_ids, seed) -> tf.Tensor:
        """Token ids ``[B, S]`` -> embeddings ``[B, S, H]`` in the config's embedding order."""
        order = self.config.embedding_order
        seq_len = tf.shape(input_ids)[1]
        word = tf.gather(self._v("embeddings.word"), input_ids)  # [B, S, E]
        position = self._v("embeddings.position")[:seq_len][tf.newaxis]
        token_type = tf.gather(self._v("embeddings.token_type"), token_type_ids)
        if order == "project_then_add":
            x = self._dense(word, "embeddings.projection") + position + token_type  # [B, S, H]
            x = self._layer_norm(x, "embeddings.layer_norm")
            return self._dropout(x, seed, 1)
        if order == "add_then_project":
            x = self._layer_norm(word + position + token_type, "embeddings.layer_norm")  # [B, S, E]
            x = self._dropout(x, seed, 1)
            return self._dense(x, "embeddings.projection")
        if order == "no_projection":
            x = self._layer_norm(word + position + token_type, "embeddings.layer_norm")
            return self._dropout(x, seed, 1)
        raise ConfigError(f"finetune: embedding_order {order!r} is not supported")

    def attention(self, x, mask_bias, prefix: str, seed, salt: int) -> tf.Tensor:
        """Multi-head self-attention ``[B, S, H]`` -> ``[B, S, H]`` (before the residual)."""
        heads, head_dim = self.config.num_attention_heads, self.config.head_dim()
        batch, seq_len = tf.shape(x)[0], tf.shape(x)[1]

        def split(t):  # [B, S, H] -> [B, heads, S, d]
            return tf.transpose(tf.reshape(t, [batch, seq_len, heads, head_dim]), [0, 2, 1, 3])

        q = split(self._dense(x, f"{prefix}.query"))
        k = split(self._dense(x, f"{prefix}.key"))
        v = split(self._dense(x, f"{prefix}.value"))
        scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(head_dim)) + mask_bias
        probs = self._dropout(tf.nn.softmax(scores, axis=-1), seed, salt)
        context = tf.reshape(tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3]), [batch, seq_len, heads * head_dim])
        return self._dense(context, f"{prefix}.output")

    def block(self, x, mask_bias, prefix: str, seed, salt: int) -> tf.Tensor:
        """One post-LN transformer block (attention, then feed-forward), ``[B, S, H]``."""
        attn = self._dropout(self.attention(x, mask_bias, f"{prefix}.attention", seed, salt), seed, salt + 1)
        x = self._layer_norm(x + attn, f"{prefix}.attention.layer_norm")
        inner = self._activation(self._dense(x, f"{prefix}.ffn.intermediate"))
        ffn = self._dropout(self._dense(inner, f"{prefix}.ffn.output"), seed, salt + 2)
        return self._layer_norm(x + ffn, f"{prefix}.ffn.layer_norm")

    def encode(self, input_ids, attention_mask, token_type_ids, seed=None) -> tf.Tensor:
        """Last hidden state ``[B, S, H]``: the shared group(s) applied ``num_hidden_layers`` times."""
        x = self.embed(input_ids, token_type_ids, seed)
        mask_bias = (1.0 - tf.cast(attention_mask, tf.float32))[:, tf.newaxis, tf.newaxis, :] * _MASK_VALUE
        for layer in range(self.config.num_hidden_layers):
            group = self.config.group_of_layer(layer)
            for inner in range(self.config.inner_group_num):
                salt = 10 + 4 * (layer * self.config.inner_group_num + inner)
                x = self.block(x, mask_bias, f"encoder.group{group}.inner{inner}", seed, salt)
        return x

    def __call__(self, input_ids, attention_mask, token_type_ids, seed=None) -> tf.Tensor:
        """Logits ``[B, num_labels]``; ``seed`` (int32 ``[2]``) turns dropout on, None is inference."""
        hidden = self.encode(input_ids, attention_mask, token_type_ids, seed)
        pooled = tf.tanh(self._dense(hidden[:, 0], "pooler"))  # [B, H]
        pooled = self._dropout(pooled, seed, 2)
        return self._dense(pooled, "classifier")
