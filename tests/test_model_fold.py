"""fold_embedding_projection: brightmart's project-then-add embedding becomes a Hugging Face-writable model."""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.errors import ConfigError
from albert_edge.model import (
    AlbertConfig,
    random_weights,
    read_hf_checkpoint,
    reference_forward,
    write_hf_checkpoint,
)
from albert_edge.model.fold import fold_embedding_projection

SMALL = {"vocab_size": 120, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 3,
         "num_attention_heads": 4, "intermediate_size": 48, "max_position_embeddings": 64}


def brightmart_like():
    return random_weights(AlbertConfig(**SMALL, embedding_order="project_then_add"), num_labels=2, seed=3)


def _inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 120, size=(2, 11))
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    types = np.zeros_like(ids)
    types[0, 6:] = 1
    return ids, mask, types


def test_folded_weights_compute_the_same_logits_as_brightmarts_order():
    weights = brightmart_like()
    folded = fold_embedding_projection(weights)
    assert folded.config.embedding_order == "no_projection" and folded.config.embedding_size == 32
    assert "embeddings.projection.kernel" not in folded.tensors and folded.tensors["embeddings.word"].shape == (120, 32)
    np.testing.assert_allclose(reference_forward(folded, *_inputs()).logits,
                               reference_forward(weights, *_inputs()).logits, atol=1e-5)


def test_the_hf_writer_refuses_brightmarts_order_but_writes_the_folded_model(tmp_path):
    weights = brightmart_like()
    with pytest.raises(ConfigError, match="project"):
        write_hf_checkpoint(weights, tmp_path / "raw")
    write_hf_checkpoint(fold_embedding_projection(weights), tmp_path / "hf")
    back = read_hf_checkpoint(tmp_path / "hf")
    np.testing.assert_allclose(reference_forward(back, *_inputs()).logits,
                               reference_forward(weights, *_inputs()).logits, atol=1e-5)


def test_weights_already_in_hf_order_are_returned_unchanged():
    weights = random_weights(AlbertConfig(**SMALL), num_labels=2, seed=3)
    assert fold_embedding_projection(weights) is weights
