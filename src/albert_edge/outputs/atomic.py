"""Write outputs under a temporary name and rename when complete.

A crash, a Ctrl-C or a failed parity check must never leave a half-written model file that
an app could pick up, so every writer in albert-edge goes through here.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from albert_edge.errors import OutputError


def ensure_writable_dir(directory: str | os.PathLike[str]) -> Path:
    """Create ``directory`` if needed and prove it is writable, or raise OutputError."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=path, prefix=".albert-edge-probe-", delete=True)
        probe.close()
    except OSError as exc:
        if path.is_symlink() and not path.exists():  # dangling or looping: mkdir says only "File exists"
            raise OutputError(f"{path}: output directory is a symlink to {os.readlink(path)!r}, which does not "
                              "resolve to a directory (missing or a symlink loop); fix or remove the link") from None
        raise OutputError(f"{path}: output directory is not writable ({exc.strerror or exc})") from None
    return path


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only if the block succeeds."""
    target = Path(target)
    ensure_writable_dir(target.parent if str(target.parent) else ".")
    # The pid in the name lets the next run tell a killed writer's leftover from a live one
    # (output_set.clean_leftovers).
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.p{os.getpid()}.", suffix=".partial")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        # mkstemp creates 0600; outputs are meant to be read by apps, asset copies and other users.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes_atomic(target: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``target`` atomically and return the final path."""
    try:
        with atomic_path(target) as tmp:
            tmp.write_bytes(data)
    except OSError as exc:  # a full disk is one line naming the file, not an OSError traceback
        from albert_edge.outputs.output_set import write_failure

        raise write_failure(target, exc) from None
    return Path(target)


def write_text_atomic(target: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``target`` atomically and return the final path."""
    return write_bytes_atomic(target, text.encode("utf-8"))
