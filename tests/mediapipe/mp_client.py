"""What the MediaPipe runner scripts share: the per-text loop and the JSON reply.

Imported by run_text_classifier.py and run_text_embedder.py as a sibling module (they run as
``python tests/mediapipe/run_*.py`` in the mediapipe venv, so this folder is sys.path[0]).
Imports nothing from albert_edge: the client stays independent.
"""

import json
import sys
from collections.abc import Callable
from typing import Any

try:
    from importlib.metadata import version

    MP_VERSION = version("mediapipe")
except Exception:  # noqa: BLE001
    MP_VERSION = "unknown"


def run_texts(texts: list[str], run_one: Callable[[str], Any], heads_of: Callable[[Any], list[dict]]) -> list[dict]:
    """``{"heads": heads_of(run_one(t))}`` per text, or ``{"error": msg}`` where the task raised:
    every failure is reported per text, so one bad text does not hide the others' results."""
    out = []
    for t in texts:
        try:
            result = run_one(t)
        except Exception as exc:  # noqa: BLE001 - every failure is reported per text
            out.append({"error": f"{type(exc).__name__}: {exc}"})
            continue
        out.append({"heads": heads_of(result)})
    return out


def reply(results: list[dict]) -> None:
    """The one JSON object on stdout: the results and the mediapipe version that made them."""
    json.dump({"version": MP_VERSION, "results": results}, sys.stdout)
