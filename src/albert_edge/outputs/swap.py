"""Swap a staged set of files into a directory so that it ends whole-old or whole-new, even if killed.

A run's files are renamed into place one by one. Signals are held meanwhile (``held_signals``),
but SIGKILL, a power loss or a failing rename cannot be held. So before the first rename the
swap writes a journal into the staging folder naming every file it will place or remove, and it
keeps each file it replaces under ``replaced/`` (a hard link where the filesystem allows, so a
reader never finds the name missing). Renaming the journal to ``swap.done.json`` is the commit
point. ``roll_back`` undoes a swap whose journal was never marked done: called at once when a
rename fails, and by the next run (``output_set.clean_leftovers``) when the writer was killed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

JOURNAL = "swap.json"
DONE = "swap.done.json"
REPLACED = "replaced"


def fsync_path(path: Path) -> None:
    """Flush ``path`` (a file or a folder's entries) to disk; a filesystem that cannot is let be."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _keep(old: Path, kept: Path) -> None:
    """Keep the file about to be replaced: a second name for it, or (no hard links here) move it."""
    try:
        os.link(old, kept, follow_symlinks=False)
    except OSError:
        os.replace(old, kept)


def swap(staging: Path, directory: Path, names: list[str], stale: list[str]) -> None:
    """Rename ``staging/NAME`` over ``directory/NAME`` for each of ``names`` in order, then move
    ``stale`` names out of ``directory``; journaled as above. An exception of any kind half-way
    rolls the directory back to its previous files and is re-raised."""
    replaced = staging / REPLACED
    replaced.mkdir(exist_ok=True)
    touched = list(dict.fromkeys([*names, *stale]))
    existed = [name for name in touched if os.path.lexists(directory / name)]
    # A rename keeps the inode: the roll-back removes or replaces only a file the swap itself placed.
    placed = {name: _identity(staging / name) for name in names}
    tmp = staging / f"{JOURNAL}.tmp"
    tmp.write_text(json.dumps({"names": names, "stale": stale, "existed": existed, "placed": placed}),
                   encoding="utf-8")
    fsync_path(tmp)
    os.replace(tmp, staging / JOURNAL)
    fsync_path(staging)
    try:
        for name in names:
            if name in existed:
                (replaced / name).parent.mkdir(parents=True, exist_ok=True)
                _keep(directory / name, replaced / name)
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, directory / name)
        for name in stale:
            if name in existed and name not in names:
                (replaced / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(directory / name, replaced / name)
        fsync_path(directory)
    except BaseException:
        roll_back(staging, directory)
        raise
    os.replace(staging / JOURNAL, staging / DONE)
    fsync_path(staging)
    _prune_emptied(directory, stale)


def _prune_emptied(directory: Path, stale: list[str]) -> None:
    """Remove the sub-folders (``variants/``) that removing ``stale`` files left empty."""
    for name in stale:
        parent = (directory / name).parent
        while parent != directory and directory in parent.parents:
            try:
                parent.rmdir()  # only ever succeeds on an empty folder
            except OSError:
                break
            parent = parent.parent


def _identity(path: Path) -> list[int] | None:
    """(device, inode) of ``path`` itself, or None if it is not there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def roll_back(staging: Path, directory: Path) -> bool:
    """Put ``directory`` back as it was before the journaled swap in ``staging``; True if one was undone.

    Safe to repeat: every step looks at what is on disk. A swap marked done, or one whose journal
    was never complete (nothing was renamed yet), needs nothing. A name that now holds a file the
    swap did not place (the user put one there since the writer was killed) is left as it is.
    """
    journal = staging / JOURNAL
    try:
        entry = json.loads(journal.read_text(encoding="utf-8"))
        names, stale, existed = list(entry["names"]), list(entry["stale"]), set(entry["existed"])
        placed = {name: entry["placed"][name] for name in names}
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    replaced = staging / REPLACED
    for name in dict.fromkeys([*names, *stale]):
        if not _inside(name):
            continue  # the journal is ours, but a folder's contents are never trusted blindly
        now = _identity(directory / name)
        ours = now is not None and now == placed.get(name)
        kept = _identity(replaced / name)
        if kept is not None:
            if now is None or ours or now == kept:
                (directory / name).parent.mkdir(parents=True, exist_ok=True)
                os.replace(replaced / name, directory / name)
        elif name in names and name not in existed and ours:
            (directory / name).unlink()  # placed by the swap where nothing was before
    fsync_path(directory)
    journal.unlink(missing_ok=True)
    return True


def _inside(name: str) -> bool:
    """A relative path that stays inside the folder (``a`` or ``variants/a``; no ``..``, not absolute)."""
    parts = name.split("/")
    return bool(name) and "\\" not in name and all(part and part not in (".", "..") for part in parts)


def finish_leftover(staging: Path, directory: Path) -> None:
    """Settle a dead writer's staging folder: roll back a half-done swap, then remove the folder."""
    if not (staging / DONE).exists():
        roll_back(staging, directory)
    shutil.rmtree(staging)
