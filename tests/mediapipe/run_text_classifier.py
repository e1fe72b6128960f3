"""Run MediaPipe's real TextClassifier on texts; executed by the mediapipe venv's Python, not ours.

Reads JSON from stdin: {"model": path, "texts": [...]}. Writes one JSON object to stdout:
{"results": [{"categories": [[label, score], ...], "head": name} | {"error": msg}, ...], "version": ...}
Categories of head 0, in label-file order (not sorted), so the caller can compare every score.
Imports nothing from albert_edge: this is the independent client.
"""

import json
import sys

from mediapipe.tasks.python import text
from mediapipe.tasks.python.core import base_options as base

try:
    from importlib.metadata import version

    MP_VERSION = version("mediapipe")
except Exception:  # noqa: BLE001
    MP_VERSION = "unknown"


def main() -> None:
    job = json.load(sys.stdin)
    options = text.TextClassifierOptions(base_options=base.BaseOptions(model_asset_path=job["model"]),
                                         max_results=-1)
    out = []
    with text.TextClassifier.create_from_options(options) as classifier:
        for t in job["texts"]:
            try:
                result = classifier.classify(t)
            except Exception as exc:  # noqa: BLE001 - every failure is reported per text
                out.append({"error": f"{type(exc).__name__}: {exc}"})
                continue
            heads = []
            for head in result.classifications:
                cats = sorted(head.categories, key=lambda c: c.index)
                heads.append({"head": head.head_name, "index": head.head_index,
                              "categories": [[c.category_name, c.score] for c in cats]})
            out.append({"heads": heads})
    json.dump({"version": MP_VERSION, "results": out}, sys.stdout)


if __name__ == "__main__":
    main()
