"""The shipped sample keeps its own rules (#36): the quantize commands the docs give for it judge their
variants (calib.txt's 256 texts cannot show 99 % agreement; the sample's dev.tsv is the default judge)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from albert_edge.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "albert_tiny_zh_sentiment"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented_sample_quantize_commands() -> list[tuple[str, list[str]]]:
    """Every ``albert-edge quantize examples/albert_tiny_zh_sentiment ...`` command in a code block of the docs."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8").replace("\\\n", " ")
        for line in text.splitlines():
            command = line.split("#")[0].strip()
            if re.match(r"albert-edge quantize examples/albert_tiny_zh_sentiment\b", command):
                found.append((doc.name, shlex.split(command)[1:]))
    return found


def test_the_docs_have_a_quantize_command_on_the_sample():
    assert documented_sample_quantize_commands()


@pytest.mark.slow  # quantizes the real sample, judging every variant on its 1,749 dev rows
@pytest.mark.parametrize("doc,argv", documented_sample_quantize_commands())
def test_a_documented_quantize_command_on_the_sample_judges_its_variants(doc, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    argv = [*argv[:argv.index("--out")], "--out", str(out), *argv[argv.index("--out") + 2:], "--rounds", "3",
            "--no-progress"]
    assert main(argv) == 0, doc
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["judge"]["examples"] >= report["min_judge_rows"]
    quantized = [v for v in report["variants"] if v["name"] != "fp32"]
    assert quantized and all(v["not_judged"] is None and v["drift"] is not None for v in quantized), doc
