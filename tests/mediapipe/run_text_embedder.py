"""Run MediaPipe's real TextEmbedder on texts; executed by the mediapipe venv's Python, not ours.

Reads JSON from stdin: {"model": path, "texts": [...], "l2_normalize": bool, "values_of": [head indices]}.
Writes one JSON object to stdout: {"results": [{"heads": [{"head": name, "index": i, "size": n,
"embedding": [...] (only for the heads in values_of, default [0])}, ...]} | {"error": msg}, ...],
"version": ...}. Float embeddings only (MediaPipe's own quantize option is off). values_of keeps the
output small: a hidden-state head is max_seq_len x H floats per text.
Imports nothing from albert_edge: this is the independent client.
"""

import json
import sys

from mediapipe.tasks.python import text
from mediapipe.tasks.python.core import base_options as base
from mp_client import reply, run_texts


def main() -> None:
    job = json.load(sys.stdin)
    options = text.TextEmbedderOptions(base_options=base.BaseOptions(model_asset_path=job["model"]),
                                       l2_normalize=bool(job.get("l2_normalize", False)), quantize=False)
    values_of = set(job.get("values_of", [0]))

    def heads_of(result) -> list[dict]:
        heads = []
        for e in result.embeddings:
            head = {"head": e.head_name, "index": e.head_index, "size": len(e.embedding)}
            if e.head_index in values_of:
                head["embedding"] = [float(v) for v in e.embedding]
            heads.append(head)
        return heads

    with text.TextEmbedder.create_from_options(options) as embedder:
        out = run_texts(job["texts"], embedder.embed, heads_of)
    reply(out)


if __name__ == "__main__":
    main()
