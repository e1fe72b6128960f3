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
from mp_client import reply, run_texts


def main() -> None:
    job = json.load(sys.stdin)
    options = text.TextClassifierOptions(base_options=base.BaseOptions(model_asset_path=job["model"]),
                                         max_results=-1)

    def heads_of(result) -> list[dict]:
        heads = []
        for head in result.classifications:
            cats = sorted(head.categories, key=lambda c: c.index)
            heads.append({"head": head.head_name, "index": head.head_index,
                          "categories": [[c.category_name, c.score] for c in cats]})
        return heads

    with text.TextClassifier.create_from_options(options) as classifier:
        out = run_texts(job["texts"], classifier.classify, heads_of)
    reply(out)


if __name__ == "__main__":
    main()
