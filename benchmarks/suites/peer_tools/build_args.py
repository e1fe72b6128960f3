"""Command line shared by the ``build_*.py`` peer builders.

``benchmarks/suites/peers.py`` runs each builder as ``<peer venv python> peer_tools/build_X.py --hf DIR --out DIR``,
so this sibling module is importable there (the script's folder is ``sys.path[0]``); it uses the stdlib only,
because the peer venvs hold nothing of albert-edge.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """``--hf`` and ``--out``, the arguments every builder takes (a builder may add its own)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--hf", required=True, help="Hugging Face checkpoint folder")
    parser.add_argument("--out", required=True)
    return parser


def fresh_out(out: str) -> Path:
    """The output folder, emptied so no stale file is reported."""
    path = Path(out)
    if path.exists():
        shutil.rmtree(path)
    return path


def parse_build_args() -> tuple[str, Path]:
    """Return (Hugging Face checkpoint folder, output folder), the output emptied so no stale file is reported."""
    args = build_parser().parse_args()
    return args.hf, fresh_out(args.out)
