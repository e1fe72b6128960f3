"""The ``albert-edge`` command: one module per subcommand, no logic of its own.

Each subcommand module in this package exposes ``add_parser(subparsers)`` and a ``run(args)``
that calls the library and prints. ``main`` is the one error boundary: any exception becomes
one line on stderr and a non-zero exit code (see ``failure.describe``), the traceback only with
``--debug``; interpreter chatter goes to a log file unless ``--verbose`` (see
``albert_edge.chatter``); a closed stdout pipe (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from albert_edge import __version__, progress
from albert_edge.chatter import chatter_to_log, discard_log, log_has_content, new_log_path
from albert_edge.cli.failure import describe, log_may_explain
from albert_edge.cli.hub_args import resolve_hub_sources
from albert_edge.errors import OutputError

# Subcommand name -> module in albert_edge.cli. Modules are imported lazily so that
# `albert-edge predict` never imports TensorFlow.
COMMANDS: dict[str, str] = {
    "inspect": "inspect_cmd",
    "convert": "convert_cmd",
    "quantize": "quantize_cmd",
    "predict": "predict_cmd",
    "embed": "embed_cmd",
    "bench": "bench_cmd",
    "pretrain": "pretrain_cmd",
    "finetune": "finetune_cmd",
    "demo": "demo_cmd",
    "data": "data_cmd",
    "android-assets": "android_cmd",
    "arm-check": "arm_cmd",
    "card": "card_cmd",
    "repack": "repack_cmd",
}


def _load(name: str):
    return importlib.import_module(f"albert_edge.cli.{COMMANDS[name]}")


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one stderr line, like every other error of the command.

    The stock parser prints the whole usage block first; a script reading stderr then has to find
    the line that matters. Subparsers inherit the class, so every subcommand behaves alike.
    """

    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser; with ``only`` set, import just that subcommand's module."""
    parser = OneLineParser(prog="albert-edge", description="ALBERT from checkpoint to phone.")
    parser.add_argument("--version", action="version", version=f"albert-edge {__version__}")
    _add_global_flags(parser, default=False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            subparsers.add_parser(name, add_help=False)
            continue
        try:
            module = _load(name)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("albert_edge.cli."):
                continue
            raise
        module.add_parser(subparsers)
    for sub in _nested_parsers(parser):
        # Accepted after the subcommand too; SUPPRESS keeps the subparser from resetting the value.
        _add_global_flags(sub, default=argparse.SUPPRESS)
    return parser


def _subparsers_action(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _nested_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every subcommand's parser, nested ones (``data stats``) included."""
    action = _subparsers_action(parser)
    if action is None:
        return []
    found = []
    for sub in dict.fromkeys(action.choices.values()):
        found += [sub, *_nested_parsers(sub)]
    return found


def _add_global_flags(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--debug", action="store_true", default=default,
                        help="on error, show the Python traceback after the one-line message")
    parser.add_argument("--verbose", action="store_true", default=default,
                        help="let TensorFlow / LiteRT / ONNX Runtime messages through to stderr instead of a log file")
    parser.add_argument("--no-progress", action="store_true", default=default,
                        help="no progress bar or step lines on stderr (without a terminal they are a summary "
                             "written when the command succeeds)")


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; every subcommand takes its options before, between or after its positionals.

    argparse's one-pass parser stops filling a positional list at the first option, so
    ``embed MODEL --json TEXT`` or ``bench A.tflite --rounds 3 B.tflite`` would leave TEXT or B as
    "unrecognized". When the first pass leaves anything over, the innermost subcommand's own
    arguments are parsed again with ``parse_intermixed_args`` (options first, then positionals).
    """
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    leaf, rest, chosen = parser, argv, {}
    action = _subparsers_action(leaf)
    while action is not None and getattr(args, action.dest, None) in action.choices:
        name = getattr(args, action.dest)
        chosen[action.dest] = name
        rest = rest[rest.index(name) + 1:]
        leaf = action.choices[name]
        action = _subparsers_action(leaf)
    if leaf is parser or action is not None:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    top = argparse.Namespace(**chosen, debug=args.debug, verbose=args.verbose, no_progress=args.no_progress)
    return leaf.parse_intermixed_args(rest, namespace=top)


def _quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so that Python's exit-time flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


def _run(args: argparse.Namespace) -> int:
    if sys.stdout is None:
        # Python sets it to None when fd 1 was closed at start (`cmd >&-`): every result would be lost.
        raise OutputError("standard output is closed; nothing could be printed (redirect it to a file instead)")
    resolve_hub_sources(args)
    # Step lines and bars (albert_edge.progress); held summary lines are written only on success,
    # so that an error stays one line.
    with progress.session(args.command, enabled=not args.no_progress):
        code = int(args.run(args) or 0)
    # Pipes are block-buffered: surface a closed reader (EPIPE) here, not at interpreter exit.
    sys.stdout.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    only = command if command in COMMANDS else None
    parser = build_parser(only=only)
    args = _parse(parser, argv)
    if not getattr(args, "command", None) or not hasattr(args, "run"):
        parser.print_help()
        return 1
    log = None if args.verbose else new_log_path(args.command)
    try:
        if args.verbose:
            return _run(args)
        with chatter_to_log(log or Path(os.devnull)):
            return _run(args)
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except KeyboardInterrupt:
        print(f"albert-edge {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - this is the boundary: every error becomes one line
        message, code = describe(exc)
        if args.debug:
            traceback.print_exc()
        if log is not None and log_may_explain(exc, code) and log_has_content(log):
            message += f" (interpreter messages: {log})"
            log = None
        print(f"albert-edge {args.command}: error: {message}", file=sys.stderr)
        return code
    finally:
        if log is not None:
            discard_log(log)


if __name__ == "__main__":
    sys.exit(main())
