"""The documentation is code (issue #38): its shell and Python blocks run, and its commands exist.

- Every ```bash / ```sh / ```python block of README.md and docs/*.md runs (slow tier) in a copy of
  the folder tests/support/docs_world.py makes, where every placeholder path the docs name exists
  in its real format. A block that cannot run here (network, phone, SDK, the suite itself) says so
  with ``<!-- docs-test: skip: REASON -->`` on the line before its fence; a marker without a reason fails.
- Every ``albert-edge COMMAND ... --flag`` the docs write, in a code span or a block, names a command and
  flags its parser has (quick tier): removing a documented flag or command fails here.
- The variant names docs/pack_format.md lists are the names quantize writes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"bash": "shell", "sh": "shell", "shell": "shell", "python": "python"}
_FENCE = re.compile(r"^(?:<!-- docs-test: (?P<marker>.*?) -->\n)?```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.M | re.S)
_SPAN = re.compile(r"`([^`\n]+)`")
_COMMAND = re.compile(r"albert-edge ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)?)")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        if self.marker is None:
            return None
        match = re.fullmatch(r"skip: (.+)", self.marker.strip())
        return match[1].strip() if match else ""


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            found.append(Block(page, text[:m.start("lang")].count("\n") + 1, m["lang"], m["body"], m["marker"]))
    return found


RUN = [b for b in blocks() if b.lang in RUNNABLE]


def test_every_marker_is_a_skip_with_a_reason() -> None:
    bad = [b.id for b in blocks() if b.marker is not None and not b.skip_reason]
    assert bad == [], f"expected <!-- docs-test: skip: REASON --> before these blocks: {bad}"


def test_there_are_blocks_to_run() -> None:
    # A fence regex that stops matching would make every run test vanish instead of fail.
    assert len([b for b in RUN if b.skip_reason is None]) >= 4 and any(b.lang == "python" for b in RUN)


# --- commands and flags named anywhere in the docs --------------------------------------------------

def _parsers() -> dict[str, argparse.ArgumentParser]:
    from albert_edge.cli import docgen

    return dict(docgen.command_parsers())


def _mentions() -> list[tuple[str, str]]:
    """(where, the text of one ``albert-edge ...`` command) from every code span and shell/Python block line
    (not from output samples, whose wrapped prose may put any word after "albert-edge")."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        code_lines = [(m["body"], text[:m.start()].count("\n") + 2) for m in _FENCE.finditer(text) if m["lang"] in RUNNABLE]
        prose = _FENCE.sub(lambda m: "\n" * m[0].count("\n"), text)
        pieces = [(span[1], prose[:span.start()].count("\n") + 1) for span in _SPAN.finditer(prose)]
        for body, first in code_lines:
            pieces += [(line, first + i) for i, line in enumerate(body.splitlines())]
        for piece, line in pieces:
            starts = [m.start() for m in _COMMAND.finditer(piece)]
            for start, end in zip(starts, [*starts[1:], len(piece)]):
                found.append((f"{page.relative_to(ROOT)}:{line}", piece[start:end]))
    return found


def _command_and_flags(mention: str, parsers: dict[str, argparse.ArgumentParser]) -> tuple[str, set[str]]:
    words = _COMMAND.match(mention)[1].split()
    name = " ".join(words) if " ".join(words) in parsers else words[0]
    rest = mention.split("#", 1)[0]
    return name, set(_FLAG.findall(re.split(r"[|;]\s|&&|\\\|", rest)[0]))


def test_every_documented_command_and_flag_exists() -> None:
    parsers = _parsers()
    top = {s for a in parsers["albert-edge"]._actions for s in a.option_strings}
    wrong = []
    for where, mention in _mentions():
        name, flags = _command_and_flags(mention, parsers)
        if name not in parsers:
            wrong.append(f"{where}: no command `albert-edge {name}`")
            continue
        known = top | {s for a in parsers[name]._actions for s in a.option_strings}
        wrong += [f"{where}: `albert-edge {name}` has no flag {flag}" for flag in sorted(flags - known)]
    assert wrong == [], "\n".join(wrong)


def test_the_flag_check_sees_a_removed_flag() -> None:
    parsers = _parsers()
    name, flags = _command_and_flags("albert-edge convert CKPT --out DIR --no-such-flag", parsers)
    known = {s for a in parsers[name]._actions for s in a.option_strings}
    assert name == "convert" and flags - known == {"--no-such-flag"}


def test_pack_format_lists_the_variant_names_quantize_writes() -> None:
    from albert_edge.quantize.pipeline import ONNX_MODE_VARIANTS
    from albert_edge.quantize.tflite_quant import VARIANTS

    text = (ROOT / "docs" / "pack_format.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `variant` |"))
    named = set(re.findall(r"`([a-z0-9_]+)`", row)) - {"variant"}
    real = set(VARIANTS) | {v for names in ONNX_MODE_VARIANTS.values() for v in names}
    assert named and named <= real, f"not a variant quantize writes: {sorted(named - real)}"
    calls = re.findall(r'with_variant\("([a-z0-9_]+)"\)', text)
    assert set(calls) <= real, calls


# --- running the blocks -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def docs_world(tmp_path_factory) -> Path:
    pytest.importorskip("tensorflow")
    from tests.support.docs_world import build_docs_world

    return build_docs_world(tmp_path_factory.mktemp("docs_world") / "world")


@pytest.fixture()
def world_copy(docs_world: Path, tmp_path: Path) -> Path:
    """A fresh copy per block: a block that writes (convert --out models) cannot change another's input."""
    return Path(shutil.copytree(docs_world, tmp_path / "world", ignore=shutil.ignore_patterns(".build")))


def _shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with an ``albert-edge`` that is this interpreter's ``python -m albert_edge`` (this tree's code)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    script = shim / "albert-edge"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m albert_edge "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}{os.environ.get('PATH', '')}")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _python_names(world: Path) -> dict[str, object]:
    from albert_edge.runtime.pack import strip_tflite_pack
    from tests.support.docs_world import SNIPPET_NAMES, float_tflite

    fp32 = float_tflite(world / "models")
    return {**SNIPPET_NAMES, "path": str(fp32), "flatbuffer_bytes": strip_tflite_pack(fp32.read_bytes())}


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_documented_block_runs(block: Block, world_copy: Path, tmp_path: Path, monkeypatch) -> None:
    if block.skip_reason:
        pytest.skip(block.skip_reason)
    if RUNNABLE[block.lang] == "shell":
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.body], cwd=world_copy, env=_shell_env(tmp_path),
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{block.id} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return
    monkeypatch.chdir(world_copy)
    exec(compile(block.body, block.id, "exec"), _python_names(world_copy))  # noqa: S102 - the docs' own snippet
