"""Any exception that reaches the CLI becomes one line and an exit code.

The contract (README): bad input or a bad environment is one line on stderr naming the file and
what is wrong, exit 2; anything else is a bug in albert-edge, said to be one, exit 1; ``--debug``
adds the traceback. ``describe`` decides the line and the code; ``cli.main`` prints it.
"""

from __future__ import annotations

import errno

from albert_edge.errors import AlbertEdgeError, BackendError, ConversionError, ModelFileError, QuantizationError

USER_ERROR = 2
INTERNAL_ERROR = 1

_OS_HINTS = {
    errno.ENOSPC: "free some disk space and rerun",
    errno.EDQUOT: "free some disk space and rerun",
    errno.EACCES: "check the file's permissions",
    errno.EPERM: "check the file's permissions",
    errno.EROFS: "choose a writable location",
    errno.EMFILE: "raise the open-files limit (ulimit -n)",
}


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def describe(exc: BaseException) -> tuple[str, int]:
    """(message without the ``albert-edge CMD: error:`` prefix, exit code) for ``exc``."""
    if isinstance(exc, AlbertEdgeError):
        return str(exc), exc.exit_code
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "I/O"
        if exc.filename2 is not None:
            where = f"{where} -> {exc.filename2}"
        what = exc.strerror or _one_line(exc) or type(exc).__name__
        hint = _OS_HINTS.get(exc.errno or -1)
        return f"{where}: {what}" + (f"; {hint}" if hint else ""), USER_ERROR
    if isinstance(exc, MemoryError):
        return "ran out of memory; try a smaller --batch-size, shorter texts or fewer threads", USER_ERROR
    if isinstance(exc, UnicodeEncodeError):
        return (f"cannot write {exc.object[exc.start:exc.end]!r} in the output encoding {exc.encoding}; "
                "set PYTHONIOENCODING=utf-8 (or a UTF-8 locale) and rerun"), USER_ERROR
    detail = _one_line(exc)[:300]
    return (f"internal error ({type(exc).__name__}{': ' + detail if detail else ''}); this is a bug in "
            "albert-edge: please rerun with --debug and report the traceback"), INTERNAL_ERROR


def log_may_explain(exc: BaseException, code: int) -> bool:
    """Whether interpreter/converter messages could explain ``exc`` (then the error line names the log).

    Bad data, tokenizer or config errors are fully described by their line; pointing at a log
    of unrelated INFO lines would only distract.
    """
    return code == INTERNAL_ERROR or isinstance(exc, (BackendError, ConversionError, ModelFileError, QuantizationError))
