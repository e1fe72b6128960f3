"""Hub ids wherever a checkpoint folder is taken: one flag and one resolution step for every command.

A subcommand declares which of its arguments name a checkpoint (``accept_hub_ids(parser, "checkpoint")``);
``cli.main`` resolves those before the command runs (``resolve_hub_sources``), so each command keeps reading
a local folder and none of them has its own copy of the Hub logic (``albert_edge.model.hub``).
"""

from __future__ import annotations

import argparse
import sys


def accept_hub_ids(parser: argparse.ArgumentParser, *attributes: str) -> None:
    """Let ``attributes`` of ``parser``'s namespace be Hugging Face Hub ids or cache folders; add ``--revision``."""
    parser.add_argument("--revision", metavar="REV",
                        help="branch, tag or commit when the checkpoint is a Hugging Face Hub id (default: main)")
    parser.set_defaults(hub_sources=attributes)


def resolve_hub_sources(args: argparse.Namespace) -> None:
    """Replace each declared checkpoint argument by a local folder; say so on stderr when it was an id."""
    attributes = getattr(args, "hub_sources", ())
    if not attributes:
        return
    from albert_edge.model.hub import resolve_checkpoint

    for attribute in attributes:
        value = getattr(args, attribute, None)
        if not value:
            continue
        resolved = resolve_checkpoint(value, getattr(args, "revision", None))
        if str(resolved) != str(value):
            print(f"{value}: reading {resolved}", file=sys.stderr)
            args.hub_resolved = True
        setattr(args, attribute, str(resolved))
