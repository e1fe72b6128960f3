"""The two reading rules every bench document shares (report.json, peers, phone and ARM imports).

Kept apart from ``schema`` so that ``peers`` (the peers document's own schema) and ``schema`` (which
checks a report's folded-in peers section with ``peers``' rules) can both use them without importing
each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from albert_edge.errors import DataError

LATENCY_KEYS = ("count", "min", "median", "mean", "p90", "p99", "std", "max")


def require_keys(obj: object, keys: tuple[str, ...], where: str) -> None:
    """DataError unless ``obj`` is a JSON object holding ``keys``: one line naming ``where``, not a KeyError later."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise DataError(f"{where}: missing keys {', '.join(missing)}")


def read_json_file(path: Path, what: str) -> Any:
    """The parsed JSON of ``path``; DataError "<path>: not a readable <what> (...)" on a read or JSON error."""
    from albert_edge.inputs.jsonfile import load_json_file

    try:
        return load_json_file(path, DataError)  # bounded: a hostile nesting is one line, not a RecursionError
    except DataError as exc:
        detail = str(exc).removeprefix(f"{path}: ")
        raise DataError(f"{path}: not a readable {what} ({detail})") from None
