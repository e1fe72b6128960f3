"""Fold brightmart's word-embedding projection into the word table, so the model is Hugging Face ALBERT.

brightmart albert_zh projects the word embeddings E -> H *before* adding the position and type
embeddings (``project_then_add``); Hugging Face's ALBERT adds them in E and projects after the
LayerNorm, so ``write_hf_checkpoint`` refuses such weights. ``LN(word @ P + pos + type)`` equals
``LN(word' + pos + type)`` with ``word' = word @ P`` ([V, H]), which is a ``no_projection`` model
(E == H) that the writer emits as Hugging Face ALBERT with an identity mapping. The function is
unchanged (float32 rounding of one matmul aside); the cost is a larger word table: V x H floats
instead of V x E + E x H (ALBERT-Tiny: 6.6 M instead of 2.7 M parameters). Peers that start from a
Hugging Face checkpoint (``benchmarks/suites/peers.py``) therefore carry that larger table.
"""

from __future__ import annotations

import numpy as np

from albert_edge.model.weights import AlbertWeights


def fold_embedding_projection(weights: AlbertWeights) -> AlbertWeights:
    """The same function as ``weights`` with a ``no_projection`` embedding ([V, H] word table).

    Weights that are not ``project_then_add`` are returned unchanged: the others are already
    expressible in Hugging Face's layout.
    """
    cfg = weights.config
    if cfg.embedding_order != "project_then_add":
        return weights
    tensors = dict(weights.tensors)
    kernel = tensors.pop("embeddings.projection.kernel")
    tensors.pop("embeddings.projection.bias", None)  # brightmart has none; kept general
    word = tensors["embeddings.word"].astype(np.float64) @ kernel.astype(np.float64)
    tensors["embeddings.word"] = word.astype(np.float32)
    folded = cfg.with_changes(embedding_size=cfg.hidden_size, embedding_order="no_projection")
    return AlbertWeights(config=folded, tensors=tensors, scheme=weights.scheme, num_labels=weights.num_labels,
                         ignored=weights.ignored, source=f"{weights.source} (projection folded)")
