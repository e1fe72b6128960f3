"""docs/cli.md's flag tables are the parsers' (issue #38): a flag added, renamed or removed without
regenerating them fails here, and so does a flag whose --help says nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from albert_edge.cli import docgen

CLI_MD = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _toy_parser(*flags: str) -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="albert-edge")
    sub = top.add_subparsers(dest="command").add_parser("toy")
    for flag in flags:
        sub.add_argument(flag, help=f"what {flag} does")
    return top


def test_cli_md_tables_match_the_parsers() -> None:
    text = CLI_MD.read_text(encoding="utf-8")
    _, stale = docgen.regenerate(text)
    assert stale == [], f"run `python -m albert_edge.cli.docgen`; out of date: {stale}"


@pytest.mark.parametrize("name,parser", list(docgen.command_parsers()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_argument_has_help(name: str, parser: argparse.ArgumentParser) -> None:
    empty = [a.option_strings or a.dest for a in docgen.documented_actions(name, parser)
             if not docgen.help_text(a, parser).strip()]
    assert empty == [], f"albert-edge {name}: arguments without help text: {empty}"


def test_a_flag_missing_from_the_table_is_caught() -> None:
    documented, _ = docgen.regenerate("# cli\n", _toy_parser("--alpha"))
    _, stale = docgen.regenerate(documented, _toy_parser("--alpha", "--beta"))
    assert stale == ["toy"]


def test_a_removed_flag_is_caught() -> None:
    documented, _ = docgen.regenerate("# cli\n", _toy_parser("--alpha", "--beta"))
    _, stale = docgen.regenerate(documented, _toy_parser("--alpha"))
    assert stale == ["toy"]


def test_prose_beside_a_table_is_kept() -> None:
    documented, _ = docgen.regenerate("# cli\n", _toy_parser("--alpha"))
    documented = documented.replace("### `toy`\n", "### `toy`\n\nHand-written words about toy.\n")
    regenerated, _ = docgen.regenerate(documented, _toy_parser("--alpha", "--beta"))
    assert "Hand-written words about toy." in regenerated and "`--beta BETA`" in regenerated


def test_check_mode_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    page.write_text("# cli\n", encoding="utf-8")
    assert docgen.main([str(page), "--check"]) == 1
    assert page.read_text(encoding="utf-8") == "# cli\n"
    assert docgen.main([str(page)]) == 0
    assert docgen.main([str(page), "--check"]) == 0
    assert "<!-- BEGIN generated flags: convert -->" in page.read_text(encoding="utf-8")
