"""Hold Ctrl-C and termination signals while a few renames must finish together.

``OutputSet`` swaps a run's files into place with one rename each. A SIGINT arriving between
two of them used to leave the new model beside the old report. The renames take milliseconds,
so the signal is noted, the swap finishes, and the signal is then delivered to the handler that
was in place before: the user's Ctrl-C still stops the run, just after the set is whole.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

# SIGHUP does not exist on Windows.
HELD = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def held_signals(signums: tuple[int, ...] = HELD) -> Iterator[None]:
    """Defer ``signums`` until the block ends, then re-deliver each one caught (in arrival order).

    Only the main thread may set handlers; elsewhere the block runs unprotected (Python delivers
    signals to the main thread anyway). A handler installed outside Python (``getsignal`` is None)
    cannot be restored, so that signal is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, frame: object) -> None:
        caught.append(signum)

    previous = {}
    for signum in signums:
        handler = signal.getsignal(signum)
        if handler is None:
            continue
        signal.signal(signum, note)
        previous[signum] = handler
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)
