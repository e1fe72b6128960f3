"""docs/cli.md's flag tables, made from the argparse parsers themselves.

A hand-kept flag list drifts from the parsers (about 45 flags had gone missing from it). Here each
command's table is regenerated between two markers, so the prose a person writes around a table stays
theirs and the table itself is always the parser's:

    <!-- BEGIN generated flags: convert -->
    | argument | default | what it does |
    ...
    <!-- END generated flags: convert -->

``python -m albert_edge.cli.docgen`` rewrites docs/cli.md (a command without a block gets a new section
at the end); ``--check`` changes nothing and exits 1 naming each stale or missing table, which is what
tests/test_cli_docs.py runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from albert_edge.cli import _subparsers_action, build_parser

GLOBAL = "albert-edge"
_HIDDEN = {"help", "version"}
_GLOBAL_DESTS = {"debug", "verbose", "no_progress"}
_BLOCK = re.compile(r"<!-- BEGIN generated flags: (?P<name>[^>]+?) -->\n.*?<!-- END generated flags: (?P=name) -->",
                    re.S)


def command_parsers(parser: argparse.ArgumentParser | None = None) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) for the top level and every (nested) subcommand that takes arguments of its own."""
    parser = parser or build_parser()
    yield GLOBAL, parser
    yield from _walk(parser, "")


def _walk(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    action = _subparsers_action(parser)
    if action is None:
        return
    for name, sub in action.choices.items():
        full = f"{prefix}{name}"
        if _subparsers_action(sub) is None:
            yield full, sub
        yield from _walk(sub, f"{full} ")


def documented_actions(name: str, parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a command's table lists: its own, the global flags only at the top level."""
    keep = []
    for action in parser._actions:
        if action.dest in _HIDDEN or isinstance(action, argparse._SubParsersAction):
            continue
        if (action.dest in _GLOBAL_DESTS) != (name == GLOBAL):
            continue
        keep.append(action)
    return keep


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _spelling(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    if not action.option_strings:
        return f"`{formatter._metavar_formatter(action, action.dest.upper())(1)[0]}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    return f"`{names} {formatter._format_args(action, action.dest.upper())}`"


def _default(action: argparse.Action) -> str:
    value = action.default
    if action.required or value in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return ""
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    return f"`{_cell(str(value))}`"


def help_text(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    """The help as ``--help`` prints it (``%(default)s`` filled in, ``%%`` unescaped); '' when there is none."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def flag_table(name: str, parser: argparse.ArgumentParser) -> str:
    """One command's markdown table, markers included."""
    formatter = parser._get_formatter()
    rows = ["| argument | default | what it does |", "|---|---|---|"]
    for action in documented_actions(name, parser):
        what = _cell(help_text(action, parser))
        if action.required and action.option_strings:
            what = f"required; {what}"
        rows.append(f"| {_cell(_spelling(action, formatter))} | {_default(action)} | {what} |")
    body = "\n".join(rows)
    return f"<!-- BEGIN generated flags: {name} -->\n{body}\n<!-- END generated flags: {name} -->"


def regenerate(text: str, parser: argparse.ArgumentParser | None = None) -> tuple[str, list[str]]:
    """``text`` with every table made anew; also the names of the tables that were stale, missing or extra."""
    tables = dict((name, flag_table(name, sub)) for name, sub in command_parsers(parser))
    changed: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in tables:
            changed.append(f"{name} (no such command: table removed)")
            return ""
        new = tables.pop(name)
        if new != match[0]:
            changed.append(name)
        return new

    text = _BLOCK.sub(replace, text)
    for name, table in tables.items():
        changed.append(f"{name} (missing: section added)")
        text = text.rstrip("\n") + f"\n\n### `{name}`\n\n{table}\n"
    return text, changed


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with ``--check`` only compare) the flag tables of a cli.md."""
    cli = argparse.ArgumentParser(prog="python -m albert_edge.cli.docgen", description=__doc__.splitlines()[0])
    cli.add_argument("path", nargs="?", default="docs/cli.md", help="the markdown file holding the tables")
    cli.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table is out of date")
    args = cli.parse_args(argv)
    path = Path(args.path)
    try:
        old = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
        return 2
    new, changed = regenerate(old)
    if args.check:
        for name in changed:
            print(f"{path}: flag table of `{name}` is out of date; run python -m albert_edge.cli.docgen",
                  file=sys.stderr)
        return 1 if changed else 0
    if new != old:
        path.write_text(new, encoding="utf-8")
    for name in changed:
        print(f"{path}: regenerated `{name}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
