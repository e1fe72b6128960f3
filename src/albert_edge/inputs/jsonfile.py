"""JSON from untrusted files, with the depth and size bounded before the parser sees it.

Model packs, ONNX metadata, ``albert_config.json``, Hugging Face ``config.json`` and shard
indexes all come from the user's disk and may be hostile. Python's ``json`` recurses once per
nesting level, so ``[[[[...]]]]`` a few thousand deep ends in a RecursionError traceback; a
multi-gigabyte file ends in a memory error. Every reader of such files goes through
``load_json_text`` / ``load_json_file``, which refuse both with one line naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from albert_edge.errors import AlbertEdgeError
from albert_edge.inputs.userfile import read_user_bytes

# Real configs nest 2-3 levels (id2label, pack settings' tokenizer block); 32 leaves ample room.
MAX_DEPTH = 32
# The largest legitimate JSON we read is a shard index of a big model (~100 KB); 16 MB is ample.
MAX_BYTES = 16 * 1024 * 1024


def json_depth(text: str) -> int:
    """Deepest bracket nesting in ``text``, ignoring brackets inside strings. O(len), no recursion."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json_text(text: str, source: str, error: type[AlbertEdgeError] = AlbertEdgeError,
                   max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``text`` (read from ``source``) or raise ``error`` with one line naming ``source``."""
    if len(text) > MAX_BYTES:
        raise error(f"{source}: JSON is {len(text)} characters, more than the {MAX_BYTES} this reader accepts")
    depth = json_depth(text)
    if depth > max_depth:
        raise error(f"{source}: JSON nested {depth} levels deep (at most {max_depth} accepted)")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise error(f"{source}: not valid JSON ({exc})") from None


def load_json_file(path: str | os.PathLike[str], error: type[AlbertEdgeError] = AlbertEdgeError,
                   max_depth: int = MAX_DEPTH) -> Any:
    """Read and parse a UTF-8 JSON file with the bounds above; every failure is ``error`` naming ``path``."""
    path = Path(path)
    data = read_user_bytes(path, MAX_BYTES, error, "JSON file")  # bounded while reading: /dev/zero ends
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return load_json_text(text, str(path), error, max_depth)
