"""Word-embedding warm start from co-occurrence statistics of the training texts (PPMI + SVD).

A from-scratch ALBERT-Tiny has to learn what every character means from ~14 k labelled
reviews, which is where a bag-of-n-grams baseline wins. Counting which tokens occur near
each other in the same texts, weighting by positive pointwise mutual information and
keeping the top singular directions gives every seen token a meaningful vector in seconds
(Levy & Goldberg 2014): a cheap stand-in for a masked-LM warm-up. Only token ids are used,
never labels, and only the training texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cooccurrence_counts(sequences: Sequence[Sequence[int]], window: int) -> dict[tuple[int, int], float]:
    """Symmetric co-occurrence counts within ``window`` tokens, weighted 1/distance."""
    counts: dict[tuple[int, int], float] = {}
    for seq in sequences:
        for i, a in enumerate(seq):
            for d in range(1, window + 1):
                if i + d >= len(seq):
                    break
                b = seq[i + d]
                w = 1.0 / d
                counts[(a, b)] = counts.get((a, b), 0.0) + w
                counts[(b, a)] = counts.get((b, a), 0.0) + w
    return counts


def ppmi_svd_embeddings(
    sequences: Sequence[Sequence[int]],
    vocab_size: int,
    dim: int,
    std: float = 0.02,
    window: int = 3,
    min_count: int = 2,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings ``[vocab_size, dim]`` float32 and a ``[vocab_size]`` bool mask of rows set.

    ``sequences``: token ids without special tokens. Tokens seen fewer than ``min_count``
    times get no row (mask False; keep their random init). Rows are scaled so the set
    entries have standard deviation ``std``, the scale the rest of the model was initialised for.
    """
    freq = np.bincount(np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences if len(s)]),
                       minlength=vocab_size)
    kept = np.flatnonzero(freq >= min_count)
    index = np.full(vocab_size, -1, dtype=np.int64)
    index[kept] = np.arange(len(kept))
    filtered = [[index[t] for t in s if index[t] >= 0] for s in sequences]
    counts = cooccurrence_counts(filtered, window)
    rows = np.fromiter((k[0] for k in counts), dtype=np.int64, count=len(counts))
    cols = np.fromiter((k[1] for k in counts), dtype=np.int64, count=len(counts))
    vals = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    n = len(kept)
    total = vals.sum()
    row_sum = np.bincount(rows, weights=vals, minlength=n)
    col_sum = np.bincount(cols, weights=vals, minlength=n) ** 0.75  # context smoothing (word2vec's 3/4)
    col_sum /= col_sum.sum()
    pmi = np.log(vals / total) - np.log(row_sum[rows] / total) - np.log(col_sum[cols])
    matrix = np.zeros((n, n), dtype=np.float32)
    keep = pmi > 0
    matrix[rows[keep], cols[keep]] = pmi[keep]
    k = min(dim, n - 1)
    u, s = _top_singular(matrix, k, np.random.default_rng(seed))
    vectors = u * np.sqrt(s)[None, :]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    vectors *= std / (vectors.std() + 1e-12)
    out = np.zeros((vocab_size, dim), dtype=np.float32)
    out[kept, :k] = vectors.astype(np.float32)
    mask = np.zeros(vocab_size, dtype=bool)
    mask[kept] = True
    return out, mask


def _top_singular(matrix: np.ndarray, k: int, rng: np.random.Generator, oversample: int = 10,
                  power_iterations: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` left singular vectors ``[n, k]`` and values ``[k]`` by randomized SVD (Halko et al.)."""
    q = np.linalg.qr(matrix @ rng.standard_normal((matrix.shape[1], k + oversample)).astype(np.float32))[0]
    for _ in range(power_iterations):
        q = np.linalg.qr(matrix.T @ q)[0]
        q = np.linalg.qr(matrix @ q)[0]
    u_small, s, _ = np.linalg.svd(q.T @ matrix, full_matrices=False)
    return (q @ u_small)[:, :k], s[:k]
