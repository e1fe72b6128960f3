"""Each vector's nearest other vector by cosine, in blocks: memory grows with N, not N².

``albert-edge embed`` shows every text's nearest neighbour. The whole N×N similarity matrix would need
40 GB for 100k texts; a block of rows against all vectors at a time keeps at most ``max_block_values``
similarities alive, and each row keeps only its best index and cosine.
"""

from __future__ import annotations

import numpy as np

#: Similarities held at once (float32): 4M values = 16 MB, whatever the number of texts.
MAX_BLOCK_VALUES = 1 << 22


def nearest_neighbours(vectors: np.ndarray, max_block_values: int = MAX_BLOCK_VALUES) -> tuple[np.ndarray, np.ndarray]:
    """(index, cosine) of each row's nearest *other* row; index -1 and cosine NaN when there is none.

    Zero vectors have cosine 0 to everything (not NaN), as a norm of 0 is treated as 1.
    """
    rows = int(vectors.shape[0])
    best_index = np.full(rows, -1, dtype=np.int64)
    best_cosine = np.full(rows, np.nan, dtype=np.float32)
    if rows < 2:
        return best_index, best_cosine
    norms = np.linalg.norm(vectors, axis=1, keepdims=True).astype(np.float32)
    unit = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
    block = max(1, min(rows, max_block_values // rows))
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        sims = unit[start:stop] @ unit.T
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        best_index[start:stop] = np.argmax(sims, axis=1)
        best_cosine[start:stop] = sims[np.arange(stop - start), best_index[start:stop]]
    return best_index, best_cosine


__all__ = ["MAX_BLOCK_VALUES", "nearest_neighbours"]
