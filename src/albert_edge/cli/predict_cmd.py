"""``albert-edge predict MODEL [TEXT ...]``: classify texts with a packed .tflite/.onnx file.

The task comes from the file's pack: a token-classification (NER) model prints each text's
entities instead (one ``label<TAB>start<TAB>end<TAB>score<TAB>text`` line per entity, a blank line
after each input text; ``--json`` gives one object per text with its ``entities``). A
question-answering model answers ``question<TAB>context`` lines (or each TEXT / line as a context
for ``--question``, or a SQuAD-style ``.jsonl`` ``--file``) with one
``start<TAB>end<TAB>score<TAB>answer`` line each (``--json``: one object with the offsets into the
context as given).

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

from albert_edge.cli.arg_types import positive_int
from albert_edge.errors import DataError, TokenizerError
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
    parser.add_argument("--threads", type=positive_int, default=None, help="interpreter threads (default: cores, at most 4)")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto", help="interpreter (default: auto)")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="texts per invoke, grouped by length")
    parser.add_argument("--json", action="store_true", help="emit one JSON object per line")
    parser.add_argument("--stride", type=int, default=None, metavar="N",
                        help="token classification / question answering: tokens shared by consecutive windows "
                             "of a long text (default: a quarter of the window, at most 32 / half, at most 128)")
    parser.add_argument("--question", default=None,
                        help="question answering: ask this question of every TEXT (or line), each a context")
    parser.add_argument("--max-answer-tokens", type=positive_int, default=30, metavar="N",
                        help="question answering: longest answer span in tokens (default: 30, as run_squad)")
    # TEXTs may follow options (predict MODEL --json TEXT): parsed with parse_intermixed_args.
    parser.set_defaults(run=run, intermixed=True)


Row = tuple[str, str | None, str, str | None]


def _rows(lines: list[str], source: str, labelled: bool) -> list[Row]:
    """(where, gold, text_a, text_b) per non-blank line; ``where`` is ``source:line`` for messages."""
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
        rows.append((f"{source}:{number}", gold, cols[0], cols[1] if len(cols) == 2 else None))
    return rows


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{source}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _read_lines(path: str | None) -> tuple[list[str], str]:
    """Lines of ``--file`` or stdin, decoded as strict UTF-8 whatever the locale or PYTHONIOENCODING."""
    if path is None:
        if sys.stdin is None:
            # Python sets it to None when fd 0 was closed at start (`cmd <&-`).
            raise DataError("<stdin>: standard input is closed; give TEXT arguments or --file")
        raw = getattr(sys.stdin, "buffer", None)
        # A text-only stdin (an embedding app, a test) has been decoded already.
        text = sys.stdin.read() if raw is None else _decode(raw.read(), "<stdin>")
        return text.splitlines(), "<stdin>"
    try:
        return _decode(Path(path).read_bytes(), path).splitlines(), path
    except FileNotFoundError:
        raise DataError(f"{path}: input file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read input file ({exc.strerror or exc})") from None


def _argument_rows(texts: list[str]) -> list[Row]:
    """Rows from TEXT arguments; bytes that were not UTF-8 reach Python as lone surrogates."""
    rows: list[Row] = []
    for number, text in enumerate(texts, start=1):
        where = f"TEXT argument {number}"
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataError(f"{where}: not valid UTF-8 (undecodable byte at character {exc.start + 1})") from None
        rows.append((where, None, text, None))
    return rows


def _print_entities(args: argparse.Namespace, data: bytes, rows: list[Row]) -> int:
    """Token classification: entities with character offsets into each text as given."""
    from albert_edge.runtime.token_classifier import TokenClassifier

    if any(text_b is not None for _, _, _, text_b in rows):
        raise DataError(f"{args.model}: a token-classification model takes single texts, not TAB-separated pairs")
    ner = TokenClassifier.from_bytes(data, str(args.model), num_threads=args.threads, backend=args.backend,
                                     stride=args.stride)
    for _, gold, text, _ in rows:
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


def _qa_rows(args: argparse.Namespace, rows: list[Row] | None = None) -> list[tuple[str, str, str, list[str] | None]]:
    """(where, question, context, gold answers) per question, from the arguments, --file or stdin
    (``rows``: those lines, already read)."""
    if args.file is not None and str(args.file).lower().endswith(".jsonl"):
        from albert_edge.tasks.qa_data import read_qa_jsonl

        if args.question is not None:
            raise DataError(f"{args.file}: a .jsonl file carries its own questions; drop --question")
        return [(f"{args.file}:{e.line}", e.question, e.context, [t for t, _ in e.answers] or None)
                for e in read_qa_jsonl(args.file)]
    if rows is None and args.texts:
        rows = _argument_rows(args.texts)
    elif rows is None:
        lines, source = _read_lines(args.file)
        rows = _rows(lines, source, False)
        if not rows:
            raise DataError(f"{source}: no questions to answer")
    out = []
    for where, _, text_a, text_b in rows:
        if args.question is not None:
            if text_b is not None:
                raise DataError(f"{where}: with --question each line is one context, found a TAB")
            out.append((where, args.question, text_a, None))
        elif text_b is None:
            raise DataError(f"{where}: a question-answering model needs question<TAB>context "
                            "(or --question, or a .jsonl --file)")
        else:
            out.append((where, text_a, text_b, None))
    return out


def _print_answers(args: argparse.Namespace, data: bytes, read: list[Row] | None = None) -> int:
    """Question answering: the answer span with offsets into each context as given."""
    from albert_edge.runtime.question_answerer import QuestionAnswerer

    rows = _qa_rows(args, read)
    qa = QuestionAnswerer.from_bytes(data, str(args.model), num_threads=args.threads, backend=args.backend,
                                     stride=args.stride, max_answer_tokens=args.max_answer_tokens)
    for where, question, context, gold in rows:
        try:
            a = qa.answer(question, context)
        except TokenizerError as exc:
            raise DataError(f"{where}: {exc}") from None
        if args.json:
            record = {"question": question, "answer": a.text, "start": a.start, "end": a.end,
                      "score": round(a.score, 6), "windows": a.windows}
            if gold is not None:
                record["gold"] = gold
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(f"{a.start}\t{a.end}\t{a.score:.4f}\t{a.text}")
    return 0


def run(args: argparse.Namespace) -> int:
    from albert_edge.runtime.pack import read_model_bytes, read_pack_bytes
    from albert_edge.tasks import QuestionAnswering, TokenClassification

    if args.question is not None or (args.file is not None and str(args.file).lower().endswith(".jsonl")):
        data = read_model_bytes(args.model)
        if not isinstance(read_pack_bytes(data, str(args.model)).task_object(str(args.model)), QuestionAnswering):
            raise DataError(f"{args.model}: --question and .jsonl question files are for question-answering models")
        return _print_answers(args, data)
    if args.texts:
        rows = _argument_rows(args.texts)
    else:
        lines, source = _read_lines(args.file)
        rows = _rows(lines, source, args.labelled)
        if not rows:
            raise DataError(f"{source}: no texts to classify")
    # One read of the model: the pack says which task it is, then the same bytes are loaded.
    data = read_model_bytes(args.model)
    task = read_pack_bytes(data, str(args.model)).task_object(str(args.model))
    if isinstance(task, QuestionAnswering):
        return _print_answers(args, data, rows)
    if isinstance(task, TokenClassification):
        return _print_entities(args, data, rows)
    clf = TextClassifier.from_bytes(data, str(args.model), num_threads=args.threads, backend=args.backend)
    encs = []
    for where, _, text_a, text_b in rows:
        try:
            encs.append(clf.encode(text_a, text_b))
        except TokenizerError as exc:
            raise DataError(f"{where}: {exc}") from None
    preds = clf.predict_encoded(encs, batch_size=args.batch_size)
    for p, (_, gold, text_a, text_b) in zip(preds, rows):
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
