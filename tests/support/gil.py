"""A stage that holds the GIL the way LiteRT's converter does: one thread, no release, for ``seconds``.

A pure-Python loop normally lets other threads in every few milliseconds; with the switch interval
raised past the stage's length it does not, which is what a long C++ call without a GIL release does.
"""

from __future__ import annotations

import sys
import time


def hold_gil(seconds: float) -> str:
    """Busy for ``seconds`` without letting another thread of this process run; returns "done"."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(max(old, 10.0 * seconds))
    try:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
    finally:
        sys.setswitchinterval(old)
    return "done"


def fail(message: str) -> None:
    """Raise ValueError(message): an error in the child comes back as itself."""
    raise ValueError(message)
