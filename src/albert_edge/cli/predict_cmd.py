"""``albert-edge predict MODEL [TEXT ...]``: classify texts with a packed .tflite/.onnx file.

The task comes from the file's pack: a token-classification (NER) model prints each text's
entities instead (one ``label<TAB>start<TAB>end<TAB>score<TAB>text`` line per entity, a blank line
after each input text; ``--json`` gives one object per text with its ``entities``).

Texts come from the arguments, else ``--file``, else stdin (one per line, blank lines
skipped). A TAB inside a line separates the two texts of a sentence pair; with
``--labelled`` the first column is a gold label (the evaluate TSV format) and is echoed.
Imports only the runtime: never TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from albert_edge.errors import DataError
from albert_edge.runtime.backends import BACKEND_NAMES
from albert_edge.runtime.classifier import TextClassifier


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="classify texts with a packed .tflite or .onnx model",
        description="Print the label and score of each text (one line each). Texts come from the arguments, "
                    "--file, or stdin; a TAB in a line separates the two texts of a pair.")
    parser.add_argument("model", help="packed .tflite or .onnx model file")
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to classify (default: read --file or stdin)")
    parser.add_argument("--file", help="UTF-8 text/TSV file, one text (or text_a<TAB>text_b) per line")
    parser.add_argument("--labelled", action="store_true", help="the first TSV column is a gold label; echo it")
    parser.add_argument("--threads", type=int, default=None, help="interpreter threads (default: cores, at most 4)")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto", help="interpreter (default: auto)")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per invoke, grouped by length")
    parser.add_argument("--json", action="store_true", help="emit one JSON object per line")
    parser.add_argument("--stride", type=int, default=None, metavar="N",
                        help="token classification: tokens shared by consecutive windows of a long text "
                             "(default: a quarter of the window, at most 32)")
    parser.set_defaults(run=run)


def _rows(lines: list[str], source: str, labelled: bool) -> list[tuple[str | None, str, str | None]]:
    """(gold, text_a, text_b) per non-blank line."""
    rows = []
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        cols = line.split("\t")
        gold = None
        if labelled:
            if len(cols) < 2:
                raise DataError(f"{source}:{number}: --labelled expects label<TAB>text[<TAB>text_b]")
            gold, cols = cols[0].strip(), cols[1:]
        if len(cols) > 2:
            raise DataError(f"{source}:{number}: expected text or text_a<TAB>text_b, found {len(cols)} columns")
        rows.append((gold, cols[0], cols[1] if len(cols) == 2 else None))
    return rows


def _read_lines(path: str | None) -> tuple[list[str], str]:
    if path is None:
        return sys.stdin.read().splitlines(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8-sig").splitlines(), path
    except FileNotFoundError:
        raise DataError(f"{path}: input file not found") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read input file ({exc.strerror or exc})") from None


def _print_entities(args: argparse.Namespace, rows: list[tuple[str | None, str, str | None]]) -> int:
    """Token classification: entities with character offsets into each text as given."""
    from albert_edge.runtime.token_classifier import TokenClassifier

    if any(text_b is not None for _, _, text_b in rows):
        raise DataError(f"{args.model}: a token-classification model takes single texts, not TAB-separated pairs")
    ner = TokenClassifier.from_file(args.model, num_threads=args.threads, backend=args.backend, stride=args.stride)
    for gold, text, _ in rows:
        entities = ner.predict(text)
        if args.json:
            record = {"text": text, "entities": [{"label": e.label, "start": e.start, "end": e.end, "text": e.text,
                                                  "score": round(e.score, 6)} for e in entities]}
            if gold is not None:
                record["gold"] = gold
            print(json.dumps(record, ensure_ascii=False))
        else:
            for e in entities:
                print(f"{e.label}\t{e.start}\t{e.end}\t{e.score:.4f}\t{e.text}")
            print()
    return 0


def run(args: argparse.Namespace) -> int:
    from albert_edge.runtime.pack import read_pack
    from albert_edge.tasks import TokenClassification

    if args.texts:
        rows = [(None, t, None) for t in args.texts]
    else:
        lines, source = _read_lines(args.file)
        rows = _rows(lines, source, args.labelled)
        if not rows:
            raise DataError(f"{source}: no texts to classify")
    if isinstance(read_pack(args.model).task_object(args.model), TokenClassification):
        return _print_entities(args, rows)
    clf = TextClassifier.from_file(args.model, num_threads=args.threads, backend=args.backend)
    # Keep single texts and pairs apart: a batch is either all singles or all pairs.
    order_single = [i for i, r in enumerate(rows) if r[2] is None]
    order_pair = [i for i, r in enumerate(rows) if r[2] is not None]
    preds: dict[int, object] = {}
    if order_single:
        for i, p in zip(order_single, clf.predict_batch([rows[i][1] for i in order_single], batch_size=args.batch_size)):
            preds[i] = p
    if order_pair:
        batch = clf.predict_batch([rows[i][1] for i in order_pair], pairs=[rows[i][2] for i in order_pair], batch_size=args.batch_size)
        for i, p in zip(order_pair, batch):
            preds[i] = p
    for i, (gold, text_a, text_b) in enumerate(rows):
        p = preds[i]
        if args.json:
            record = {"text": text_a, "text_b": text_b, "label": p.label, "score": round(p.score, 6),
                      "scores": {k: round(v, 6) for k, v in p.scores.items()}, "truncated": p.truncated,
                      "num_tokens": p.num_tokens}
            if gold is not None:
                record["gold"] = gold
            print(json.dumps(record, ensure_ascii=False))
        else:
            shown = text_a if text_b is None else f"{text_a} ||| {text_b}"
            flag = " [truncated]" if p.truncated else ""
            prefix = f"{gold}\t" if gold is not None else ""
            print(f"{prefix}{p.label}\t{p.score:.4f}\t{shown}{flag}")
    return 0
