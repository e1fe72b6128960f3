"""``albert-edge predict MODEL [TEXT ...]``: run a packed .tflite/.onnx file on texts.

The file's pack names its task, and the task's serving adapter does the rest
(``runtime/serving.py``): a classifier prints ``label<TAB>score<TAB>text`` per text, a token
classifier one ``label<TAB>start<TAB>end<TAB>score<TAB>text`` line per entity, a question answerer
``start<TAB>end<TAB>score<TAB>answer``; ``--json`` prints one object per input. A task with
no runtime of its own runs through the generic ``TaskModel`` and prints its ``interpret`` result.
Each adapter declares the flags it reads (``Serving.flags``: ``--batch-size``, ``--stride``,
``--question``, ...); this module adds them all and refuses one given to a model of another task.

Texts come from the arguments, else ``--file``, else stdin (one per line, blank lines
skipped). A TAB inside a line separates the two texts of a sentence pair; with
``--labelled`` the first column is a gold label (the evaluate TSV format) and is echoed.
A ``.jsonl`` ``--file`` is the task's own input format, for tasks that have one
(``Serving.jsonl``). Imports only the runtime: never TensorFlow.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from albert_edge.cli import arg_types
from albert_edge.errors import DataError
from albert_edge.runtime.backends import BACKEND_NAMES
from albert_edge.runtime.serving import Row, serving_of


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "predict", help="run a packed .tflite or .onnx model on texts (classify, tag entities, answer, ...)",
        description="Print each text's result as the model's task says (a label and score, entities, an answer). "
                    "Texts come from the arguments, --file, or stdin; a TAB in a line separates the two texts of "
                    "a pair.")
    parser.add_argument("model", help="packed .tflite or .onnx model file (the file quantize chose is OUT/model.tflite)")
    parser.add_argument("texts", nargs="*", metavar="TEXT", help="texts to run (default: read --file or stdin)")
    parser.add_argument("--file", help="UTF-8 text/TSV file, one text (or text_a<TAB>text_b) per line")
    parser.add_argument("--labelled", action="store_true", help="the first TSV column is a gold label; echo it")
    parser.add_argument("--threads", type=arg_types.threads, default=None, help="interpreter threads (default: cores, at most 4)")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default="auto", help="interpreter (default: auto)")
    parser.add_argument("--json", action="store_true", help="emit one JSON object per line")
    for flag, keywords in task_flags().items():
        parser.add_argument(flag, **keywords)
    # TEXTs may follow options (MODEL --json TEXT), as every command's positionals may (cli._parse).
    parser.set_defaults(run=run)


def task_flags() -> dict[str, dict[str, Any]]:
    """Every registered task's predict flags, one argparse entry each; a flag two tasks read is
    declared once with both helps (their defaults must agree). A ``type`` given as a string names a
    converter in ``cli/arg_types.py`` (the runtime sits below the CLI and does not import it)."""
    from albert_edge.tasks import task_classes

    merged: dict[str, dict[str, Any]] = {}
    for cls in task_classes():
        for flag, keywords in serving_of(cls.name).flags.items():
            if flag in merged:
                if keywords.get("help") and keywords["help"] not in merged[flag].get("help", ""):
                    merged[flag]["help"] = f"{merged[flag]['help']}; {keywords['help']}"
                continue
            merged[flag] = dict(keywords)
            if isinstance(merged[flag].get("type"), str):
                merged[flag]["type"] = getattr(arg_types, merged[flag]["type"])
    return merged


def _flag_dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _refuse_foreign_flags(args: argparse.Namespace, task: Any, parser_defaults: dict[str, Any]) -> None:
    """A flag no task of this model reads, given a non-default value, is a mistake worth one line."""
    from albert_edge.tasks import task_classes

    own = set(serving_of(task).flags)
    for cls in task_classes():
        for flag in serving_of(cls.name).flags:
            dest = _flag_dest(flag)
            if flag not in own and getattr(args, dest, None) != parser_defaults.get(dest):
                raise DataError(f"{args.model}: {flag} is for {cls.name} models; this model's task is {task.name}")


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


#: More input than any batch of texts to predict: /dev/zero or a disk image given as --file stops here.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _capped(handle: Any, source: str) -> bytes:
    """At most MAX_INPUT_BYTES of ``handle``; DataError beyond (a file without end is not read forever)."""
    data = handle.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise DataError(f"{source}: more than {MAX_INPUT_BYTES // (1024 * 1024)} MB of input; split it into smaller files")
    return data


def _read_lines(path: str | None) -> tuple[list[str], str]:
    """Lines of ``--file`` or stdin, decoded as strict UTF-8 whatever the locale or PYTHONIOENCODING."""
    if path is None:
        if sys.stdin is None:
            # Python sets it to None when fd 0 was closed at start (`cmd <&-`).
            raise DataError("<stdin>: standard input is closed; give TEXT arguments or --file")
        raw = getattr(sys.stdin, "buffer", None)
        # A text-only stdin (an embedding app, a test) has been decoded already.
        text = sys.stdin.read() if raw is None else _decode(_capped(raw, "<stdin>"), "<stdin>")
        return text.splitlines(), "<stdin>"
    try:
        with Path(path).open("rb") as handle:
            return _decode(_capped(handle, path), path).splitlines(), path
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
        cols = text.split("\t")  # the same rule as a line of --file or stdin: question<TAB>context, text_a<TAB>text_b
        if len(cols) > 2:
            raise DataError(f"{where}: expected text or text_a<TAB>text_b, found {len(cols)} columns")
        rows.append((where, None, cols[0], cols[1] if len(cols) == 2 else None))
    return rows


def run(args: argparse.Namespace) -> int:
    from albert_edge.runtime.pack import read_model_bytes, read_pack_bytes
    from albert_edge.tasks import task_classes

    # One read of the model: the pack says which task it is, then its adapter runs the same bytes.
    data = read_model_bytes(args.model)
    task = read_pack_bytes(data, str(args.model)).task_object(str(args.model))
    serving = serving_of(task)
    defaults = {_flag_dest(flag): keywords.get("default") for flag, keywords in task_flags().items()}
    _refuse_foreign_flags(args, task, defaults)
    if args.file is not None and str(args.file).lower().endswith(".jsonl") and not serving.jsonl:
        readers = ", ".join(cls.name for cls in task_classes() if serving_of(cls.name).jsonl) or "none"
        raise DataError(f"{args.file}: .jsonl input is read by models of a task with its own format ({readers}); "
                        f"this model's task is {task.name}: give one text per line")

    def read_rows() -> list[Row]:
        if args.texts:
            return _argument_rows(args.texts)
        lines, source = _read_lines(args.file)
        rows = _rows(lines, source, args.labelled)
        if not rows:
            raise DataError(f"{source}: no texts to run")
        return rows

    for record, lines in serving.predict(task, data, str(args.model), vars(args), read_rows):
        if args.json:
            print(json.dumps(record, ensure_ascii=False))
        else:
            for line in lines:
                print(line)
    return 0
