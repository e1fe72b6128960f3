"""The demo's console is the report: library chatter goes to a log file, not the terminal.

TensorFlow's C++ logging (absl "WARNING: All log messages before absl::InitializeLog()", oneDNN
notices), the converter's MLIR dumps, LiteRT's "Created TensorFlow Lite XNNPACK delegate" and ONNX
Runtime's quantizer warnings are written by C++ or by libraries straight to file descriptors 1 and
2, where Python's ``sys.stdout`` redirection cannot reach them. ``quiet_console`` points both
descriptors at a log file for the duration and hands back a writer on the real terminal, so the
demo's own lines (stage headers, tables, the report) are the only thing the user sees; nothing is
lost, it is in the log. Scoped to the demo on purpose: the CLI's generic error boundary is elsewhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def quiet_console(log_path: str | os.PathLike[str], enabled: bool = True) -> Iterator[TextIO]:
    """Redirect fds 1 and 2 to ``log_path`` (appended) while the block runs; yield the real stdout.

    With ``enabled=False`` (``--verbose``) nothing is redirected and ``sys.stdout`` is yielded.
    """
    if not enabled:
        yield sys.stdout
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved_out, saved_err = os.dup(1), os.dup(2)
    console = os.fdopen(os.dup(saved_out), "w", buffering=1, encoding="utf-8", errors="replace")
    try:
        with Path(log_path).open("ab") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                yield console
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved_out, 1)
                os.dup2(saved_err, 2)
    finally:
        console.close()
        os.close(saved_out)
        os.close(saved_err)
