"""The TensorFlow training graph computes exactly what the numpy reference computes."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from albert_edge.errors import ConfigError
from albert_edge.finetune.tf_model import TfAlbertClassifier
from albert_edge.model import AlbertConfig, random_weights, reference_forward
from albert_edge.model.config import ACTIVATIONS


def small_config(**changes) -> AlbertConfig:
    base = {"vocab_size": 60, "embedding_size": 8, "hidden_size": 24, "num_hidden_layers": 3,
            "num_attention_heads": 4, "intermediate_size": 40, "max_position_embeddings": 32,
            "embedding_order": "project_then_add"}
    base.update(changes)
    return AlbertConfig(**base)


def inputs(vocab: int):
    rng = np.random.default_rng(3)
    ids = rng.integers(0, vocab, (3, 9)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    mask[2, 2:] = 0
    types = np.zeros_like(ids)
    types[0, 4:] = 1
    return ids, mask, types


@pytest.mark.parametrize(
    "changes",
    [
        {},  # brightmart albert_tiny_zh layout: project word E->H, add pos/type at H
        {"embedding_order": "add_then_project"},  # Google ALBERT
        {"num_hidden_groups": 3, "inner_group_num": 2},  # several groups, several inner blocks
        {"ln_type": "preln"},  # brightmart modeling_preln
        {"ln_type": "preln", "embedding_order": "add_then_project", "hidden_act": "relu"},
        {"embedding_size": 24, "embedding_order": "no_projection", "model_type": "bert", "num_hidden_groups": 3},
        *({"hidden_act": act} for act in ACTIVATIONS),  # every activation the config allows
    ],
    ids=["brightmart", "google", "groups", "preln", "preln_google_relu", "bert", *ACTIVATIONS],
)
def test_tf_logits_equal_reference_logits(changes):
    weights = random_weights(small_config(**changes), num_labels=3, seed=1)
    ids, mask, types = inputs(60)
    tf_logits = TfAlbertClassifier(weights)(ids, mask, types).numpy()
    np.testing.assert_allclose(tf_logits, reference_forward(weights, ids, mask, types).logits, atol=1e-4, rtol=0)


@pytest.mark.parametrize("changes", [{}, {"ln_type": "preln", "hidden_act": "silu"}], ids=["postln", "preln"])
def test_dropout_changes_logits_only_when_a_seed_is_given(changes):
    weights = random_weights(small_config(**changes), num_labels=2, seed=2)
    model = TfAlbertClassifier(weights, dropout=0.3)
    ids, mask, types = inputs(60)
    plain = model(ids, mask, types).numpy()
    np.testing.assert_allclose(plain, reference_forward(weights, ids, mask, types).logits, atol=1e-4, rtol=0)
    seed = tf.constant([7, 0], tf.int32)
    dropped = model(ids, mask, types, seed=seed).numpy()
    assert np.abs(dropped - plain).max() > 1e-3
    np.testing.assert_array_equal(dropped, model(ids, mask, types, seed=seed).numpy())


def test_round_trip_through_variables_keeps_every_tensor():
    weights = random_weights(small_config(), num_labels=2, seed=4)
    back = TfAlbertClassifier(weights).to_weights()
    assert sorted(back.tensors) == sorted(weights.tensors)
    for name, array in weights.tensors.items():
        np.testing.assert_array_equal(back.tensors[name], array)


def test_weights_without_a_head_are_refused():
    weights = random_weights(small_config(), num_labels=None)
    with pytest.raises(ConfigError, match="no classifier.kernel"):
        TfAlbertClassifier(weights)
