"""The numpy ALBERT: the judge every export is compared against.

It reads like the paper (Lan et al. 2019, "ALBERT"): a factorized embedding, one set of
transformer-block weights applied L times (per hidden group), a tanh pooler on [CLS] and a
linear classification head. Everything runs in float64 so the reference's own rounding is far
below any float32 export's; it follows the TF1 training code where dialects differ (additive
-10000 attention mask, LayerNorm variance without Bessel correction).

Shapes: B batch, S sequence, E embedding width, H hidden, N heads, D = H / N, I intermediate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from albert_edge.errors import DataError
from albert_edge.model.config import AlbertConfig
from albert_edge.model.weights import AlbertWeights

# Added to attention scores of padded keys, as in the TF1 code (exp(-10000) is exactly 0.0 in float64).
MASK_ADDER = -10000.0


@dataclass
class ReferenceOutput:
    """Reference forward results, float64."""

    last_hidden_state: np.ndarray  # [B, S, H]
    pooled_output: np.ndarray | None  # [B, H], None without a pooler (HF token classifiers)
    logits: np.ndarray | None  # [B, num_labels]: classifier on the pooler; None without either
    # [B, S, num_labels]: the same classifier on every position (token classification heads).
    token_logits: np.ndarray | None = None
    # [B, S, 2]: the extractive-QA span head on every position ([..., 0] start, [..., 1] end).
    span_logits: np.ndarray | None = None


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_exact(x: np.ndarray) -> np.ndarray:
    """x * Phi(x), with the exact erf (Hugging Face "gelu")."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """The tanh approximation of GELU (TF1 ALBERT/BERT "gelu", Hugging Face "gelu_new")."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATION_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "gelu_exact": gelu_exact,
    "gelu_tanh": gelu_tanh,
    "relu": lambda x: np.maximum(x, 0.0),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "tanh": np.tanh,
    "identity": lambda x: x,  # MobileBERT's pooler without classifier_activation
}


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis: [..., W] -> [..., W]."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def dense(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """x @ kernel + bias with a TF-oriented kernel: [..., in] x [in, out] -> [..., out]."""
    # One 2-D GEMM: numpy's broadcasting 3-D @ 2-D matmul is several times slower.
    y = (x.reshape(-1, x.shape[-1]) @ kernel).reshape(*x.shape[:-1], kernel.shape[-1])
    return y if bias is None else y + bias


def embed(t: dict[str, np.ndarray], cfg: AlbertConfig, input_ids: np.ndarray, token_type_ids: np.ndarray) -> np.ndarray:
    """Factorized embedding: ids [B, S] -> [B, S, H].

    add_then_project (Google ALBERT, HF): LN_E(word + pos + type) @ W[E, H] + b.
    project_then_add (brightmart albert_zh): LN_H(word @ W[E, H] + pos + type).
    no_projection (BERT): LN_H(word + pos + type).
    """
    seq = input_ids.shape[1]
    word = t["embeddings.word"][input_ids]
    if cfg.mobilebert:
        word = dense(trigram(word), t["embeddings.projection.kernel"], t["embeddings.projection.bias"])
        extra = t["embeddings.position"][:seq][None, :, :] + t["embeddings.token_type"][token_type_ids]
        return no_norm(word + extra, t, "embeddings.norm")
    extra = t["embeddings.position"][:seq][None, :, :] + t["embeddings.token_type"][token_type_ids]
    ln = (t["embeddings.layer_norm.gamma"], t["embeddings.layer_norm.beta"], cfg.layer_norm_eps)
    if cfg.embedding_order == "project_then_add":
        return layer_norm(word @ t["embeddings.projection.kernel"] + extra, *ln)
    x = layer_norm(word + extra, *ln)
    if cfg.embedding_order == "add_then_project":
        x = dense(x, t["embeddings.projection.kernel"], t["embeddings.projection.bias"])
    return x


def self_attention(x: np.ndarray, p: dict[str, np.ndarray], cfg: AlbertConfig, mask_adder: np.ndarray) -> np.ndarray:
    """Multi-head self-attention: [B, S, H] -> [B, S, H] (output projection included, no residual).

    mask_adder [B, 1, 1, S] is 0 for real keys and MASK_ADDER for padding.
    """
    batch, seq, _ = x.shape
    heads, depth = cfg.num_attention_heads, cfg.head_dim()

    def split(y: np.ndarray) -> np.ndarray:  # [B, S, H] -> [B, N, S, D]
        return y.reshape(batch, seq, heads, depth).transpose(0, 2, 1, 3)

    q = split(dense(x, p["attention.query.kernel"], p["attention.query.bias"]))
    k = split(dense(x, p["attention.key.kernel"], p["attention.key.bias"]))
    v = split(dense(x, p["attention.value.kernel"], p["attention.value.bias"]))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(depth) + mask_adder  # [B, N, S, S]
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * depth)
    return dense(context, p["attention.output.kernel"], p["attention.output.bias"])


def feed_forward(x: np.ndarray, p: dict[str, np.ndarray], cfg: AlbertConfig) -> np.ndarray:
    """Position-wise FFN: [B, S, H] -> [B, S, I] -> [B, S, H] (no residual)."""
    act = ACTIVATION_FUNCTIONS[cfg.hidden_act]
    hidden = act(dense(x, p["ffn.intermediate.kernel"], p["ffn.intermediate.bias"]))
    return dense(hidden, p["ffn.output.kernel"], p["ffn.output.bias"])


def transformer_block(x: np.ndarray, p: dict[str, np.ndarray], cfg: AlbertConfig, mask_adder: np.ndarray) -> np.ndarray:
    """One block, [B, S, H] -> [B, S, H].

    postln (BERT/ALBERT): x = LN(x + Attn(x)); x = LN(x + FFN(x)).
    preln (brightmart modeling_preln): x = x + Attn(LN(x)); x = x + FFN(LN(x)); no final LN.
    """
    eps = cfg.layer_norm_eps
    ln_att = (p["attention.layer_norm.gamma"], p["attention.layer_norm.beta"], eps)
    ln_ffn = (p["ffn.layer_norm.gamma"], p["ffn.layer_norm.beta"], eps)
    if cfg.ln_type == "preln":
        x = x + self_attention(layer_norm(x, *ln_att), p, cfg, mask_adder)
        return x + feed_forward(layer_norm(x, *ln_ffn), p, cfg)
    x = layer_norm(x + self_attention(x, p, cfg, mask_adder), *ln_att)
    return layer_norm(x + feed_forward(x, p, cfg), *ln_ffn)


def no_norm(x: np.ndarray, p: dict[str, np.ndarray], prefix: str) -> np.ndarray:
    """MobileBERT's NoNorm: x * gamma + beta (no statistics), [..., W] -> [..., W]."""
    return x * p[prefix + ".gamma"] + p[prefix + ".beta"]


def trigram(word: np.ndarray) -> np.ndarray:
    """MobileBERT's 3-gram input, [B, S, E] -> [B, S, 3E]: (next, this, previous) row, zeros past the ends."""
    zero = np.zeros_like(word[:, :1])
    return np.concatenate([np.concatenate([word[:, 1:], zero], axis=1), word,
                           np.concatenate([zero, word[:, :-1]], axis=1)], axis=2)


def mobilebert_block(x: np.ndarray, p: dict[str, np.ndarray], cfg: AlbertConfig, mask_adder: np.ndarray) -> np.ndarray:
    """One MobileBERT layer, [B, S, H] -> [B, S, H] (transformers' MobileBertLayer, use_bottleneck).

    The layer narrows x to the bottleneck width (``inner``), attends there with Q and K from the shared
    key/query bottleneck (or inner, or x) and V from x (or inner), runs its FFNs at that width, each
    NoNorm(sublayer + input), and widens back with NoNorm(h W_out + b + x).
    """
    layout = cfg.mobilebert
    assert layout is not None, "mobilebert_block needs a MobileBERT config"
    inner = no_norm(dense(x, p["bottleneck.input.kernel"], p["bottleneck.input.bias"]), p, "bottleneck.input.norm")
    if layout.use_bottleneck_attention:
        qk_in = v_in = inner
    elif layout.key_query_shared_bottleneck:
        shared = dense(x, p["bottleneck.attention.kernel"], p["bottleneck.attention.bias"])
        qk_in, v_in = no_norm(shared, p, "bottleneck.attention.norm"), x
    else:
        qk_in = v_in = x
    batch, seq, _ = x.shape
    heads, depth = cfg.num_attention_heads, cfg.head_dim()

    def split(y: np.ndarray) -> np.ndarray:  # [B, S, Bn] -> [B, N, S, D]
        return y.reshape(batch, seq, heads, depth).transpose(0, 2, 1, 3)

    q, k, v = (split(dense(y, p[f"attention.{n}.kernel"], p[f"attention.{n}.bias"]))
               for y, n in ((qk_in, "query"), (qk_in, "key"), (v_in, "value")))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(depth) + mask_adder
    probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = probs / probs.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, heads * depth)
    h = no_norm(dense(context, p["attention.output.kernel"], p["attention.output.bias"]) + inner, p, "attention.norm")
    act = ACTIVATION_FUNCTIONS[cfg.hidden_act]
    for ffn in [f"ffn{k}." for k in range(layout.num_feedforward_networks - 1)] + ["ffn."]:
        hidden = act(dense(h, p[ffn + "intermediate.kernel"], p[ffn + "intermediate.bias"]))
        h = no_norm(dense(hidden, p[ffn + "output.kernel"], p[ffn + "output.bias"]) + h, p, ffn + "norm")
    widened = dense(h, p["output_bottleneck.kernel"], p["output_bottleneck.bias"])
    return no_norm(widened + x, p, "output_bottleneck.norm")


def encoder(x: np.ndarray, cfg: AlbertConfig, blocks: dict[tuple[int, int], dict[str, np.ndarray]],
            mask_adder: np.ndarray) -> np.ndarray:
    """The shared stack, [B, S, H] -> [B, S, H]: layer l runs the inner blocks of group int(l * G / L)."""
    for layer in range(cfg.num_hidden_layers):
        group = cfg.group_of_layer(layer)
        for inner in range(cfg.inner_group_num):
            block = mobilebert_block if cfg.mobilebert else transformer_block
            x = block(x, blocks[group, inner], cfg, mask_adder)
    return x


def pooler(x: np.ndarray, t: dict[str, np.ndarray], act: str = "tanh") -> np.ndarray:
    """act(dense) of the [CLS] (first) position: [B, S, H] -> [B, H]. BERT's pooler is tanh;
    DistilBERT's ``pre_classifier`` is followed by ReLU, ELECTRA's classification head by GELU."""
    return ACTIVATION_FUNCTIONS[act](dense(x[:, 0], t["pooler.kernel"], t["pooler.bias"]))


def _check_inputs(cfg: AlbertConfig, input_ids, attention_mask, token_type_ids):
    ids = np.asarray(input_ids)
    if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        raise DataError(f"input_ids must be an integer array [batch, seq], got {ids.dtype} shape {list(ids.shape)}")
    if ids.shape[1] > cfg.max_position_embeddings or ids.shape[1] == 0:
        raise DataError(f"input_ids: sequence length {ids.shape[1]} not in [1, {cfg.max_position_embeddings}]")
    if ids.size and (ids.min() < 0 or ids.max() >= cfg.vocab_size):
        raise DataError(f"input_ids: token id out of range [0, {cfg.vocab_size})")
    mask = np.ones_like(ids) if attention_mask is None else np.asarray(attention_mask)
    types = np.zeros_like(ids) if token_type_ids is None else np.asarray(token_type_ids)
    for name, arr in (("attention_mask", mask), ("token_type_ids", types)):
        if arr.shape != ids.shape:
            raise DataError(f"{name} shape {list(arr.shape)} != input_ids shape {list(ids.shape)}")
    if types.size and (types.min() < 0 or types.max() >= cfg.type_vocab_size):
        raise DataError(f"token_type_ids out of range [0, {cfg.type_vocab_size})")
    return ids.astype(np.int64), mask.astype(np.float64), types.astype(np.int64)


def reference_forward(weights: AlbertWeights, input_ids, attention_mask=None, token_type_ids=None) -> ReferenceOutput:
    """Run the model in float64 on int arrays [B, S]; attention_mask is 1 for tokens, 0 for padding."""
    cfg = weights.config
    ids, mask, types = _check_inputs(cfg, input_ids, attention_mask, token_type_ids)
    t = {name: array.astype(np.float64) for name, array in weights.tensors.items()
         if not name.startswith("encoder.")}
    blocks = {(g, i): {key: value.astype(np.float64) for key, value in weights.block(g, i).items()}
              for g in cfg.used_groups() for i in range(cfg.inner_group_num)}
    mask_adder = ((1.0 - mask) * MASK_ADDER)[:, None, None, :]
    hidden = encoder(embed(t, cfg, ids, types), cfg, blocks, mask_adder)
    pooled = pooler(hidden, t, cfg.pooler_act) if "pooler.kernel" in t else None
    has_head = "classifier.kernel" in t
    logits = dense(pooled, t["classifier.kernel"], t["classifier.bias"]) if has_head and pooled is not None else None
    token_logits = dense(hidden, t["classifier.kernel"], t["classifier.bias"]) if has_head else None
    span_logits = dense(hidden, t["qa_outputs.kernel"], t["qa_outputs.bias"]) if "qa_outputs.kernel" in t else None
    return ReferenceOutput(last_hidden_state=hidden, pooled_output=pooled, logits=logits, token_logits=token_logits,
                           span_logits=span_logits)
