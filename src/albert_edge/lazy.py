"""Package attributes imported on first use.

`albert_edge.runtime` must import without TensorFlow and `albert_edge.convert` should not pay for
TensorFlow until a converter is asked for, yet both want `from albert_edge.X import Name` to work.
A module-level ``__getattr__`` built here imports the defining submodule only when a name is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str],
                 namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that loads ``exports[name]`` (a submodule path) and caches the value."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    return __getattr__
