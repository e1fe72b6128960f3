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
from albert_edge.inputs.jsonfile import load_json_file

MODULES_FILE = "modules.json"
#: The pooling modes we export; sentence-transformers names more (``mean_sqrt_len_tokens``, ...).
SUPPORTED_MODES = ("cls", "mean", "max")
#: The boolean keys older sentence-transformers write, and the mode each names (its own table).
LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max", "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


def module_kind(type_name: str) -> str:
    """"Transformer", "Pooling", "Normalize" or the type as written.

    sentence-transformers before v6 write ``sentence_transformers.models.Pooling``; v6 writes the class's
    real module (``sentence_transformers.sentence_transformer.modules.pooling.Pooling``,
    ``sentence_transformers.base.modules.transformer.Transformer``). Both name the same class.
    """
    module, _, name = type_name.rpartition(".")
    if module.startswith("sentence_transformers.") and name in ("Transformer", "Pooling", "Normalize"):
        return name
    return type_name


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
    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        # A folder, FIFO or dangling link named modules.json is not "no pipeline": refuse it by name.
        raise CheckpointError(f"{path}: is not a regular file")
    _inside(root, path, path)
    modules = load_json_file(path, CheckpointError)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise CheckpointError(f"{path}: expected a JSON list of module objects")
    written = [str(m.get("type", "")) for m in modules]
    types = [module_kind(t) for t in written]
    unknown = [w for w, t in zip(written, types) if t not in ("Transformer", "Pooling", "Normalize")]
    if unknown:
        raise CheckpointError(f"{path}: module {unknown[0]!r} is not supported (only Transformer, Pooling, Normalize)")
    if types.count("Pooling") != 1 or types.count("Transformer") != 1 or types.count("Normalize") > 1:
        raise CheckpointError(f"{path}: expected one Transformer and one Pooling module, got {written}")
    if types.index("Transformer") > types.index("Pooling") or (
            "Normalize" in types and types.index("Normalize") < types.index("Pooling")):
        raise CheckpointError(f"{path}: modules are in an unsupported order {written}")
    pooling_module = modules[types.index("Pooling")]
    return SentencePooling(_pooling_mode(root, pooling_module, path), "Normalize" in types)


SENTENCE_BERT_CONFIG = "sentence_bert_config.json"


@dataclass(frozen=True)
class SentenceBertConfig:
    """``sentence_bert_config.json``: the Transformer module's ``max_seq_length`` (the length
    sentence-transformers truncates to) and ``do_lower_case`` (it lowercases texts before the
    tokenizer when true). None where the file does not say (or there is no file)."""

    max_seq_length: int | None = None
    do_lower_case: bool | None = None


def read_sentence_bert_config(checkpoint: str | os.PathLike[str]) -> SentenceBertConfig:
    """The folder's ``sentence_bert_config.json`` read as untrusted input (one line naming a bad field);
    an empty SentenceBertConfig when the folder is not a sentence-transformers folder or has none."""
    path = Path(checkpoint)
    root = path if path.is_dir() else path.parent
    path = root / SENTENCE_BERT_CONFIG
    if not (root / MODULES_FILE).is_file() or (not path.exists() and not path.is_symlink()):
        return SentenceBertConfig()
    if not path.is_file():
        raise CheckpointError(f"{path}: is not a regular file")
    _inside(root, path, path)
    data = load_json_file(path, CheckpointError)
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    length, lower = data.get("max_seq_length"), data.get("do_lower_case")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 2):
        raise CheckpointError(f"{path}: max_seq_length {length!r} should be an integer of at least 2")
    if lower is not None and not isinstance(lower, bool):
        raise CheckpointError(f"{path}: do_lower_case {lower!r} should be true or false")
    return SentenceBertConfig(length, lower)


def _inside(root: Path, path: Path, named: Path) -> None:
    """Refuse a file whose real location (links followed) is outside the checkpoint folder."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        raise CheckpointError(f"{named}: leads outside the checkpoint folder {root} (a symlink?)") from None


def _pooling_mode(root: Path, module: dict, modules_path: Path) -> str:
    folder = module.get("path")
    if not isinstance(folder, str) or not folder or Path(folder).is_absolute() or ".." in Path(folder).parts:
        raise CheckpointError(f"{modules_path}: Pooling module path {folder!r} is not a folder inside the checkpoint")
    path = root / folder / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{path}: Pooling config is missing")
    _inside(root, path, path)
    config = load_json_file(path, CheckpointError)
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    modes = _modes(config, path)
    if len(modes) != 1:
        raise CheckpointError(f"{path}: concatenates {len(modes)} poolings {list(modes)}; one of "
                              f"{', '.join(SUPPORTED_MODES)} is supported")
    if modes[0] not in SUPPORTED_MODES:
        raise CheckpointError(f"{path}: pooling mode {modes[0]!r} is not supported ({', '.join(SUPPORTED_MODES)})")
    if config.get("include_prompt") is False:
        raise CheckpointError(f"{path}: include_prompt=false is not supported")
    return str(modes[0])


def _modes(config: dict, path: Path) -> tuple[object, ...]:
    """The pooling modes exactly as sentence-transformers reads this config.

    ``pooling_mode`` (a name or a list of names), when the key is present, wins and the legacy booleans
    are ignored; otherwise every truthy ``pooling_mode_*`` boolean names a mode, and none means "mean"
    (``_convert_legacy_pooling_kwargs`` in sentence-transformers 6; v2-v5 also let the name win).
    """
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        if isinstance(mode, str):
            return (mode,)
        if isinstance(mode, list) and mode and all(isinstance(m, str) for m in mode):
            return tuple(mode)
        raise CheckpointError(f"{path}: pooling_mode {mode!r} is not a mode name or a list of them")
    return tuple(mode for key, mode in LEGACY_POOLING_KEYS.items() if config.get(key)) or ("mean",)
