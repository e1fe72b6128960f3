"""What a path a user typed is, judged from names and the first bytes only, so that an error can name the
next step instead of stopping one short.

A checkpoint folder given to ``predict`` used to be "not a regular file", a ``.tflite`` given to
``convert`` an "unknown checkpoint format", and a typo in a local path Hugging Face offline advice.
Each reader still decides what it accepts; these helpers only word the refusal: what the thing is,
and the command to run on it (``albert-edge convert ...``, ``albert-edge predict ...``).
"""

from __future__ import annotations

import difflib
import os
import shlex
from pathlib import Path

#: Files whose presence makes a folder a checkpoint (TF1, Hugging Face, sentence-transformers).
CHECKPOINT_FILES = ("checkpoint", "albert_config.json", "bert_config.json", "config.json", "model.safetensors",
                    "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
                    "modules.json")
#: Suffixes of one file of a checkpoint.
CHECKPOINT_SUFFIXES = (".index", ".safetensors", ".bin", ".ckpt")
_MODEL_SUFFIXES = {".tflite": "tflite", ".onnx": "onnx"}


def model_file_kind(path: str | os.PathLike[str]) -> str | None:
    """"tflite" or "onnx" for a path that names a model file (by its TFL3 identifier or its suffix), else None."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
        if len(head) == 8 and head[4:8] == b"TFL3":
            return "tflite"
    except OSError:
        pass
    return _MODEL_SUFFIXES.get(p.suffix.lower()) if p.is_file() else None


def is_checkpoint(path: str | os.PathLike[str]) -> bool:
    """True for a checkpoint folder, one of its files, or a TF1 prefix (``model.ckpt-1085``)."""
    p = Path(path)
    try:
        if p.is_dir():
            return any((p / name).is_file() for name in CHECKPOINT_FILES) or any(p.glob("*.index"))
        if Path(f"{p}.index").is_file():
            return True
        return p.is_file() and (p.suffix.lower() in CHECKPOINT_SUFFIXES or ".data-" in p.name)
    except OSError:
        return False


def closest_existing(path: str | os.PathLike[str]) -> Path | None:
    """The existing path nearest to a mistyped one: its deepest existing folder's closest entry by name."""
    p = Path(path)
    parent = p.parent
    missing = [p.name]
    while not parent.is_dir() and parent != parent.parent:
        missing.insert(0, parent.name)
        parent = parent.parent
    if not parent.is_dir():
        return None
    try:
        names = [entry.name for entry in parent.iterdir() if not entry.name.startswith(".")]
    except OSError:
        return None
    match = difflib.get_close_matches(missing[0], names, n=1, cutoff=0.75)
    return parent / match[0] if match else None


def not_found(path: str | os.PathLike[str], what: str = "no such file or folder") -> str:
    """``PATH: no such file or folder``, with the closest existing name when one is close."""
    near = closest_existing(path)
    return f"{path}: {what}" + (f" (did you mean {near}?)" if near is not None else "")


def is_local_looking(text: str) -> bool:
    """True for an argument that is meant as a local path: its first folder exists here (``examples/...``)."""
    first = Path(text).parts[0] if Path(text).parts else ""
    return "/" in text.replace(os.sep, "/") and bool(first) and Path(first).is_dir()


def convert_first(path: str | os.PathLike[str]) -> str:
    """The line for a checkpoint given where a model file is expected."""
    return (f"{path}: this is a checkpoint, not a model file; convert it first: "
            f"albert-edge convert {shlex.quote(str(path))} --out models")


def already_a_model(path: str | os.PathLike[str], kind: str) -> str:
    """The line for a model file given where a checkpoint is expected."""
    quoted = shlex.quote(str(path))
    named = {"tflite": "a TFLite", "onnx": "an ONNX"}.get(kind, f"a {kind}")
    return (f"{path}: this is already {named} model, not a checkpoint; run it with "
            f"albert-edge predict {quoted} TEXT, or look inside with albert-edge inspect {quoted}")


__all__ = ["CHECKPOINT_FILES", "already_a_model", "closest_existing", "convert_first", "is_checkpoint",
           "is_local_looking", "model_file_kind", "not_found"]
