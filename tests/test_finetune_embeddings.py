"""PPMI-SVD word-embedding warm start: co-occurring tokens end up close, unseen ones untouched."""

from __future__ import annotations

import numpy as np

from albert_edge.finetune.embeddings import cooccurrence_counts, ppmi_svd_embeddings


def test_cooccurrence_is_symmetric_and_weighted_by_distance():
    counts = cooccurrence_counts([[1, 2, 3]], window=2)
    assert counts[(1, 2)] == counts[(2, 1)] == 1.0
    assert counts[(1, 3)] == counts[(3, 1)] == 0.5
    assert (1, 1) not in counts


def test_tokens_sharing_contexts_get_similar_vectors():
    rng = np.random.default_rng(0)
    # Tokens 10 and 11 both appear beside 20..24; token 12 only beside 30..34.
    sequences = []
    for _ in range(400):
        sequences.append([int(rng.integers(20, 25)), int(rng.choice([10, 11])), int(rng.integers(20, 25))])
        sequences.append([int(rng.integers(30, 35)), 12, int(rng.integers(30, 35))])
    vectors, _ = ppmi_svd_embeddings(sequences, vocab_size=40, dim=4, seed=0)
    unit = vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12)
    assert unit[10] @ unit[11] > 0.9
    assert unit[10] @ unit[12] < 0.5


def test_rare_and_unseen_tokens_get_no_row_and_rows_have_the_requested_scale():
    sequences = [[1, 2, 3, 4, 5, 6]] * 20 + [[7]]
    vectors, mask = ppmi_svd_embeddings(sequences, vocab_size=10, dim=3, std=0.05, min_count=2)
    assert mask.tolist() == [False, True, True, True, True, True, True, False, False, False]
    assert not vectors[~mask].any()
    assert abs(vectors[mask].std() - 0.05) < 1e-6
