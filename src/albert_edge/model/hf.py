"""Hugging Face ALBERT/BERT checkpoints: a directory with config.json and model.safetensors
(numpy API, no torch) or pytorch_model.bin (torch, ``weights_only=True``), either possibly sharded
with a ``*.index.json`` weight map; read and write (unsharded).

Hugging Face ALBERT always adds position/type embeddings at width E and projects afterwards, and
is post-LN; weights computed any other way (brightmart order, pre-LN) are refused on write rather
than silently exported as a different model.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from albert_edge.outputs.atomic import atomic_path, ensure_writable_dir, write_text_atomic
from albert_edge.errors import CheckpointError, ConfigError
from albert_edge.model.config import AlbertConfig, hf_config_dict, load_config
from albert_edge.model.dtypes import float32_weight
from albert_edge.model.hf_families import prepare_family, scheme_of
from albert_edge.model.names import (HF_ALBERT, HF_BERT, HF_DISTILBERT, HF_MODEL_PREFIX, IGNORED_HF, apply_transform,
                                     map_to_canonical, name_map)
from albert_edge.model.shard_index import read_shard_index
from albert_edge.model.weights import AlbertWeights, block_prefix, block_shapes
from albert_edge.outputs.output_set import clean_leftovers

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json",
                "pytorch_model.bin", "pytorch_model.bin.index.json")
_OLD_LAYER_NORM = re.compile(r"LayerNorm\.(gamma|beta)$")


def resolve_hf_files(path: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """(config.json, weights file) for a HF directory or weights file, or None if ``path`` is neither."""
    path = Path(path)
    if path.is_dir():
        weights = next((path / name for name in WEIGHT_FILES if (path / name).is_file()), None)
        if weights is None:
            return None
        return path / "config.json", weights
    if path.is_file() and (path.suffix in (".safetensors", ".bin") or path.name.endswith(".index.json")):
        return path.parent / "config.json", path
    return None


def _load_weights_file(path: Path) -> dict[str, np.ndarray]:
    """All tensors of a weights file, or of every shard a ``*.index.json`` weight map names."""
    if not path.name.endswith(".index.json"):
        return _load_safetensors(path) if path.suffix == ".safetensors" else _load_torch_bin(path)
    index = read_shard_index(path)
    tensors: dict[str, np.ndarray] = {}
    for shard in index.shards:
        part = _load_safetensors(shard) if shard.suffix == ".safetensors" else _load_torch_bin(shard)
        expected = index.expected_names(shard)
        stray = sorted(set(part) - expected)
        if stray:
            raise CheckpointError(f"{shard}: holds tensor {stray[0]} that {path.name} does not place in this shard")
        tensors.update(part)
    missing = sorted(set(index.weight_map) - set(tensors))
    if missing:
        raise CheckpointError(f"{path}: tensor {missing[0]} is not in its shard {index.weight_map[missing[0]]}")
    return tensors


def _load_safetensors(path: Path) -> dict[str, np.ndarray]:
    try:
        from safetensors import SafetensorError
        from safetensors.numpy import load_file
    except ImportError:
        raise CheckpointError(f"{path}: reading safetensors needs the safetensors package") from None
    try:
        return load_file(str(path))
    except TypeError as exc:
        if "bfloat16" not in str(exc):
            raise CheckpointError(f"{path}: unreadable safetensors file ({str(exc).splitlines()[0]})") from None
    except (SafetensorError, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(f"{path}: unreadable safetensors file ({reason})") from None
    return _load_bfloat16_safetensors(path)


def _load_bfloat16_safetensors(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file holding bfloat16, which numpy (and so safetensors.numpy) cannot represent:
    read through torch when it is installed, floating tensors widened to float32 (exact for bf16)."""
    try:
        import torch  # noqa: F401  (safetensors.torch needs it)
        from safetensors import SafetensorError
        from safetensors.torch import load_file
    except ImportError:
        raise CheckpointError(f"{path}: holds bfloat16 tensors, which need torch to read "
                              "(pip install torch==2.13.0), or save the weights as float32") from None
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError, TypeError, RuntimeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CheckpointError(f"{path}: unreadable safetensors file ({reason})") from None
    return {name: value.float().numpy() if value.is_floating_point() else value.numpy()
            for name, value in state.items()}


def _load_torch_bin(path: Path) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError:
        raise CheckpointError(f"{path}: reading pytorch_model.bin needs torch (pip install torch==2.13.0), "
                              "or convert it to model.safetensors") from None
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols on stderr: one line only
            warnings.simplefilter("ignore")
            state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises RuntimeError, UnpicklingError, EOFError, zipfile errors ...
        raise CheckpointError(f"{path}: unreadable pytorch_model.bin ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: pytorch_model.bin does not hold a state dict")
    # Floating tensors become float32 (numpy has no bfloat16); others keep their dtype, so buffers
    # (position_ids) stay ignorable and an int tensor in a weight slot is refused by name, not cast.
    tensors = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor):
            continue
        if not isinstance(name, str):
            raise CheckpointError(f"{path}: state dict key {name!r} is not a parameter name")
        try:
            value = value.detach()
            tensors[name] = value.to(torch.float32).numpy() if value.is_floating_point() else value.numpy()
        except (TypeError, RuntimeError) as exc:  # quantized, sparse or meta tensors have no numpy form
            raise CheckpointError(f"{path}: variable {name} ({str(value.dtype).replace('torch.', '')}, "
                                  f"{value.layout}) cannot be read as an array ({str(exc).splitlines()[0]})") from None
    return tensors


def _normalise_names(raw: dict[str, np.ndarray], scheme_prefix: tuple[str, ...]) -> dict[str, tuple[str, np.ndarray]]:
    """Strip the ``albert.``/``bert.`` model prefix and rename old ``LayerNorm.gamma/beta``;
    maps normalised name -> (original name, array)."""
    out: dict[str, tuple[str, np.ndarray]] = {}
    for original, array in raw.items():
        name = original
        for prefix in scheme_prefix:
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        name = _OLD_LAYER_NORM.sub(lambda m: "LayerNorm." + ("weight" if m.group(1) == "gamma" else "bias"), name)
        out[name] = (original, array)
    return out


def detect_hf_scheme(names: list[str], source: str) -> str:
    """The encoder layout of (prefix-stripped) parameter names: hf-albert, hf-bert (also ELECTRA and
    RoBERTa's) or hf-distilbert."""
    if any(name.startswith("encoder.albert_layer_groups.") for name in names):
        return HF_ALBERT
    if any(name.startswith("encoder.layer.") for name in names):
        return HF_BERT
    if any(name.startswith("transformer.layer.") for name in names):
        return HF_DISTILBERT
    raise CheckpointError(f"{source}: no ALBERT/BERT encoder parameters (expected encoder.albert_layer_groups.*, "
                          "encoder.layer.* or DistilBERT's transformer.layer.*)")


def _unused_group_rule(config: AlbertConfig) -> Callable[[str], bool]:
    """HF stores every one of num_hidden_groups; groups no layer reaches are unused, not unmapped.
    MobileBERT with use_bottleneck_attention keeps its key/query bottleneck, which then reads nothing."""
    used = set(config.used_groups())
    idle_bottleneck = bool(config.mobilebert and config.mobilebert.use_bottleneck_attention)

    def unused(name: str) -> bool:
        if idle_bottleneck and re.match(r"encoder\.layer\.\d+\.bottleneck\.attention\.", name):
            return True
        match = re.match(r"encoder\.albert_layer_groups\.(\d+)\.", name)
        return bool(match) and int(match.group(1)) not in used

    return unused


def read_hf_checkpoint(path: str | os.PathLike[str],
                       config: AlbertConfig | str | os.PathLike[str] | None = None) -> AlbertWeights:
    """Read a Hugging Face ALBERT or BERT checkpoint into canonical weights."""
    files = resolve_hf_files(path)
    if files is None:
        raise CheckpointError(f"{path}: no model.safetensors or pytorch_model.bin")
    config_path, weights_path = files
    if not isinstance(config, AlbertConfig):
        if config is None and not config_path.is_file():
            raise ConfigError(f"{config_path}: config.json not found beside {weights_path.name}")
        config = load_config(config if config is not None else config_path)
    source = str(weights_path)
    raw = _load_weights_file(weights_path)
    named = _normalise_names(raw, tuple(HF_MODEL_PREFIX.values()))
    scheme = scheme_of(config, detect_hf_scheme(list(named), source), source)
    named = prepare_family(named, config, scheme, source)
    shapes = {name: tuple(array.shape) for name, (_, array) in named.items()}
    tensors, num_labels, ignored = map_to_canonical(
        config, scheme, shapes, lambda name: float32_weight(named[name][1], named[name][0], source), source, IGNORED_HF,
        also_ignored=_unused_group_rule(config))
    return AlbertWeights(config=config, tensors=tensors, scheme=scheme, num_labels=num_labels,
                         ignored=tuple(named[name][0] for name in ignored), source=source)


def _hf_tensors(weights: AlbertWeights) -> dict[str, np.ndarray]:
    """Canonical -> HF state-dict arrays (prefixed, torch orientation)."""
    cfg = weights.config
    tensors = dict(weights.tensors)
    if cfg.model_type == "albert" and cfg.embedding_order == "no_projection":
        # HF ALBERT always has the E->H mapping; identity + zero bias is the same function.
        tensors["embeddings.projection.kernel"] = np.eye(cfg.hidden_size, dtype=np.float32)
        tensors["embeddings.projection.bias"] = np.zeros(cfg.hidden_size, dtype=np.float32)
    if cfg.model_type == "albert":
        # HF instantiates every group; ones no layer uses get zeros (they never affect the output).
        for group in sorted(set(range(cfg.num_hidden_groups)) - set(cfg.used_groups())):
            for inner in range(cfg.inner_group_num):
                for key, shape in block_shapes(cfg).items():
                    tensors[block_prefix(group, inner) + key] = np.zeros(shape, dtype=np.float32)
    scheme = HF_ALBERT if cfg.model_type == "albert" else HF_BERT
    mapping = name_map(list(tensors), scheme)
    prefix = HF_MODEL_PREFIX[scheme]
    out: dict[str, np.ndarray] = {}
    for canonical, array in tensors.items():
        name, transform = mapping[canonical]
        full = name if name.startswith(("classifier.", "qa_outputs.")) else prefix + name
        out[full] = np.ascontiguousarray(apply_transform(array, transform), dtype=np.float32)
    return out


def write_hf_checkpoint(weights: AlbertWeights, directory: str | os.PathLike[str], fmt: str = "safetensors") -> Path:
    """Write ``config.json`` and ``model.safetensors`` (fmt="safetensors") or ``pytorch_model.bin``
    (fmt="bin") that transformers' ``from_pretrained`` loads without missing or unexpected keys."""
    cfg = weights.config
    if fmt not in ("safetensors", "bin"):
        raise ConfigError(f"unknown Hugging Face weights format {fmt!r}, expected safetensors or bin")
    if cfg.model_type not in ("albert", "bert"):
        raise ConfigError(f"cannot write {weights.source} as a Hugging Face checkpoint: writing is for albert and "
                          f"bert, this is {cfg.model_type}")
    if cfg.ln_type != "postln":
        raise ConfigError(f"cannot write {weights.source} as Hugging Face {cfg.model_type}: it is post-LN only")
    if cfg.embedding_order == "project_then_add":
        raise ConfigError(f"cannot write {weights.source} as Hugging Face albert: it adds position/type embeddings "
                          "before the projection (add_then_project), these weights project first")
    state = _hf_tensors(weights)
    target = ensure_writable_dir(directory)
    clean_leftovers(target)  # what a killed earlier writer left here
    if fmt == "safetensors":
        from safetensors.numpy import save_file

        with atomic_path(target / "model.safetensors") as tmp:
            save_file(state, str(tmp), metadata={"format": "pt"})
    else:
        try:
            import torch
        except ImportError:
            raise CheckpointError("writing pytorch_model.bin needs torch (pip install torch==2.13.0)") from None
        with atomic_path(target / "pytorch_model.bin") as tmp:
            torch.save({name: torch.from_numpy(array) for name, array in state.items()}, str(tmp))
    if weights.has_span_head:
        head, width = "QuestionAnswering", 2
    else:
        head = "SequenceClassification" if weights.has_pooler else "TokenClassification"
        width = weights.num_labels
    write_text_atomic(target / "config.json", json.dumps(hf_config_dict(cfg, width, head), indent=2) + "\n")
    return target
