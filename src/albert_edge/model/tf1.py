"""TF1 name-based checkpoints (``prefix.index`` + ``prefix.data-00000-of-00001``): read and write.

Three namings are understood, detected from the variable names (see names.TABLE):
Google ALBERT (``bert/encoder/transformer/group_0/inner_group_0/...``), brightmart albert_zh
(``bert/encoder/layer_shared/...``, ``word_embeddings_2``) and Google BERT (``bert/encoder/layer_0/...``).
The embedding order comes from the names too (``embedding_hidden_mapping_in`` vs ``word_embeddings_2``);
pre-LN cannot be seen in the names (brightmart's pre-LN reuses the post-LN variable names), so it
comes from the config's ``ln_type``.

TensorFlow is imported only inside these functions: the runtime and the reference never need it.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from albert_edge.outputs.atomic import ensure_writable_dir, write_text_atomic
from albert_edge.errors import CheckpointError, ConfigError
from albert_edge.model.config import AlbertConfig, load_config, tf1_config_dict
from albert_edge.model.names import (
    BERT_TF1,
    BRIGHTMART,
    GOOGLE,
    IGNORED_TF1,
    apply_transform,
    map_to_canonical,
    name_map,
)
from albert_edge.model.tensor_bundle import read_index, read_tensor
from albert_edge.model.weights import AlbertWeights
from albert_edge.outputs.output_set import clean_leftovers
from albert_edge.inputs.userfile import read_user_bytes

WRITE_SCHEMES = {"google": GOOGLE, "brightmart": BRIGHTMART, "bert": BERT_TF1}
_DATA_SHARD = re.compile(r"\.data-\d{5}-of-\d{5}$")
# What TF's checkpoint reader raises for truncated or corrupt files, besides tf.errors.OpError
# (a short .data shard surfaces as IndexError "Read less bytes than requested").
_READ_ERRORS = (ValueError, OSError, IndexError, RuntimeError)


def _tf():
    """Import TensorFlow on first use, quietly, or explain how to get it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError:
        raise CheckpointError("TF1 checkpoints need tensorflow: pip install 'albert-edge[convert]'") from None
    return tf


def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _prefix_from_state_file(state: Path) -> Path:
    """The checkpoint a TF ``checkpoint`` state file points at (absolute paths from the training machine
    are looked up beside the state file)."""
    try:
        # A real state file is a few hundred bytes; 1 MB bounds a hostile one.
        text = read_user_bytes(state, 1 << 20, CheckpointError, "checkpoint state file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{state}: unreadable checkpoint state file ({exc})") from None
    match = re.search(r'^model_checkpoint_path:\s*"([^"]+)"', text, re.MULTILINE)
    if not match:
        raise CheckpointError(f"{state}: no model_checkpoint_path in checkpoint state file")
    named = Path(match.group(1))
    for candidate in (named if named.is_absolute() else state.parent / named, state.parent / named.name):
        if Path(f"{candidate}.index").is_file():
            return candidate
    raise CheckpointError(f"{state}: names checkpoint {match.group(1)} "
                          f"but {state.parent / named.name}.index is missing")


def resolve_tf1_prefix(path: str | os.PathLike[str]) -> Path | None:
    """The TF1 checkpoint prefix ``path`` refers to (a directory, the state file, a prefix, or one of
    its files), or None if it is not a TF1 checkpoint."""
    path = Path(path)
    if path.is_dir():
        if (path / "checkpoint").is_file():
            return _prefix_from_state_file(path / "checkpoint")
        indexes = sorted(path.glob("*.index"))
        if len(indexes) > 1:
            raise CheckpointError(f"{path}: several TF1 checkpoints ({', '.join(p.name for p in indexes[:4])}); "
                                  "pass the prefix of one")
        return indexes[0].with_suffix("") if indexes else None
    if path.name == "checkpoint" and path.is_file():
        return _prefix_from_state_file(path)
    if path.suffix in (".index", ".meta"):
        return path.with_suffix("")
    if _DATA_SHARD.search(path.name):
        return path.with_name(_DATA_SHARD.sub("", path.name))
    if Path(f"{path}.index").is_file():
        return path
    return None


def find_tf1_config(prefix: Path) -> Path:
    """The config JSON shipped beside a TF1 checkpoint (albert_config.json, bert_config.json, or the one
    ``*config*.json`` such as brightmart's albert_config_tiny.json)."""
    directory = prefix.parent
    for name in ("albert_config.json", "bert_config.json"):
        if (directory / name).is_file():
            return directory / name
    candidates = sorted(p for p in directory.glob("*config*.json") if p.is_file())
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ConfigError(f"{directory}: no albert_config.json or bert_config.json beside checkpoint {prefix.name}")
    raise ConfigError(f"{directory}: several config files ({', '.join(p.name for p in candidates)}); "
                      "pass the right one explicitly")


def detect_tf1_scheme(names: list[str], source: str) -> str:
    """Which TF1 naming a checkpoint uses, from its variable names."""
    if any(name.startswith("bert/encoder/transformer/") for name in names):
        return GOOGLE
    if any(name.startswith("bert/encoder/layer_shared/") for name in names):
        return BRIGHTMART
    if any(re.match(r"bert/encoder/layer_\d+/", name) for name in names):
        return BERT_TF1
    raise CheckpointError(f"{source}: no ALBERT/BERT encoder variables (expected bert/encoder/transformer/..., "
                          "bert/encoder/layer_shared/... or bert/encoder/layer_0/...)")


def _config_for_scheme(config: AlbertConfig, scheme: str, names: set[str], source: str) -> AlbertConfig:
    """Correct what the config file cannot say reliably (embedding order, grouping) from the names."""
    if scheme == GOOGLE:
        order = "add_then_project" if "bert/encoder/embedding_hidden_mapping_in/kernel" in names else "no_projection"
        changes = dict(embedding_order=order, model_type="albert")
    elif scheme == BRIGHTMART:
        order = "project_then_add" if "bert/embeddings/word_embeddings_2" in names else "no_projection"
        changes = dict(embedding_order=order, model_type="albert", num_hidden_groups=1, inner_group_num=1)
    else:
        changes = dict(embedding_order="no_projection", model_type="bert", embedding_size=config.hidden_size,
                       num_hidden_groups=config.num_hidden_layers, inner_group_num=1)
    try:
        return config.with_changes(**changes)
    except ConfigError as exc:
        raise ConfigError(f"{source}: config does not fit the {scheme} variables: {exc}") from None


def _tensorflow_reader(source: str) -> tuple[dict[str, tuple[int, ...]], Callable[[str], np.ndarray]]:
    """Shapes and a value reader from TensorFlow's checkpoint reader (which verifies data checksums)."""
    tf = _tf()
    try:
        reader = tf.train.load_checkpoint(source)
        shapes = {name: tuple(int(d) for d in shape) for name, shape in reader.get_variable_to_shape_map().items()}
    except (tf.errors.OpError, *_READ_ERRORS) as exc:
        raise CheckpointError(f"{source}: unreadable TF1 checkpoint ({_first_line(exc)})") from None

    def fetch(name: str) -> np.ndarray:
        try:
            return reader.get_tensor(name)
        except (tf.errors.OpError, *_READ_ERRORS) as exc:
            raise CheckpointError(f"{source}: cannot read variable {name} ({_first_line(exc)})") from None

    return shapes, fetch


def _bundle_reader(source: str) -> tuple[dict[str, tuple[int, ...]], Callable[[str], np.ndarray]]:
    """Shapes and a value reader from the TensorBundle files themselves: no TensorFlow import."""
    shards, entries = read_index(f"{source}.index")
    return ({name: entry.shape for name, entry in entries.items()},
            lambda name: read_tensor(source, shards, name, entries[name]))


def verify_tf1_checksums(path: str | os.PathLike[str]) -> None:
    """Read every variable of a TF1 checkpoint with TensorFlow's reader, which checks each one's CRC-32C
    against the ``.index``: a damaged ``.data`` shard is one CheckpointError line naming the checkpoint.

    Why: ``read_tf1_checkpoint(..., verify_checksums=False)`` skips this check to avoid importing TensorFlow
    (5-40 s); a process that imports TensorFlow anyway (quantize's converter child) runs it beside the read.
    """
    prefix = resolve_tf1_prefix(path)
    if prefix is None:
        raise CheckpointError(f"{path}: not a TF1 checkpoint (no .index file)")
    shapes, fetch = _tensorflow_reader(str(prefix))
    for name in shapes:
        fetch(name)


def read_tf1_checkpoint(path: str | os.PathLike[str],
                        config: AlbertConfig | str | os.PathLike[str] | None = None,
                        verify_checksums: bool = True) -> AlbertWeights:
    """Read a TF1 checkpoint (any of the three namings) into canonical weights.

    ``verify_checksums`` False reads the files without TensorFlow (seconds instead of a 40 s import) but
    skips the data shard's CRC-32C: for ``inspect``, which reports structure; converting keeps the check.
    """
    prefix = resolve_tf1_prefix(path)
    if prefix is None:
        raise CheckpointError(f"{path}: not a TF1 checkpoint (no .index file)")
    if not Path(f"{prefix}.index").is_file():
        raise CheckpointError(f"{prefix}.index: TF1 checkpoint index not found")
    if not isinstance(config, AlbertConfig):
        config = load_config(config if config is not None else find_tf1_config(prefix))
    source = str(prefix)
    shapes, fetch = (_tensorflow_reader if verify_checksums else _bundle_reader)(source)
    scheme = detect_tf1_scheme(list(shapes), source)
    config = _config_for_scheme(config, scheme, set(shapes), source)
    tensors, num_labels, ignored = map_to_canonical(config, scheme, shapes, fetch, source, IGNORED_TF1)
    return AlbertWeights(config=config, tensors=tensors, scheme=scheme, num_labels=num_labels,
                         ignored=ignored, source=source)


def _check_writable_as(weights: AlbertWeights, scheme: str) -> None:
    """Refuse to write weights under a naming whose training code would compute something else."""
    cfg = weights.config
    problem = None
    if scheme == GOOGLE:
        if cfg.ln_type != "postln":
            problem = "Google ALBERT code is post-LN only"
        elif cfg.embedding_order == "project_then_add":
            problem = "Google ALBERT adds position/type embeddings before the projection (add_then_project)"
    elif scheme == BRIGHTMART:
        if cfg.embedding_order != "project_then_add":
            problem = "brightmart albert_zh projects word embeddings first (project_then_add)"
        elif cfg.num_hidden_groups != 1 or cfg.inner_group_num != 1:
            problem = "brightmart albert_zh shares one block (layer_shared) across all layers"
    elif scheme == BERT_TF1:
        if cfg.embedding_order != "no_projection" or cfg.inner_group_num != 1 \
                or cfg.num_hidden_groups != cfg.num_hidden_layers or cfg.ln_type != "postln":
            problem = "TF1 BERT has no embedding projection, one post-LN block per layer"
    if problem:
        raise ConfigError(f"cannot write {weights.source} as a {scheme} checkpoint: {problem}")


def write_tf1_checkpoint(weights: AlbertWeights, prefix: str | os.PathLike[str], scheme: str = "brightmart",
                         extra_tensors: dict[str, np.ndarray] | None = None) -> Path:
    """Write a genuine TF1 name-based checkpoint with the exact variable names of ``scheme``
    (google | brightmart | bert), plus the ``checkpoint`` state file and the config JSON of that dialect.

    ``extra_tensors`` are stored under their own TF1 names beside the model (e.g. the
    ``cls/predictions/`` MLM head of a pre-training checkpoint, which readers ignore).

    Returns the prefix. The files appear under their final names only once complete.
    """
    if scheme not in WRITE_SCHEMES:
        raise ConfigError(f"unknown TF1 scheme {scheme!r}, expected one of {', '.join(WRITE_SCHEMES)}")
    scheme_id = WRITE_SCHEMES[scheme]
    _check_writable_as(weights, scheme_id)
    config_text = json.dumps(tf1_config_dict(weights.config, scheme), indent=2, sort_keys=True) + "\n"
    prefix = Path(prefix)
    directory = ensure_writable_dir(prefix.parent if str(prefix.parent) else ".")
    mapping = name_map(list(weights.tensors), scheme_id)
    unnamed = sorted(set(weights.tensors) - set(mapping))
    if unnamed:
        raise ConfigError(f"cannot write {unnamed[0]} in the {scheme_id} naming")
    names = [mapping[c][0] for c in weights.tensors]
    arrays = [np.ascontiguousarray(apply_transform(weights.tensors[c], mapping[c][1]), dtype=np.float32)
              for c in weights.tensors]
    for name, array in sorted((extra_tensors or {}).items()):
        if name in names:
            raise ConfigError(f"extra tensor {name} collides with a model variable")
        names.append(name)
        arrays.append(np.ascontiguousarray(array, dtype=np.float32))
    tf = _tf()
    clean_leftovers(directory)  # what a killed earlier writer left here
    tmp = directory / f".{prefix.name}.p{os.getpid()}.partial-{uuid.uuid4().hex[:8]}"
    shard = ".data-00000-of-00001"
    try:
        tf.raw_ops.SaveV2(prefix=str(tmp), tensor_names=names, shape_and_slices=[""] * len(names),
                          tensors=[tf.constant(a) for a in arrays])
        os.replace(f"{tmp}.index", f"{prefix}.index")
        os.replace(f"{tmp}{shard}", f"{prefix}{shard}")
    except (tf.errors.OpError, OSError) as exc:
        raise CheckpointError(f"{prefix}: cannot write TF1 checkpoint ({_first_line(exc)})") from None
    finally:
        for leftover in directory.glob(f"{tmp.name}*"):
            leftover.unlink()
    write_text_atomic(directory / "checkpoint",
                      f'model_checkpoint_path: "{prefix.name}"\nall_model_checkpoint_paths: "{prefix.name}"\n')
    config_name = "bert_config.json" if scheme == "bert" else "albert_config.json"
    write_text_atomic(directory / config_name, config_text)
    return prefix
