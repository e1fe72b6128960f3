"""Read a sentence-transformers folder's pipeline: which pooling, and whether it L2-normalises.

A sentence-transformers model directory holds the transformer's own files (config.json,
model.safetensors, vocab.txt) plus ``modules.json``, which lists the modules applied in order
(Transformer, Pooling, Normalize, ...), and each module's folder (``1_Pooling/config.json``).
These are untrusted files: JSON is read with the bounded reader, and any module we cannot
reproduce (a Dense projection, weighted-mean or last-token pooling) is an error naming it, since
exporting the encoder alone would silently give different embeddings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from albert_edge.errors import CheckpointError
from albert_edge.jsonfile import load_json_file

MODULES_FILE = "modules.json"
TRANSFORMER = "sentence_transformers.models.Transformer"
POOLING = "sentence_transformers.models.Pooling"
NORMALIZE = "sentence_transformers.models.Normalize"
#: Pooling config key -> our pooling mode, for the modes we export.
POOLING_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean", "pooling_mode_max_tokens": "max"}
UNSUPPORTED_POOLING_KEYS = ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                            "pooling_mode_lasttoken")


@dataclass(frozen=True)
class SentencePooling:
    """The pooling mode ("cls", "mean" or "max") and whether a Normalize module follows it."""

    mode: str
    normalize: bool


def read_pooling(checkpoint: str | os.PathLike[str]) -> SentencePooling | None:
    """The folder's pooling, or None when it is not a sentence-transformers folder (no modules.json)."""
    path = Path(checkpoint)
    root = path if path.is_dir() else path.parent  # a directory, or a file / TF1 prefix inside one
    path = root / MODULES_FILE
    if not path.is_file():
        return None
    modules = load_json_file(path, CheckpointError)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise CheckpointError(f"{path}: expected a JSON list of module objects")
    types = [str(m.get("type", "")) for m in modules]
    unknown = [t for t in types if t not in (TRANSFORMER, POOLING, NORMALIZE)]
    if unknown:
        raise CheckpointError(f"{path}: module {unknown[0]!r} is not supported (only Transformer, Pooling, Normalize)")
    if types.count(POOLING) != 1 or types.count(TRANSFORMER) != 1 or types.count(NORMALIZE) > 1:
        raise CheckpointError(f"{path}: expected one Transformer and one Pooling module, got {types}")
    if types.index(TRANSFORMER) > types.index(POOLING) or (NORMALIZE in types and types.index(NORMALIZE) < types.index(POOLING)):
        raise CheckpointError(f"{path}: modules are in an unsupported order {types}")
    pooling_module = modules[types.index(POOLING)]
    return SentencePooling(_pooling_mode(root, pooling_module, path), NORMALIZE in types)


def _pooling_mode(root: Path, module: dict, modules_path: Path) -> str:
    folder = module.get("path")
    if not isinstance(folder, str) or not folder or Path(folder).is_absolute() or ".." in Path(folder).parts:
        raise CheckpointError(f"{modules_path}: Pooling module path {folder!r} is not a folder inside the checkpoint")
    path = root / folder / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{path}: Pooling config is missing")
    config = load_json_file(path, CheckpointError)
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    if config.get("pooling_mode"):  # newer sentence-transformers write the mode by name as well
        named = {"cls": "cls", "mean": "mean", "max": "max"}.get(str(config["pooling_mode"]))
        if named is None:
            raise CheckpointError(f"{path}: pooling_mode {config['pooling_mode']!r} is not supported (cls, mean, max)")
    chosen = [mode for key, mode in POOLING_KEYS.items() if config.get(key) is True]
    extra = [key for key in UNSUPPORTED_POOLING_KEYS if config.get(key) is True]
    if extra:
        raise CheckpointError(f"{path}: {extra[0]} is not supported (cls, mean or max pooling only)")
    if len(chosen) != 1:
        raise CheckpointError(f"{path}: expected exactly one of {', '.join(POOLING_KEYS)} to be true, got {chosen or 'none'}")
    if config.get("include_prompt") is False:
        raise CheckpointError(f"{path}: include_prompt=false is not supported")
    return chosen[0]
