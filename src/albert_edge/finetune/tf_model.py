"""ALBERT sequence classifier in plain TensorFlow ops over canonically named variables.

The variables are keyed by the same canonical names as ``AlbertWeights.tensors`` and the
encoder is ``albert_edge.model.skeleton``'s, the one the converters build (factorized embedding,
the shared layer applied L times, post-LN or pre-LN, every activation the config allows), with
``TrainingOps`` as this target's ops, and so is the head (``SequenceClassification.head``: the
[CLS] pooler, its dropout, the classifier), written once for every target. Training therefore produces
exactly the model the numpy judge, the converters and the checkpoint writers understand. No Keras
layers: their variable names and initialisers would be one more mapping to get wrong. Dropout is
the only thing that differs between training and inference.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from albert_edge.errors import ConfigError
from albert_edge.model.skeleton import MASK_VALUE, MAX_POOL_MASKED, MEAN_POOL_MIN_COUNT, NORM_EPS, encode
from albert_edge.tasks import SequenceClassification


def _gelu_tanh(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def _gelu_exact(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * x * (1.0 + tf.math.erf(x / math.sqrt(2.0)))


def layer_norm(x: tf.Tensor, gamma, beta, eps: float) -> tf.Tensor:
    """LayerNorm over the last axis, as the TF1 BERT/ALBERT code computes it."""
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + eps) * gamma + beta


#: One entry per canonical activation (``albert_edge.model.config.ACTIVATIONS``).
ACTIVATIONS = {
    "gelu_tanh": _gelu_tanh,
    "gelu_exact": _gelu_exact,
    "relu": tf.nn.relu,
    "silu": tf.nn.silu,
    "tanh": tf.tanh,
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
        if config.hidden_act not in ACTIVATIONS:
            raise ConfigError(
                f"finetune: hidden_act {config.hidden_act!r} is not supported, expected one of {sorted(ACTIVATIONS)}"
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

    def activation(self, x: tf.Tensor) -> tf.Tensor:
        """The config's FFN activation (the MLM head's transform uses it too)."""
        return ACTIVATIONS[self.config.hidden_act](x)

    def dense(self, x: tf.Tensor, prefix: str) -> tf.Tensor:
        """``x @ kernel + bias`` for ``x`` ``[..., in]`` and kernel ``[in, out]`` (TF orientation)."""
        y = tf.tensordot(x, self.variables_by_name[f"{prefix}.kernel"], axes=[[x.shape.rank - 1], [0]])
        bias = f"{prefix}.bias"
        return y + self.variables_by_name[bias] if bias in self.variables_by_name else y

    def dropout_at(self, x: tf.Tensor, seed: tf.Tensor | None, salt: int) -> tf.Tensor:
        """Inverted dropout from a stateless seed, so a run is a pure function of its seed."""
        if seed is None or self.dropout <= 0.0:
            return x
        keep = 1.0 - self.dropout
        noise = tf.random.stateless_uniform(tf.shape(x), seed=tf.random.experimental.stateless_fold_in(seed, salt))
        return tf.where(noise < keep, x / keep, tf.zeros_like(x))

    def encode(self, input_ids, attention_mask, token_type_ids, seed=None) -> tf.Tensor:
        """Last hidden state ``[B, S, H]``: the shared group(s) applied ``num_hidden_layers`` times."""
        return encode(TrainingOps(self, seed), self.config, input_ids, attention_mask, token_type_ids)

    def __call__(self, input_ids, attention_mask, token_type_ids, seed=None) -> tf.Tensor:
        """Logits ``[B, num_labels]``; ``seed`` (int32 ``[2]``) turns dropout on, None is inference."""
        hidden = self.encode(input_ids, attention_mask, token_type_ids, seed)
        return SequenceClassification().head(TrainingOps(self, seed), hidden, attention_mask)["logits"]


class TrainingOps:
    """``EncoderOps`` over a ``TfAlbertClassifier``'s variables: ``[B, S, W]`` tensors, differentiable
    ops, dropout from the call's stateless ``seed`` at each skeleton site (none without a seed)."""

    def __init__(self, model: TfAlbertClassifier, seed: tf.Tensor | None) -> None:
        self.model, self.seed = model, seed
        self.config = model.config  # the head reads its pooler activation here (skeleton.pooler_activation)
        self.heads, self.head_dim = model.config.num_attention_heads, model.config.head_dim()

    def lookup(self, table, ids):
        return tf.gather(self.model.variables_by_name[table], ids)

    def positions(self, table, ids):
        return self.model.variables_by_name[table][: tf.shape(ids)[1]][tf.newaxis]

    def embedding_sum(self, word, position, token_type):
        return word + position + token_type

    def dense(self, x, prefix):
        return self.model.dense(x, prefix)

    def layer_norm(self, x, prefix):
        v = self.model.variables_by_name
        return layer_norm(x, v[f"{prefix}.gamma"], v[f"{prefix}.beta"], self.model.config.layer_norm_eps)

    def activation(self, x, name):
        return ACTIVATIONS[name](x)

    def attention_mask(self, mask):
        return (1.0 - tf.cast(mask, tf.float32))[:, tf.newaxis, tf.newaxis, :] * MASK_VALUE

    def query_key_value(self, x, prefix):
        batch, seq_len = tf.shape(x)[0], tf.shape(x)[1]

        def split(t):  # [B, S, H] -> [B, heads, S, d]
            return tf.transpose(tf.reshape(t, [batch, seq_len, self.heads, self.head_dim]), [0, 2, 1, 3])

        return tuple(split(self.dense(x, prefix + name)) for name in ("query", "key", "value"))

    def attention_scores(self, q, k):
        return tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(self.head_dim))

    def add(self, a, b):
        return a + b

    def softmax(self, x):
        return tf.nn.softmax(x, axis=-1)

    def attend(self, probs, v):
        context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])  # [B, S, heads, d]
        return tf.reshape(context, [tf.shape(context)[0], tf.shape(context)[1], self.heads * self.head_dim])

    def residual(self, x, sublayer):
        return x + sublayer

    def dropout(self, x, site):
        return self.model.dropout_at(x, self.seed, site)

    def output(self, x):
        return x

    # ------------------------------------------------------------------ head ops (on [B, S, H])
    def first_token(self, x):
        return x[:, 0]

    def tanh(self, x, name=None):
        return tf.tanh(x)

    def token_dense(self, x, prefix):
        return self.dense(x, prefix)

    def masked_mean(self, x, mask):
        m = tf.cast(mask, tf.float32)[:, :, tf.newaxis]
        return tf.reduce_sum(x * m, axis=1) / tf.maximum(tf.reduce_sum(m, axis=1), MEAN_POOL_MIN_COUNT)

    def masked_max(self, x, mask):
        m = tf.cast(mask, tf.float32)[:, :, tf.newaxis]
        return tf.reduce_max(x + (m - 1.0) * -MAX_POOL_MASKED, axis=1)

    def l2_normalize(self, x):
        return tf.math.l2_normalize(x, axis=-1, epsilon=NORM_EPS * NORM_EPS)

    def split(self, x, names):
        return tf.unstack(x, num=len(names), axis=2)

    def named(self, x, name):
        return x
