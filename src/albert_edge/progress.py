"""How every command shows that it is working: one module, so convert, quantize, bench, finetune and demo agree.

Two shapes: *steps* (``step("export tflite fp32")``: a stage of unknown length) and *bars*
(``bar(total, desc)``: a counted loop, e.g. benchmark rounds or training batches). Where they go
depends on stderr and on the command's ``session``:

* stderr is a terminal: one status line redrawn in place (steps) or a tqdm bar (bars; a plain
  redrawn line when tqdm is not installed). The status line is wiped when the session ends, so an
  error line that follows starts on a line of its own.
* stderr is a file or pipe (CI logs, ``nohup``, a notebook): no redrawing; each finished step or
  bar becomes one line ``albert-edge CMD: <step> (<seconds> s, at <since start> s)``, and a step or
  bar still under way after ``HEARTBEAT_SECONDS`` without a line says so (a log that
  is silent for minutes cannot be told from a hung run). Inside a ``session`` the lines of the
  first ``HOLD_SECONDS`` are held: a command that fails that soon (bad input is refused before any
  work) drops them, so its error stays the one line on stderr the CLI promises (cli.failure); a
  command still running after that writes them, and every later line as it comes. Outside a
  session (a library caller) they are written as each step ends.
* ``--no-progress`` (``session(enabled=False)``): nothing at all.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_CLEAR = "\r\x1b[K"
#: Without a terminal, a command's first lines are held this long (an early error stays one line).
HOLD_SECONDS = 10.0
#: Without a terminal, a step or bar under way writes a line after this long without one: 8 s, so that a
#: loaded machine's late wake-ups still give a line at least every 10 s (LiteRT's converter holds the GIL
#: for seconds at a time; quantize starts a step per variant built so that a line follows each one).
HEARTBEAT_SECONDS = 8.0
#: The clock of every duration here (a test replaces it with a fake one).
_clock: Callable[[], float] = time.perf_counter
#: Held lines and writes from the heartbeat thread and the command's own thread go through it.
_lock = threading.RLock()


@dataclass
class _Session:
    """What one command reports: its name, whether it may report, and the held summary lines."""

    command: str
    enabled: bool = True
    held: list[str] = field(default_factory=list)
    current: tuple[str, float] | None = None  # the step under way and when it began
    drawn: bool = False  # a status line is on the terminal
    began: float = field(default_factory=lambda: _clock())
    live: bool = False  # past HOLD_SECONDS: lines are written as they come
    last_line: float = field(default_factory=lambda: _clock())  # when a line was last written or held
    activity: tuple[Callable[[], str], float] | None = None  # a counted loop under way: its text, its start


_session: _Session | None = None


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _emit(line: str) -> None:
    """A summary or heartbeat line: held during a session's first HOLD_SECONDS, else written at once."""
    with _lock:
        session = _session
        if session is not None:
            now = _clock()
            session.last_line = now
            session.held.append(line)
            if not session.live and now - session.began < HOLD_SECONDS:
                return
            session.live = True
            line, session.held = "\n".join(session.held), []
        with contextlib.suppress(OSError, ValueError):
            print(line, file=sys.stderr, flush=True)


def _summary(session: _Session | None, what: str, seconds: float) -> str:
    prefix = f"albert-edge {session.command}: " if session is not None and session.command else ""
    at = f", at {_clock() - session.began:.0f} s" if session is not None else ""
    return f"{prefix}{what} ({seconds:.1f} s{at})"


def beat() -> None:
    """Without a terminal: if the step or bar under way has written nothing for HEARTBEAT_SECONDS, say
    it is still running (``<step> ... 20 s so far, at 95 s``). The session's heartbeat thread calls it."""
    with _lock:
        session = _session
        if session is None or not session.enabled or _stderr_is_terminal():
            return
        now = _clock()
        if not session.live and session.held and now - session.began >= HOLD_SECONDS:
            # The hold is over: its lines go out now, not with the next line up to HEARTBEAT_SECONDS later.
            session.live = True
            with contextlib.suppress(OSError, ValueError):
                print("\n".join(session.held), file=sys.stderr, flush=True)
            session.held = []
        if session.activity is not None:
            describe, since = session.activity
            what = describe()
        elif session.current is not None:
            what, since = session.current
        else:
            return
        if now - max(since, session.last_line) >= HEARTBEAT_SECONDS:
            prefix = f"albert-edge {session.command}: " if session.command else ""
            _emit(f"{prefix}{what} ... {now - since:.0f} s so far, at {now - session.began:.0f} s")


def _heartbeat(stop: threading.Event) -> None:
    while not stop.wait(1.0):
        beat()


def _end_step() -> None:
    session = _session
    if session is None or session.current is None:
        return
    what, began = session.current
    session.current = None
    if not _stderr_is_terminal():
        _emit(_summary(session, what, _clock() - began))


def _wipe() -> None:
    if _session is not None and _session.drawn:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(_CLEAR)
            sys.stderr.flush()
        _session.drawn = False


def enabled() -> bool:
    """Whether progress may be shown now (False under ``--no-progress``)."""
    return _session is None or _session.enabled


@contextlib.contextmanager
def session(command: str, enabled: bool = True) -> Iterator[None]:
    """Report progress for one command: held summary lines are written only if the block succeeds."""
    global _session
    outer, _session = _session, _Session(command, enabled)
    stop = threading.Event()
    if enabled and not _stderr_is_terminal():
        threading.Thread(target=_heartbeat, args=(stop,), name="albert-edge-progress", daemon=True).start()
    succeeded = False
    try:
        yield
        succeeded = True
    finally:
        stop.set()
        with _lock:
            finished = _session
            if succeeded:
                _end_step()
            _wipe()
            _session = outer
            if succeeded and finished.enabled and finished.held:
                with contextlib.suppress(OSError, ValueError):
                    print("\n".join(finished.held), file=sys.stderr, flush=True)


def clear() -> None:
    """End the current step and wipe its status line: call before printing results to stdout, which
    would otherwise continue the status line on the same terminal row."""
    if _session is None:
        return
    _end_step()
    _wipe()


def step(what: str) -> None:
    """Begin the stage ``what`` (the previous one ends). Pass as a pipeline's ``progress`` callback."""
    if not enabled():
        return
    if _session is None:
        # A library caller without a session: one line per stage as it begins.
        print(what, file=sys.stderr, flush=True)
        return
    with _lock:
        _end_step()
        _session.current = (what, _clock())
    if _stderr_is_terminal():
        prefix = f"albert-edge {_session.command}: " if _session.command else ""
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{_CLEAR}{prefix}{what} ...")
            sys.stderr.flush()
        _session.drawn = True


class _PlainBar:
    """A counted loop without a terminal (or without tqdm): one summary line at close, or a redrawn line."""

    def __init__(self, total: int | None, desc: str, unit: str, redraw: bool, track: bool = True) -> None:
        self.total, self.desc, self.unit, self.redraw = total, desc, unit, redraw
        self.n = 0
        self.began = _clock()
        self.closed = False
        if track and not redraw and _session is not None:
            _session.activity = (self._describe, self.began)  # beat() says how far the loop is

    def _describe(self) -> str:
        of = f"/{self.total}" if self.total else ""
        return f"{self.desc}: {self.n}{of} {self.unit}"

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.redraw:
            of = f"/{self.total}" if self.total else ""
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(f"{_CLEAR}{self.desc}: {self.n}{of} {self.unit}")
                sys.stderr.flush()

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:  # noqa: ARG002 - tqdm's signature
        """Accepted for tqdm compatibility; the summary line does not carry it."""

    def set_description(self, desc: str, refresh: bool = True) -> None:  # noqa: ARG002 - tqdm's signature
        """Redrawn lines show the latest description; the summary line keeps the first (the loop's name)."""
        if self.redraw:
            self.desc = desc

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if _session is not None and _session.activity is not None and _session.activity[0] == self._describe:
            _session.activity = None
        if self.redraw:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(_CLEAR)
                sys.stderr.flush()
            return
        _emit(_summary(_session, self._describe(), _clock() - self.began))

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("wrap the iterable with bar(..., iterable=...)")


class _IterBar(_PlainBar):
    def __init__(self, iterable: Any, total: int | None, desc: str, unit: str, redraw: bool) -> None:
        super().__init__(total, desc, unit, redraw)
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable:
            yield item
            self.update()
        self.close()


class _NoBar(_PlainBar):
    """Draws nothing, but keeps ``total`` and ``n`` like a drawn bar (a caller may grow ``total``)."""

    def __init__(self, iterable: Any = None, total: int | None = None) -> None:
        super().__init__(total, "", "", redraw=False, track=False)
        self.iterable = iterable if iterable is not None else ()
        self.closed = True

    def update(self, n: int = 1) -> None:
        self.n += n

    def __iter__(self) -> Iterator[Any]:
        yield from self.iterable


def bar(total: int | None = None, desc: str = "", unit: str = "it", show: bool = True, iterable: Any = None) -> Any:
    """A progress bar with tqdm's ``update``/``close``/``set_postfix_str`` (and iteration with ``iterable``).

    ``show=False`` (a caller's own switch) or ``--no-progress`` gives a bar that draws nothing.
    """
    if iterable is not None and total is None:
        with contextlib.suppress(TypeError):
            total = len(iterable)
    if not show or not enabled():
        return _NoBar(iterable, total)
    if _session is not None:
        _end_step()  # a counted loop is a stage of its own
        _wipe()
    if _stderr_is_terminal():
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(iterable, total=total, desc=desc or None, unit=unit, file=sys.stderr, dynamic_ncols=True,
                        leave=False)
        redraw = True
    else:
        redraw = False
    if iterable is not None:
        return _IterBar(iterable, total, desc, unit, redraw)
    return _PlainBar(total, desc, unit, redraw)
