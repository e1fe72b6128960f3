"""Typed checks for the JSON documents that bench writes and folds in (report.json, peers, arm-check).

The earlier checks asked only whether keys were present, so a peers or ARM document with ``"12"``
for a thread count, ``[]`` for an object, NaN, ``true`` for a length, a 20-digit thread count or
a name holding a newline and a Markdown heading passed, and broke the renderers after report.json
was already written. A spec here states each field's type and range; ``check`` walks a document
against it and raises one DataError naming the first field that does not fit.

A spec is a small object with ``check(value, where)``: ``Int``, ``Num``, ``Str``, ``Bool``,
``Null`` / ``Optional``, ``OneOf``, ``ListOf``, ``MapOf``, ``Obj`` (given keys; others pass unchecked), ``Json``
(anything, nesting bounded by the file reader).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from albert_edge.errors import DataError

# Names, notes and error strings are one line of text; no field needs more.
MAX_STR = 4000
# A document listing more rows than this is not a benchmark of one checkpoint.
MAX_ITEMS = 100_000


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Spec:
    """One field's type; ``what`` is the phrase used in the error."""

    what = "a value"

    def check(self, value: Any, where: str) -> None:
        raise NotImplementedError

    def fail(self, value: Any, where: str) -> DataError:
        return DataError(f"{where}: expected {self.what}, got {_shown(value)}")


class Int(Spec):
    """An integer (never a bool, never a float) within ``[low, high]``."""

    def __init__(self, low: int = 0, high: int = 10**12) -> None:
        self.low, self.high = low, high
        self.what = f"an integer from {low} to {high}"

    def check(self, value: Any, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            raise self.fail(value, where)


class Num(Spec):
    """A finite number (int or float, never a bool) within ``[low, high]``."""

    def __init__(self, low: float = 0.0, high: float = 1e12) -> None:
        self.low, self.high = low, high
        self.what = f"a finite number from {low:g} to {high:g}"

    def check(self, value: Any, where: str) -> None:
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or not self.low <= value <= self.high):
            raise self.fail(value, where)


class Str(Spec):
    """One line of text: no control characters (a newline would start a Markdown line of its own)."""

    def __init__(self, max_len: int = MAX_STR, choices: tuple[str, ...] = ()) -> None:
        self.max_len, self.choices = max_len, choices
        self.what = f"one of {', '.join(map(repr, choices))}" if choices else f"one line of text (at most {max_len} characters)"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, str) or len(value) > self.max_len or (self.choices and value not in self.choices):
            raise self.fail(value, where)
        if any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029" for ch in value):
            raise DataError(f"{where}: text holds a control character or line break ({_shown(value)})")


class Bool(Spec):
    what = "true or false"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, bool):
            raise self.fail(value, where)


class Json(Spec):
    """Any JSON value: kept as it is, not rendered field by field."""

    def check(self, value: Any, where: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            raise DataError(f"{where}: expected a finite number, got {_shown(value)}")


class OneOf(Spec):
    """The first of ``specs`` that fits; the error names them all."""

    def __init__(self, *specs: Spec, what: str = "") -> None:
        self.specs = specs
        self.what = what or " or ".join(s.what for s in specs)

    def check(self, value: Any, where: str) -> None:
        for spec in self.specs:
            try:
                spec.check(value, where)
                return
            except DataError:
                continue
        raise self.fail(value, where)


class _Null(Spec):
    what = "null"

    def check(self, value: Any, where: str) -> None:
        if value is not None:
            raise self.fail(value, where)


Null = _Null()


def Optional(spec: Spec) -> Spec:
    """``spec`` or null."""
    return OneOf(spec, Null)


class ListOf(Spec):
    def __init__(self, item: Spec, max_items: int = MAX_ITEMS) -> None:
        self.item, self.max_items = item, max_items
        self.what = f"a list of {item.what}"

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, list) or len(value) > self.max_items:
            raise DataError(f"{where}: expected a list (at most {self.max_items} items), got {_shown(value)}")
        for i, item in enumerate(value):
            self.item.check(item, f"{where}[{i}]")


class Obj(Spec):
    """A JSON object with ``required`` keys and, where present, ``optional`` ones of the given types."""

    what = "a JSON object"

    def __init__(self, required: Mapping[str, Spec], optional: Mapping[str, Spec] | None = None) -> None:
        self.required, self.optional = dict(required), dict(optional or {})

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(value).__name__}")
        missing = [k for k in self.required if k not in value]
        if missing:
            raise DataError(f"{where}: missing keys {', '.join(missing)}")
        for key, spec in self.required.items():
            spec.check(value[key], f"{where}.{key}")
        for key, spec in self.optional.items():
            if key in value:
                spec.check(value[key], f"{where}.{key}")


class MapOf(Spec):
    """A JSON object whose every value is of one type (names of packages to versions, say)."""

    def __init__(self, value: Spec, max_items: int = MAX_ITEMS) -> None:
        self.value, self.max_items = value, max_items

    def check(self, value: Any, where: str) -> None:
        if not isinstance(value, dict) or len(value) > self.max_items:
            raise DataError(f"{where}: expected a JSON object, got {type(value).__name__}")
        for key, item in value.items():
            self.value.check(item, f"{where}.{key}")


def check(value: Any, spec: Spec, source: str) -> None:
    """Raise DataError naming ``source`` and the first field of ``value`` that ``spec`` refuses."""
    spec.check(value, source)


# Field types shared by report.json, the peers document and arm_check.json.
THREADS = Int(1, 4096)
SEQ_LEN = OneOf(Int(1, 1_000_000), Str(choices=("real",)), what="an int or 'real'")
MS = Num(0.0, 1e9)  # a duration in milliseconds (up to ~11 days)
RATIO = Num(0.0, 1.0)  # accuracy, agreement
TEXT = Str()
LATENCY = Obj({"count": Int(1, 10**9), "min": Optional(MS), "median": Optional(MS), "mean": Optional(MS),
               "p90": Optional(MS), "p99": Optional(MS), "std": Optional(MS), "max": Optional(MS)})
