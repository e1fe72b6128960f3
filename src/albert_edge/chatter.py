"""Interpreter and converter chatter goes to a log file, so that an error stays one line.

TensorFlow, absl, LiteRT and ONNX Runtime write from C++ straight to file descriptor 2
("INFO: Created TensorFlow Lite XNNPACK delegate for CPU.", oneDNN and CUDA notices, absl's
"All log messages before absl::InitializeLog()"), which no Python-level redirect can catch. So
``chatter_to_log`` points fd 2 itself at a log file for the duration of a command, routes Python
``warnings`` there too, and lowers TensorFlow's C++ log level for anything imported later. What
albert-edge itself prints on ``sys.stderr`` (progress bars, the final error line) still reaches
the user: when ``sys.stderr`` writes to fd 2 it is swapped for a stream on a private copy of the
user's stderr for the duration.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

# Read by TensorFlow's C++ logging (and glog-based libraries) at import: hide INFO and WARNING lines
# (errors still reach the log through fd 2). setdefault: a user's own setting wins. ONNX Runtime
# has no such variable; its sessions are opened with log_severity_level=3 (runtime.backends).
QUIET_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "2", "GLOG_minloglevel": "2"}

_user_stderr: tuple[tuple[int, int], TextIO] | None = None


def _fd_identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _writes_to_fd2(stream: object) -> bool:
    try:
        return stream is not None and stream.fileno() == 2  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def _private_stderr() -> TextIO:
    """A text stream on a private duplicate of the current fd 2, made once per target and never closed.

    Never closed because a logging handler created while it is ``sys.stderr`` (TensorFlow adds
    one at import) keeps a reference to it for the life of the process.
    """
    global _user_stderr
    identity = _fd_identity(2)
    if _user_stderr is None or _user_stderr[0] != identity:
        encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
        errors = getattr(sys.stderr, "errors", None) or "backslashreplace"
        stream = open(os.dup(2), "w", encoding=encoding, errors=errors, buffering=1, closefd=True)  # noqa: SIM115
        _user_stderr = (identity, stream)
    return _user_stderr[1]


def new_log_path(command: str) -> Path | None:
    """A fresh, private log file in the temp directory, named after the command; None if none can be made.

    An unwritable TMPDIR must not turn every command into an error: the caller then sends the
    chatter to ``os.devnull``.
    """
    try:
        fd, name = tempfile.mkstemp(prefix=f"albert-edge-{command}-", suffix=".log")
    except OSError:
        return None
    os.close(fd)
    return Path(name)


@contextlib.contextmanager
def chatter_to_log(log_path: Path) -> Iterator[Path]:
    """Send fd 2 and Python warnings to ``log_path`` while the block runs; restore both after."""
    for key, value in QUIET_ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    old_stderr = sys.stderr
    if _writes_to_fd2(old_stderr):
        sys.stderr = _private_stderr()
    saved = os.dup(2)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log_fd, 2)
    finally:
        os.close(log_fd)

    def to_log(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
        os.write(2, warnings.formatwarning(message, category, filename, lineno, line).encode("utf-8", "replace"))

    # Python logging too: a library that logs through the root logger (ONNX Runtime's quantizer:
    # "Please consider to run pre-processing before quantization") would otherwise get a
    # basicConfig handler on the user's stderr. With a root handler on the log, basicConfig does nothing.
    log_stream = open(os.dup(2), "w", encoding="utf-8", errors="backslashreplace", buffering=1)  # noqa: SIM115
    handler = logging.StreamHandler(log_stream)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = to_log
            yield log_path
    finally:
        root.removeHandler(handler)
        with contextlib.suppress(OSError, ValueError):
            log_stream.close()
        with contextlib.suppress(AttributeError, OSError, ValueError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        sys.stderr = old_stderr


def log_has_content(log_path: Path) -> bool:
    try:
        return log_path.stat().st_size > 0
    except OSError:
        return False


def discard_log(log_path: Path) -> None:
    with contextlib.suppress(OSError):
        log_path.unlink()
