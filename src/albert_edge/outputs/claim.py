"""Which files in an output folder albert-edge wrote, and the one rule that protects the others.

The rule, for every writer (convert, quantize, finetune, pretrain, bench, android-assets,
arm-check): **a run never replaces or deletes a file that albert-edge did not write, and never adds a
model beside one it did not write.** The folder may hold anything else (an app's assets folder
holds the app's own files). A run that would break the rule stops before writing anything:
one line naming the folder and the file, exit 2.

``OutputSet`` records every file it swaps in, with the command that wrote it, in a manifest
(``.albert-edge-outputs.json``) in that folder, so re-running a command into its own previous
output (or ``quantize`` into the folder ``convert`` wrote) keeps working. Files written before
the manifest existed are not recognised: the error says to remove them or choose a new folder.

The files one command recorded are that command's *set*: its next run into the folder replaces
exactly that set (``previous_set``), removing the files it does not write again, so a folder never
holds one run's model beside another run's report. A name may lie in a sub-folder
(``variants/model_int8.tflite``); a name that is a folder on disk is never replaced by a file.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path

from albert_edge.errors import AlbertEdgeError, OutputError

MANIFEST = ".albert-edge-outputs.json"
_FORMAT = "albert-edge outputs 1"

# What a model checkpoint of any kind albert-edge reads is made of: a checkpoint writer
# (finetune, pretrain) claims these names, so it is refused beside someone else's checkpoint
# instead of leaving the mixed kind that ``convert`` refuses.
CHECKPOINT_FILES = ("*.ckpt*", "checkpoint", "*config.json", "*.safetensors", "*.safetensors.index.json",
                    "*.bin", "*.bin.index.json", "vocab.txt", "spiece.model", "*.vocab", "tokenizer.json",
                    "tokenizer_config.json", "special_tokens_map.json", "labels.txt")


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, str]:
    """``{file name: writing command}`` of the files albert-edge wrote into ``directory``.

    A missing, unreadable or foreign manifest counts as empty: then nothing here is ours, which
    can only make a run refuse, never overwrite.
    """
    from albert_edge.inputs.jsonfile import load_json_file

    path = Path(directory) / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = load_json_file(path, AlbertEdgeError)
    except AlbertEdgeError:
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("format") == _FORMAT else None
    if not isinstance(files, dict):
        return {}
    return {name: writer for name, writer in files.items() if isinstance(name, str) and isinstance(writer, str)}


def manifest_text(files: dict[str, str]) -> str:
    """The manifest file's text for ``files`` (sorted, so reruns write identical bytes)."""
    import json

    return json.dumps({"format": _FORMAT, "files": dict(sorted(files.items()))}, indent=1, ensure_ascii=False) + "\n"


def previous_set(manifest: dict[str, str], writer: str) -> list[str]:
    """The names the last run of ``writer`` recorded in ``manifest`` (the set its next run replaces)."""
    return sorted(name for name, owner in manifest.items() if owner == writer and safe_name(name))


def safe_name(name: str) -> bool:
    """True for a relative POSIX path inside the folder (``a.tflite``, ``variants/a.tflite``): no
    ``..``, no absolute path, no empty or hidden part. A manifest or journal is never trusted beyond that."""
    parts = name.split("/")
    return bool(name) and "\\" not in name and all(part and part not in (".", "..") and not part.startswith(".")
                                                    for part in parts)


def _ours(directory: Path, name: str, manifest: dict[str, str]) -> bool:
    """A file albert-edge wrote here, or a folder holding albert-edge's own manifest (e.g. ``over_budget/``)."""
    if name in manifest:
        return True
    entry = directory / name
    return entry.is_dir() and not entry.is_symlink() and (entry / MANIFEST).is_file()


def claim_output_dir(directory: str | os.PathLike[str], names: Iterable[str] = (),
                     patterns: Iterable[str] = (), removes: Iterable[str] = ()) -> None:
    """Raise OutputError unless a writer may put the files ``names`` into ``directory`` (replacing
    those there, never a folder), delete ``removes`` and own every entry matching ``patterns``
    (shell wildcards), by the rule above.

    Hidden entries (``.name``) are never claimed by a pattern: they are our staging folders and
    manifest, or the user's dotfiles that no writer touches.
    """
    directory = Path(directory)
    try:
        present = sorted(entry.name for entry in directory.iterdir())
    except OSError:
        return  # missing (created later) or unreadable (the write itself says so)
    manifest = read_manifest(directory)
    patterns = tuple(patterns)
    for name in dict.fromkeys(names):
        parent = Path(name).parent
        if parent != Path(".") and os.path.lexists(directory / parent) and not (
                (directory / parent).is_dir() and not (directory / parent).is_symlink()):
            raise OutputError(f"{directory / parent}: is not a folder, but this run writes {name} inside it; "
                              "nothing was written: move it away or choose a new --out folder")
        if name == MANIFEST or not os.path.lexists(directory / name):
            continue
        entry = directory / name
        if entry.is_dir() and not entry.is_symlink():
            raise OutputError(f"{entry}: is a folder; a run writes the file {name} only where no folder is, "
                              "so nothing was written: give a file path that is not a folder")
        if not _ours(directory, name, manifest):
            raise _refusal(directory, name)
    for name in dict.fromkeys(removes):
        if os.path.lexists(directory / name) and not _ours(directory, name, manifest):
            raise _refusal(directory, name)
    for name in present:
        if name.startswith(".") or _ours(directory, name, manifest):
            continue
        if any(fnmatch.fnmatch(name, pattern) for pattern in patterns):
            raise _refusal(directory, name)


def _refusal(directory: Path, name: str) -> OutputError:
    return OutputError(f"{directory}: holds {name}, which albert-edge did not write; this run would replace or "
                       "mix with it, so nothing was written: choose a new or empty --out folder, or move it away")
