"""``load_checkpoint``: one entry point that recognises the checkpoint format from the path."""

from __future__ import annotations

import os
from pathlib import Path

from albert_edge.errors import CheckpointError
from albert_edge.inputs.path_kind import already_a_model, model_file_kind, not_found
from albert_edge.model.config import AlbertConfig
from albert_edge.model.hf import read_hf_checkpoint, resolve_hf_files
from albert_edge.model.tf1 import read_tf1_checkpoint, resolve_tf1_prefix
from albert_edge.model.weights import AlbertWeights


def checkpoint_format(path: str | os.PathLike[str]) -> str:
    """"tf1" or "hf" for a checkpoint path, or CheckpointError naming it."""
    path = Path(path)
    if not path.exists() and not Path(f"{path}.index").exists():
        raise CheckpointError(not_found(path, "checkpoint not found"))
    hf_files = resolve_hf_files(path)
    if hf_files is not None:
        if path.is_dir():
            _refuse_mixed_directory(path, hf_files[1])
        return "hf"
    if resolve_tf1_prefix(path) is not None:
        return "tf1"
    kind = model_file_kind(path)
    if kind is not None:
        raise CheckpointError(already_a_model(path, kind))
    raise CheckpointError(f"{path}: unknown checkpoint format (expected a TF1 prefix/directory with a .index file, "
                          "or a Hugging Face directory with config.json and model.safetensors or pytorch_model.bin)")


def _refuse_mixed_directory(directory: Path, hf_weights: Path) -> None:
    """A folder with both a TF1 and a Hugging Face checkpoint is ambiguous, like one with two TF1 ones:
    reading either silently could convert the wrong model, so the user must name one."""
    tf1 = sorted(p.name for p in directory.glob("*.index") if p.is_file())
    if tf1:
        raise CheckpointError(f"{directory}: holds a TF1 checkpoint ({', '.join(tf1[:4])}) and a Hugging Face "
                              f"checkpoint ({hf_weights.name}); pass the TF1 prefix or the Hugging Face weights "
                              "file instead of the folder")


def load_checkpoint(path: str | os.PathLike[str],
                    config: AlbertConfig | str | os.PathLike[str] | None = None,
                    verify_checksums: bool = True) -> AlbertWeights:
    """Read any supported checkpoint into canonical weights.

    ``path``: a TF1 prefix, one of its files, its directory or ``checkpoint`` state file; or a Hugging
    Face directory / weights file. ``config``: an AlbertConfig or config path overriding the one found
    beside the checkpoint (albert_config*.json / bert_config.json for TF1, config.json for HF).
    ``verify_checksums`` False reads a TF1 checkpoint without TensorFlow and without checking its data
    shard's CRC (``inspect``); Hugging Face files carry no checksum, so it changes nothing for them.
    """
    if checkpoint_format(path) == "hf":
        return read_hf_checkpoint(path, config)
    return read_tf1_checkpoint(path, config, verify_checksums)
