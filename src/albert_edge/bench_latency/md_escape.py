"""Text from imported documents, made inert for report.md.

Variant names come from phone logs' ``Graph:`` paths and ``--variant``; peers and arm-check
documents carry names, notes and error strings. Dropped into a Markdown table as they are, a ``|``
splits the row, a line break starts a heading of its own, and ``<...>`` or ``[...](...)`` become
HTML or links. Validation already refuses control characters (``typed.Str``); here the few
characters that change a table's or a paragraph's structure become character references, which
a Markdown viewer shows as the character itself. Ordinary names (``int8_fc``, ``albert-edge fp32
tflite``) pass unchanged.
"""

from __future__ import annotations

from typing import Any

_REFERENCES = {"|": "&#124;", "<": "&lt;", ">": "&gt;", "`": "&#96;", "[": "&#91;", "]": "&#93;",
               "\r": " ", "\n": " ", "\t": " "}
_TABLE = str.maketrans(_REFERENCES)


def md_text(text: str) -> str:
    """``text`` with table-splitting, HTML, code and link characters replaced by references."""
    return text.translate(_TABLE)


def md_escaped(value: Any) -> Any:
    """A copy of a JSON value with every string (not the keys) passed through ``md_text``."""
    if isinstance(value, str):
        return md_text(value)
    if isinstance(value, list):
        return [md_escaped(item) for item in value]
    if isinstance(value, dict):
        return {key: md_escaped(item) for key, item in value.items()}
    return value
