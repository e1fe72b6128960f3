"""Run a call in a child process while this one keeps its threads running: long GIL-holding C++ calls
(LiteRT's converter) then cannot silence the progress heartbeat.

Why: TensorFlow's converter holds the GIL for seconds inside one C++ call, so the heartbeat thread of
``progress.py`` cannot write a line meanwhile; a log of the demo under load had 12-17 s of silence
(issue #36: a line at least every 10 s). In a child the call holds the child's GIL; the parent only
waits on a pipe, which releases its GIL, and its heartbeat goes on.

One child per process, started at first use and reused (TensorFlow is imported once in it), with the
``spawn`` start method: a fork of a process whose TensorFlow and LiteRT thread pools are running can
deadlock. Arguments, results and exceptions travel pickled, so the function must be importable by
name (a module-level function) and its arguments plain data (weights, bytes, dataclasses).
The child inherits file descriptor 2 as it is at its start: inside ``chatter.chatter_to_log`` its
converter chatter goes to the same log as the parent's. Its working directory it takes from the caller at
each call (``_in_directory``): it outlives the directory it was started in, and a relative path (the
sample's ``examples/albert_tiny_zh_sentiment``) handed over after the caller changed directory was read
from the old one ("not a TF1 checkpoint").
"""

from __future__ import annotations

import atexit
import concurrent.futures
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

__all__ = ["IN_PROCESS_ENV", "call_in_child", "result", "shutdown", "start_in_child"]

_T = TypeVar("_T")
#: Set to 1 to run every call in this process instead (a debugger, a profiler, a monkeypatched test).
IN_PROCESS_ENV = "ALBERT_EDGE_IN_PROCESS"

_pool: concurrent.futures.ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _child() -> concurrent.futures.ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = concurrent.futures.ProcessPoolExecutor(max_workers=1,
                                                           mp_context=multiprocessing.get_context("spawn"))
        return _pool


def shutdown() -> None:
    """Stop the child (the next call starts a new one); registered to run at exit."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown)


def call_in_child(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` computed in the child process; its exception, if any, raised here.

    A child that dies (killed, out of memory) raises RuntimeError naming ``fn``; the next call starts
    a fresh one. With ``ALBERT_EDGE_IN_PROCESS=1`` the call runs here, as a plain call.
    """
    return result(start_in_child(fn, *args, **kwargs))


def start_in_child(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
    """Queue ``fn(*args, **kwargs)`` in the child and return at once; ``result(future)`` waits for it.

    Calls run one at a time, in the order they were started, while this process does other work
    (quantize judges variants here while the child converts the next ones). With
    ``ALBERT_EDGE_IN_PROCESS=1`` the call runs here now and the future is already done.
    """
    if os.environ.get(IN_PROCESS_ENV) == "1":
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to the caller by result(), as from the child
            done.set_exception(exc)
        return done
    try:
        cwd: str | None = os.getcwd()
    except OSError:   # the caller's directory was removed: relative paths cannot mean anything there either
        cwd = None
    future = _child().submit(_in_directory, cwd, fn, *args, **kwargs)
    future.fn_name = getattr(fn, "__name__", repr(fn))  # type: ignore[attr-defined]
    return future


def _in_directory(cwd: str | None, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in the child, run from the caller's working directory ``cwd``."""
    if cwd is not None:
        os.chdir(cwd)
    return fn(*args, **kwargs)


def result(future: concurrent.futures.Future[_T]) -> _T:
    """The value of a call ``start_in_child`` queued (its exception raised here); a dead child: RuntimeError."""
    try:
        return future.result()
    except BrokenProcessPool as exc:
        shutdown()
        raise RuntimeError(f"the child process running {getattr(future, 'fn_name', 'a call')} died ({exc})") from None

