"""The numpy reference against independent implementations.

Judges: Hugging Face transformers (torch) AlbertForSequenceClassification / BertForSequenceClassification
loaded with ``from_pretrained`` from our HF writer (which this also tests), and, for the two
computations HF cannot express (brightmart's project-then-add embedding, brightmart pre-LN), HF BERT
with the projection folded into the word table and a plain torch pre-LN forward.

Tolerance: max |difference| <= 1e-4 between the float64 reference and the float32 judge, on logits
and on the last hidden state of real (unpadded) tokens. Measured: float32 rounding of these 4-layer,
H=312 models gives ~1e-6; swapping tanh and exact GELU (the subtlest mistake) moves logits by only
~1.5e-4 but hidden states by ~1e-3, so the hidden-state comparison is what makes that one visible;
a wrong LayerNorm placement moves logits by ~1.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.errors import DataError
from albert_edge.model import (AlbertConfig, AlbertWeights, albert_tiny_zh_config, albert_tiny_zh_google_config,
                               random_weights, reference_forward, write_hf_checkpoint)

TOLERANCE = 1e-4
VOCAB = 400

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def sample_inputs(seed: int = 0, batch: int = 3, seq: int = 24, vocab: int = VOCAB):
    """Random ids with padding (rows padded to 24, 15 and 6 real tokens) and two segments."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    for row, length in enumerate((seq, 15, 6)[:batch]):
        mask[row, length:] = 0
        ids[row, length:] = 0
    types = np.zeros_like(ids)
    types[:, seq // 2:] = 1
    return ids, mask, types


def hf_outputs(weights: AlbertWeights, tmp_path, ids, mask, types, fmt="safetensors"):
    """(logits, last_hidden_state) of transformers' model loaded from our HF writer's files."""
    directory = write_hf_checkpoint(weights, tmp_path / "hf", fmt=fmt)
    cls = (transformers.AlbertForSequenceClassification if weights.config.model_type == "albert"
           else transformers.BertForSequenceClassification)
    model, info = cls.from_pretrained(str(directory), output_loading_info=True)
    assert not any(info.values()), info  # no missing/unexpected/mismatched keys
    model.eval()
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, dtype=torch.long), attention_mask=torch.tensor(mask, dtype=torch.long),
                    token_type_ids=torch.tensor(types, dtype=torch.long), output_hidden_states=True)
    return out.logits.numpy(), out.hidden_states[-1].numpy()


def small(config: AlbertConfig) -> AlbertConfig:
    return config.with_changes(vocab_size=VOCAB, max_position_embeddings=64)


@pytest.mark.parametrize("groups,inner", [(1, 1), (2, 2)])
def test_reference_matches_hf_albert_with_shared_groups_and_padding(tmp_path, groups, inner):
    weights = random_weights(small(albert_tiny_zh_google_config()).with_changes(
        num_hidden_groups=groups, inner_group_num=inner), num_labels=3, seed=1)
    ids, mask, types = sample_inputs()
    logits, hidden = hf_outputs(weights, tmp_path, ids, mask, types)
    ref = reference_forward(weights, ids, mask, types)
    assert np.abs(ref.logits - logits).max() <= TOLERANCE
    real = mask.astype(bool)  # HF and TF1 differ only on padded query rows, which nothing reads
    assert np.abs(ref.last_hidden_state - hidden)[real].max() <= TOLERANCE


def test_reference_matches_hf_albert_exact_gelu_from_pytorch_bin(tmp_path):
    weights = random_weights(small(albert_tiny_zh_google_config()).with_changes(hidden_act="gelu_exact"), seed=2)
    ids, mask, types = sample_inputs(seed=2)
    logits, hidden = hf_outputs(weights, tmp_path, ids, mask, types, fmt="bin")
    ref = reference_forward(weights, ids, mask, types)
    assert np.abs(ref.logits - logits).max() <= TOLERANCE
    assert np.abs(ref.last_hidden_state - hidden)[mask.astype(bool)].max() <= TOLERANCE


def test_reference_matches_hf_bert(tmp_path):
    cfg = AlbertConfig(vocab_size=VOCAB, embedding_size=96, hidden_size=96, num_hidden_layers=3, num_attention_heads=6,
                       intermediate_size=192, num_hidden_groups=3, hidden_act="gelu_exact", max_position_embeddings=64,
                       embedding_order="no_projection", model_type="bert")
    weights = random_weights(cfg, num_labels=2, seed=3)
    ids, mask, types = sample_inputs(seed=3)
    logits, hidden = hf_outputs(weights, tmp_path, ids, mask, types)
    ref = reference_forward(weights, ids, mask, types)
    assert np.abs(ref.logits - logits).max() <= TOLERANCE
    assert np.abs(ref.last_hidden_state - hidden)[mask.astype(bool)].max() <= TOLERANCE


def test_tanh_and_exact_gelu_are_told_apart_by_the_tolerance(tmp_path):
    weights = random_weights(small(albert_tiny_zh_google_config()), seed=4)
    ids, mask, types = sample_inputs(seed=4)
    exact = AlbertWeights(weights.config.with_changes(hidden_act="gelu_exact"), weights.tensors, "random",
                          weights.num_labels)
    _, hidden = hf_outputs(exact, tmp_path, ids, mask, types)
    tanh_hidden = reference_forward(weights, ids, mask, types).last_hidden_state
    assert np.abs(tanh_hidden - hidden)[mask.astype(bool)].max() > 5 * TOLERANCE


def test_brightmart_project_then_add_matches_hf_bert_with_projection_folded_in(tmp_path):
    weights = random_weights(small(albert_tiny_zh_config()), num_labels=2, seed=5)
    cfg = weights.config
    t = weights.tensors
    # word @ W[E, H] is a [V, H] table; position/type/LayerNorm are already at H: exactly BERT's embedding.
    word = t["embeddings.word"].astype(np.float64) @ t["embeddings.projection.kernel"]
    folded = {"embeddings.word": word.astype(np.float32)}
    for name in ("embeddings.position", "embeddings.token_type", "embeddings.layer_norm.gamma",
                 "embeddings.layer_norm.beta", "pooler.kernel", "pooler.bias", "classifier.kernel", "classifier.bias"):
        folded[name] = t[name]
    for layer in range(cfg.num_hidden_layers):  # the one shared block, copied into every BERT layer
        for key, array in weights.block(0, 0).items():
            folded[f"encoder.group{layer}.inner0.{key}"] = array
    bert_cfg = cfg.with_changes(embedding_size=cfg.hidden_size, num_hidden_groups=cfg.num_hidden_layers,
                                embedding_order="no_projection", model_type="bert")
    ids, mask, types = sample_inputs(seed=5)
    logits, _ = hf_outputs(AlbertWeights(bert_cfg, folded, "folded", 2), tmp_path, ids, mask, types)
    assert np.abs(reference_forward(weights, ids, mask, types).logits - logits).max() <= TOLERANCE


def torch_preln_logits(weights: AlbertWeights, ids, mask, types):
    """brightmart modeling_preln.prelln_transformer_model, written independently in torch (float32)."""
    functional = torch.nn.functional
    cfg = weights.config
    t = {name: torch.tensor(array) for name, array in weights.tensors.items()}
    ids, types = torch.tensor(ids, dtype=torch.long), torch.tensor(types, dtype=torch.long)
    keep = torch.tensor(mask, dtype=torch.bool)[:, None, None, :]
    batch, seq = ids.shape
    heads, hidden, eps = cfg.num_attention_heads, cfg.hidden_size, cfg.layer_norm_eps

    def linear(x, name):
        return functional.linear(x, t[name + ".kernel"].T, t[name + ".bias"])

    def norm(x, name):
        return functional.layer_norm(x, (x.shape[-1],), t[name + ".gamma"], t[name + ".beta"], eps)

    x = t["embeddings.word"][ids] @ t["embeddings.projection.kernel"] + t["embeddings.position"][:seq] \
        + t["embeddings.token_type"][types]
    x = norm(x, "embeddings.layer_norm")
    block = "encoder.group0.inner0."
    for _ in range(cfg.num_hidden_layers):
        h = norm(x, block + "attention.layer_norm")
        q, k, v = (linear(h, block + f"attention.{p}").view(batch, seq, heads, -1).transpose(1, 2)
                   for p in ("query", "key", "value"))
        context = functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        x = x + linear(context.transpose(1, 2).reshape(batch, seq, hidden), block + "attention.output")
        h = norm(x, block + "ffn.layer_norm")
        x = x + linear(functional.gelu(linear(h, block + "ffn.intermediate"), approximate="tanh"), block + "ffn.output")
    pooled = torch.tanh(linear(x[:, 0], "pooler"))
    return linear(pooled, "classifier").numpy()


def test_brightmart_preln_matches_an_independent_torch_preln():
    weights = random_weights(small(albert_tiny_zh_config()).with_changes(ln_type="preln"), num_labels=2, seed=6)
    ids, mask, types = sample_inputs(seed=6)
    with torch.no_grad():
        judge = torch_preln_logits(weights, ids, mask, types)
    ref = reference_forward(weights, ids, mask, types)
    assert np.abs(ref.logits - judge).max() <= TOLERANCE
    postln = AlbertWeights(weights.config.with_changes(ln_type="postln"), weights.tensors, "random", 2)
    assert np.abs(reference_forward(postln, ids, mask, types).logits - judge).max() > TOLERANCE


def test_padding_does_not_change_the_logits_of_real_tokens():
    weights = random_weights(small(albert_tiny_zh_config()), seed=7)
    ids, _, types = sample_inputs(seed=7, batch=1, seq=10)
    padded = np.concatenate([ids, np.zeros((1, 6), np.int32)], axis=1)
    padded_types = np.concatenate([types, np.zeros((1, 6), np.int32)], axis=1)
    padded_mask = np.concatenate([np.ones((1, 10), np.int32), np.zeros((1, 6), np.int32)], axis=1)
    plain = reference_forward(weights, ids, None, types).logits
    assert np.abs(reference_forward(weights, padded, padded_mask, padded_types).logits - plain).max() < 1e-12


def test_token_types_change_the_output():
    weights = random_weights(small(albert_tiny_zh_config()), seed=8)
    ids, mask, types = sample_inputs(seed=8)
    assert not np.allclose(reference_forward(weights, ids, mask, types).logits,
                           reference_forward(weights, ids, mask, None).logits)


def test_reference_returns_float64_shapes_and_no_logits_without_head():
    weights = random_weights(small(albert_tiny_zh_config()), num_labels=None, seed=9)
    ids, mask, types = sample_inputs(seed=9)
    out = reference_forward(weights, ids, mask, types)
    assert out.last_hidden_state.shape == (3, 24, 312) and out.last_hidden_state.dtype == np.float64
    assert out.pooled_output.shape == (3, 312) and out.logits is None


def test_out_of_range_token_id_is_a_data_error():
    weights = random_weights(small(albert_tiny_zh_config()), seed=10)
    with pytest.raises(DataError, match=r"token id out of range \[0, 400\)"):
        reference_forward(weights, np.array([[1, VOCAB]]))
