"""Reading a task's JSONL eval file: one JSON value per non-blank line, errors naming the file and line.

The QA and NER files are both JSONL; each task module checks its own fields, this one owns the
reading (BOM-tolerant UTF-8, blank lines skipped, read and JSON errors as DataError) so the two
refuse a broken file with the same message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from albert_edge.errors import DataError
from albert_edge.inputs.jsonfile import MAX_DEPTH, json_depth


def iter_jsonl_rows(path: str | os.PathLike[str], what: str,
                    max_line_chars: int | None = None) -> Iterator[tuple[int, str, Any]]:
    """``(line number, "file:line", value)`` per non-blank line, for the caller's own field checks.

    ``what`` names the file in the not-found message ("question file"); ``max_line_chars`` bounds a
    hostile line before it is parsed. Lazy, so the first bad line (JSON or fields) is the one reported.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except FileNotFoundError:
        raise DataError(f"{path}: {what} not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        if max_line_chars is not None and len(line) > max_line_chars:
            raise DataError(f"{where}: line longer than {max_line_chars} characters")
        depth = json_depth(line)  # json.loads recurses per level: [[[[... is a RecursionError, not a line
        if depth > MAX_DEPTH:
            raise DataError(f"{where}: JSON nested {depth} levels deep (at most {MAX_DEPTH} accepted)")
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise DataError(f"{where}: not JSON ({exc})") from None
        yield number, where, row
