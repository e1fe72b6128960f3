"""A run's output files, written beside the previous run's and swapped in only when all are written.

``convert`` and ``quantize`` each write several model files plus a report that lists them. Writing
them one by one over the previous set meant that a failure half-way (a full disk, Ctrl-C) left a
mix: an earlier version deleted the previous ``model_fp32.tflite`` on failure while the old
``conversion_report.json`` still listed it. Here the new files go into a hidden staging folder
inside the output directory (same filesystem, so the final renames cannot run out of space), and
only when every file is complete are they renamed over the old ones, the report last. A failure
before that leaves the previous files and report exactly as they were.

The swap itself holds SIGINT/SIGTERM/SIGHUP (``held_signals``) and is journaled
(``output_swap``), so an interruption cannot leave a mix: a signal is delivered once the set is
whole, and a writer killed outright (SIGKILL, power loss) is rolled back by the next run.

Before the swap, ``output_claim`` checks the one ownership rule: a run never replaces or deletes
a file albert-edge did not write. The set then records its files in that folder's manifest.

A killed run leaves its staging folder or ``.partial`` files behind; the next run in the same
directory removes those whose process is gone (names carry the writer's pid), first undoing a
swap the killed run had begun.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from albert_edge.errors import OutputError
from albert_edge.outputs.held_signals import held_signals
from albert_edge.outputs.claim import (
    MANIFEST,
    claim_output_dir,
    manifest_text,
    previous_set,
    read_manifest,
    safe_name,
)
from albert_edge.outputs.swap import finish_leftover, fsync_path, swap

STAGING_PREFIX = ".albert-edge-staging-"
# Leftovers of a killed writer: our staging folders, atomic.py's ``.NAME.p<pid>.XXXX.partial`` files
# and the TF1 writer's ``.PREFIX.partial-XXXX.*`` files (older versions wrote them without a pid).
_LEFTOVER = re.compile(r"^\.(?:albert-edge-staging-|.*\.partial(?:$|-))")
_PID = re.compile(r"(?:^\.albert-edge-staging-|\.p)(\d+)[.-]")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def write_failure(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    """The one-line error for a failed write of ``path``: a full disk says so in plain words."""
    if exc.errno in _NO_SPACE:
        return OutputError(f"{path}: cannot write: no space left on device")
    return OutputError(f"{path}: cannot write ({exc.strerror or exc})")


def _alive(pid: int) -> bool:
    """True if process ``pid`` exists on this machine (a concurrent writer's files are left alone)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove staging folders and ``.partial`` files that killed runs left in ``directory``; return them.

    Entries whose name carries the pid of a live process belong to a run in progress and stay.
    """
    removed = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not _LEFTOVER.match(entry.name):
            continue
        pid = _PID.search(entry.name)
        if pid and _alive(int(pid.group(1))):
            continue
        try:
            if entry.is_dir() and not entry.is_symlink():
                if entry.name.startswith(STAGING_PREFIX):
                    with held_signals():
                        finish_leftover(entry, Path(directory))  # a half-done swap is undone first
                else:
                    shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError:
            continue  # not ours to fight over; the next run tries again
        removed.append(entry)
    return removed


def _real_dir(path: Path) -> bool:
    """A folder (not a link to one): a manifest entry the user has since made a folder is not ours to remove."""
    return path.is_dir() and not path.is_symlink()


class OutputSet:
    """Stage files for ``directory`` and swap them in together.

    Use as a context manager: ``write_bytes``/``write_text`` stage a file under its final name;
    leaving the block normally renames every staged file into ``directory`` in the order written
    (write the report last) and deletes the names given to ``remove_stale``; leaving it by an
    exception discards them all. Every OSError while writing becomes one OutputError line naming
    the final file. ``writer`` is the command recorded in the folder's manifest; ``claims`` are
    wildcard names the set owns beyond those it writes (``output_claim.claim_output_dir``).

    The set replaces the previous set of the same ``writer`` in that folder: the files its last run
    recorded and this one does not write are removed in the same swap, so no earlier run's model
    stays beside this run's report. ``replaces=False`` is for a writer of one named file (``repack
    --out``), whose runs each add a file. A name may lie in a sub-folder (``variants/x.tflite``).
    """

    def __init__(self, directory: str | os.PathLike[str], writer: str = "albert-edge",
                 claims: Iterable[str] = (), replaces: bool = True) -> None:
        self.directory = Path(directory)
        self.writer = writer
        self.replaces = replaces
        self.claims = tuple(claims)
        self.names: list[str] = []
        self.stale: list[str] = []
        self.staging: Path | None = None

    def __enter__(self) -> OutputSet:
        clean_leftovers(self.directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=self.directory))
        except OSError as exc:
            raise write_failure(self.directory, exc) from None
        return self

    def _check_name(self, name: str) -> None:
        if self.staging is None:
            raise RuntimeError("OutputSet used outside its with-block")
        if not safe_name(name) or name in self.names:
            raise ValueError(f"output name {name!r} must be a new file name inside the folder")

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Stage ``data`` as ``name`` (a plain file name); return the path it will have once swapped in."""
        self._check_name(name)
        assert self.staging is not None
        try:
            (self.staging / name).parent.mkdir(parents=True, exist_ok=True)
            (self.staging / name).write_bytes(data)
            fsync_path(self.staging / name)  # renamed into place later: the bytes must be on disk first
            # mkdtemp makes 0700 folders; outputs are read by apps, asset copies and other users.
            os.chmod(self.staging / name, 0o644)
        except OSError as exc:
            raise write_failure(self.directory / name, exc) from None
        self.names.append(name)
        return self.directory / name

    def write_text(self, name: str, text: str) -> Path:
        """Stage UTF-8 ``text`` as ``name``."""
        return self.write_bytes(name, text.encode("utf-8"))

    def stage_dir(self) -> Path:
        """The staging folder, for a library writer that makes its own files (a TF1 checkpoint);
        ``adopt_staged`` then takes what it wrote into the set."""
        if self.staging is None:
            raise RuntimeError("OutputSet used outside its with-block")
        return self.staging

    def adopt_staged(self) -> list[Path]:
        """Add every file written directly into ``stage_dir()`` (sorted by name) to the set."""
        assert self.staging is not None
        adopted = []
        for path in sorted(self.staging.iterdir()):
            if path.is_file() and not path.name.startswith(".") and path.name not in self.names:
                self._check_name(path.name)
                os.chmod(path, 0o644)
                self.names.append(path.name)
                adopted.append(self.directory / path.name)
        return adopted

    def remove_stale(self, name: str) -> None:
        """Delete ``name`` from the directory at commit: a file of the previous set this set does not
        replace (e.g. golden logits of another model) must not survive beside the new files."""
        if not safe_name(name):
            raise ValueError(f"output name {name!r} must be a file name inside the folder")
        self.stale.append(name)

    def commit(self) -> list[Path]:
        """Check the ownership rule, then swap every staged file in (and the stale ones out) as one
        journaled step with signals held; the manifest of the folder goes in last."""
        assert self.staging is not None
        manifest = read_manifest(self.directory)
        if self.replaces:  # the previous run's set, less what this run writes again, goes
            self.stale += [name for name in previous_set(manifest, self.writer) if name not in self.names
                           and name not in self.stale and not _real_dir(self.directory / name)]
        claim_output_dir(self.directory, self.names, self.claims, removes=self.stale)
        for name in self.stale:
            manifest.pop(name, None)
        manifest.update({name: self.writer for name in self.names})
        names = [*self.names, MANIFEST]
        try:
            (self.staging / MANIFEST).write_text(manifest_text(manifest), encoding="utf-8")
            with held_signals():
                swap(self.staging, self.directory, names, self.stale)
        except OSError as exc:
            failed = exc.filename2 or exc.filename
            where = self.directory / Path(failed).name if failed else self.directory
            raise write_failure(where, exc) from None
        return [self.directory / name for name in self.names]

    def discard(self) -> None:
        """Remove the staging folder and whatever it still holds."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc_type is None:
                self.commit()
        finally:
            self.discard()
