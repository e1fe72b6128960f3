"""Hugging Face Hub ids and cache folders as checkpoint arguments (``albert-edge convert ORG/NAME``).

Every peer takes a Hub id (``optimum-cli export ... --model ID``, ``from_pretrained``), so a user coming
from them types one. ``resolve_checkpoint`` turns such an argument into a local folder before anything
else reads it:

- an existing path is returned as it is (a local folder always wins over an id of the same spelling);
- a cache repo folder (``.../models--ORG--NAME``) becomes its snapshot for ``refs/main`` (or the revision);
- ``ORG/NAME`` (or a bare legacy name such as ``bert-base-chinese``) goes to ``huggingface_hub``'s
  ``snapshot_download`` with allow-patterns for just the files albert-edge reads, so no TF/Flax/ONNX
  weights are fetched. ``HF_HOME`` / ``HF_HUB_CACHE`` and ``HF_HUB_OFFLINE`` are honoured by the
  library itself; offline, a cached snapshot is used and a missing one is one line saying so.

``huggingface_hub`` is the optional ``[hub]`` extra: without it an id is one line naming the install.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from albert_edge.errors import CheckpointError
from albert_edge.inputs.path_kind import closest_existing, is_local_looking, not_found

#: The files any reader of albert-edge looks at in a Hugging Face or sentence-transformers folder.
HUB_FILES: tuple[str, ...] = (
    "config.json", "model.safetensors", "model.safetensors.index.json", "model-*.safetensors",
    "pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*.bin",
    "vocab.txt", "spiece.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
    "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json",
    "1_Pooling/config.json", "2_Normalize/*",
)

# Hub repo ids: an optional namespace and a name, letters, digits, '-', '_', '.' (no '..', no leading '.').
_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
_CACHE_REPO = re.compile(r"^models--[^/]+$")


def looks_like_hub_id(text: str) -> bool:
    """True for ``ORG/NAME`` or ``NAME`` spelled as the Hub allows; never for ``./x``, ``/x``, ``~/x``."""
    return bool(_HUB_ID.match(text)) and ".." not in text and not text.endswith((".json", ".index", ".tflite", ".onnx"))


# A revision is a branch, tag or commit name (``main``, ``v1.0``, ``refs/pr/1``, a hash), never a path.
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*$")
_COMMIT_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_revision(revision: str | None) -> None:
    """Refuse a ``--revision`` that is not a ref name (empty, ``..``, an absolute or ``./`` path)
    before anything is read: it names a folder inside the cache, so a path would escape it."""
    if revision is None:
        return
    if not _REVISION.match(revision) or ".." in revision or len(revision) > 255:
        raise CheckpointError(f"--revision {revision!r}: expected a branch, tag or commit name (such as main, "
                              "v1.0 or a commit hash), not a path")


def _ref_commit(ref_file: Path, folder: Path) -> str:
    """The commit a cache ref file names, read as untrusted input: UTF-8, one folder name."""
    try:
        commit = ref_file.read_bytes()[:4096].decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (exc.strerror or str(exc))
        raise CheckpointError(f"{ref_file}: a Hugging Face cache ref that cannot be read ({why}); "
                              f"pass the snapshot folder under {folder / 'snapshots'} instead") from None
    if not _COMMIT_DIR.match(commit):
        raise CheckpointError(f"{ref_file}: a Hugging Face cache ref should hold a commit hash, not "
                              f"{commit[:60]!r}; pass the snapshot folder under {folder / 'snapshots'} instead")
    return commit


def cache_snapshot(folder: Path, revision: str | None = None) -> Path | None:
    """The snapshot folder of a Hugging Face cache repo folder (``models--ORG--NAME``), else None."""
    check_revision(revision)
    if not _CACHE_REPO.match(folder.name) or not (folder / "snapshots").is_dir():
        return None
    ref = revision or "main"
    ref_file = folder / "refs" / ref
    commit = _ref_commit(ref_file, folder) if ref_file.is_file() else ref
    snapshot = folder / "snapshots" / commit
    if "/" in commit or not snapshot.is_dir():
        raise CheckpointError(f"{folder}: a Hugging Face cache folder without a snapshot for {ref!r}; "
                              "pass the snapshot folder or --revision")
    return snapshot


def resolve_checkpoint(argument: str | os.PathLike[str], revision: str | None = None) -> Path:
    """A local path for a checkpoint argument: the path itself, a cache folder's snapshot, or a Hub download."""
    check_revision(revision)
    path = Path(argument)
    if path.exists() or Path(f"{path}.index").exists():
        snapshot = cache_snapshot(path, revision) if path.is_dir() else None
        if snapshot is None and revision is not None:
            raise CheckpointError(f"{path}: --revision {revision} is for a Hugging Face Hub id or cache folder "
                                  "(models--ORG--NAME); this is a local checkpoint, read as it is: drop --revision")
        return snapshot or path
    text = str(argument)
    if not looks_like_hub_id(text) or is_local_looking(text):
        # `examples/albert_tiny_zh_sentimnet` is a local typo, not a Hub id: say so, not offline advice.
        raise CheckpointError(not_found(path, "checkpoint not found"))
    try:
        return _download(text, revision)
    except CheckpointError as exc:
        near = closest_existing(path)
        if near is None:
            raise
        raise CheckpointError(f"{exc} (or did you mean the local {near}?)") from None


def _download(repo_id: str, revision: str | None) -> Path:
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import (
            HFValidationError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise CheckpointError(f"{repo_id}: no such file or folder; to read it as a Hugging Face Hub id, install the "
                              "hub extra: pip install 'albert-edge[hub]'") from None
    at = f" at revision {revision!r}" if revision else ""
    try:
        return Path(snapshot_download(repo_id, revision=revision, allow_patterns=list(HUB_FILES)))
    except LocalEntryNotFoundError:
        raise CheckpointError(f"{repo_id}: no such file or folder, and the Hub id{at} is not in the Hugging Face "
                              "cache while offline (HF_HUB_OFFLINE, or no network); download it once with network "
                              "access, or pass a local folder") from None
    except (RepositoryNotFoundError, HFValidationError):
        raise CheckpointError(f"{repo_id}: no such file or folder, and no such Hugging Face Hub repository (or it "
                              "is private: log in with `hf auth login`)") from None
    except RevisionNotFoundError:
        raise CheckpointError(f"{repo_id}: the Hub repository has no revision {revision!r}") from None
    except OSError as exc:
        raise CheckpointError(f"{repo_id}: could not fetch from the Hugging Face Hub ({exc})") from None


__all__ = ["HUB_FILES", "cache_snapshot", "check_revision", "looks_like_hub_id", "resolve_checkpoint"]
