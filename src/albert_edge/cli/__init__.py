"""The ``albert-edge`` command: one module per subcommand, no logic of its own.

Each subcommand module in this package exposes ``add_parser(subparsers)`` and a ``run(args)``
that calls the library and prints. ``main`` turns every AlbertEdgeError into one line on
stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from albert_edge import __version__
from albert_edge.errors import AlbertEdgeError

# Subcommand name -> module in albert_edge.cli. Modules are imported lazily so that
# `albert-edge predict` never imports TensorFlow.
COMMANDS: dict[str, str] = {
    "inspect": "inspect_cmd",
    "convert": "convert_cmd",
    "quantize": "quantize_cmd",
    "predict": "predict_cmd",
    "bench": "bench_cmd",
    "pretrain": "pretrain_cmd",
    "finetune": "finetune_cmd",
    "demo": "demo_cmd",
    "data": "data_cmd",
    "android-assets": "android_cmd",
    "arm-check": "arm_cmd",
}


def _load(name: str):
    return importlib.import_module(f"albert_edge.cli.{COMMANDS[name]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the top-level parser; with ``only`` set, import just that subcommand's module."""
    parser = argparse.ArgumentParser(prog="albert-edge", description="ALBERT from checkpoint to phone.")
    parser.add_argument("--version", action="version", version=f"albert-edge {__version__}")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    only = command if command in COMMANDS else None
    parser = build_parser(only=only)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None) or not hasattr(args, "run"):
        parser.print_help()
        return 1
    try:
        return int(args.run(args) or 0)
    except AlbertEdgeError as exc:
        print(f"albert-edge {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"albert-edge {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
