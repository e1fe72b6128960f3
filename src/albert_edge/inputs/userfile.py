"""Read a user's file with its size bounded while reading, not only by ``stat``.

A size check on ``stat`` alone lets ``/dev/zero`` (size 0) through, and reading it never ends:
``--config /dev/zero`` or a TSV argument of ``/dev/urandom`` hung the command until memory ran
out. Devices are refused by type; regular files by their size before reading; and pipes
(``<(head file)``, which stay allowed) by reading at most ``limit + 1`` bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from albert_edge.errors import AlbertEdgeError


def read_user_bytes(path: str | os.PathLike[str], limit: int, error: type[AlbertEdgeError],
                    what: str = "file") -> bytes:
    """At most ``limit`` bytes of ``path``, or ``error`` with one line naming ``path`` and why not."""
    path = Path(path)
    try:
        info = path.stat()
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) or stat.S_ISSOCK(info.st_mode):
            raise error(f"{path}: cannot read: a device or socket, not a {what}")
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise error(f"{path}: {what} is {info.st_size} bytes, more than the {limit} accepted")
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{path}: {what} is more than the {limit} bytes accepted")
    return data
