"""``albert-edge embed MODEL [TEXT ...]``: sentence embeddings from a packed feature-extraction model.

Texts come from the arguments, else ``--file``, else stdin (one per line, blank lines skipped).
``--json`` prints one object per text with the full vector; the default prints each text's
nearest other text by cosine (what a dedup or search user checks first). Everything is computed
before anything is printed, so a bad text leaves no partial output. Imports only the runtime.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from albert_edge.cli import arg_types
from albert_edge.cli.predict_cmd import _read_lines
from albert_edge.errors import DataError
from albert_edge.runtime.backends import BACKEND_NAMES
from albert_edge.runtime.embedder import TextEmbedder
from albert_edge.runtime.neighbours import nearest_neighbours


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "embed", help="sentence embeddings with a packed .tflite or .onnx feature-extraction model",
        description="Embed texts (arguments, --file, or stdin, one per line) with the pooling and normalisation "
                    "the model's pack records. Prints each text's nearest neighbour by cosine, or with --json one "
                    "object per text holding its embedding.")
    parser.add_argument("model", help="packed .tflite or .onnx feature-extraction model file")
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to embed (default: read --file or stdin)")
    parser.add_argument("--file", help="UTF-8 text file, one text per line")
    parser.add_argument("--threads", type=arg_types.threads, default=None, help="interpreter threads (default: cores, at most 4)")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto", help="interpreter (default: auto)")
    parser.add_argument("--batch-size", type=arg_types.batch_size, default=32, help="texts per invoke, grouped by length")
    parser.add_argument("--json", action="store_true", help="emit one JSON object per line with the embedding")
    # TEXTs may follow options (MODEL --json TEXT), as every command's positionals may (cli._parse).
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.texts:
        texts = list(args.texts)
    else:
        lines, source = _read_lines(args.file)
        texts = [line.rstrip("\r\n") for line in lines if line.strip()]
        if not texts:
            raise DataError(f"{source}: no texts to embed")
    embedder = TextEmbedder.from_file(args.model, num_threads=args.threads, backend=args.backend)
    vectors = embedder.embed_batch(texts, batch_size=args.batch_size)
    encodings = [embedder.encode(t) for t in texts]
    lines_out = []
    if args.json:
        for text, vector, enc in zip(texts, vectors, encodings):
            lines_out.append(json.dumps({"text": text, "embedding": [round(float(x), 7) for x in vector],
                                         "dimension": int(vector.shape[0]), "num_tokens": enc.length,
                                         "truncated": enc.truncated}, ensure_ascii=False))
    else:
        nearest_index, nearest_cosine = nearest_neighbours(vectors)
        for i, text in enumerate(texts):
            norm = float(np.linalg.norm(vectors[i]))
            nearest = "" if nearest_index[i] < 0 else (f"\tnearest {int(nearest_index[i]) + 1} "
                                                       f"(cosine {float(nearest_cosine[i]):.4f})")
            flag = " [truncated]" if encodings[i].truncated else ""
            lines_out.append(f"{i + 1}\tdim {vectors.shape[1]}\tnorm {norm:.4f}{nearest}\t{text}{flag}")
    print("\n".join(lines_out))
    return 0
