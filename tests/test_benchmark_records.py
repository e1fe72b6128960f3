"""benchmarks/README.md is an index; each measured decision is one record under benchmarks/decisions/.

The notebook this replaced grew to 70 KB in one file, where no decision could be found or re-checked alone.
The rules, checked so they stay true: the index stays short (<= 10 KB), every record is
``NNNN-short-title.md`` with the four parts a reader needs (Context, Decision, Reproduce with a command,
Options measured), numbers are unique, and the index links every record (and links nothing that is gone).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "benchmarks" / "README.md"
DECISIONS = ROOT / "benchmarks" / "decisions"
PARTS = ("## Context", "## Decision", "## Reproduce", "## Options")
RECORDS = sorted(DECISIONS.glob("*.md"))


def test_index_is_short():
    assert INDEX.stat().st_size <= 10 * 1024, f"{INDEX} is {INDEX.stat().st_size} bytes: move detail into a record"


def test_records_exist_and_numbers_are_unique():
    assert RECORDS, "no decision records"
    numbers = [path.name[:4] for path in RECORDS]
    assert len(numbers) == len(set(numbers)), f"two records share a number: {numbers}"


@pytest.mark.parametrize("record", RECORDS, ids=lambda path: path.stem)
def test_record_has_the_four_parts(record: Path):
    assert re.fullmatch(r"\d{4}-[a-z0-9-]+\.md", record.name), f"{record.name}: name it NNNN-short-title.md"
    text = record.read_text(encoding="utf-8")
    assert re.match(rf"# {record.name[:4]}[.:] \S", text), f"{record.name}: first line '# NNNN. Title'"
    for part in PARTS:
        assert part in text, f"{record.name} has no '{part}'"
    reproduce = text.split("## Reproduce", 1)[1].split("\n## ", 1)[0]
    assert "```" in reproduce, f"{record.name}: Reproduce gives no command block"


def test_index_links_every_record_and_only_existing_ones():
    index = INDEX.read_text(encoding="utf-8")
    linked = set(re.findall(r"\(decisions/([^)]+\.md)\)", index))
    present = {path.name for path in RECORDS}
    assert present - linked == set(), f"records missing from the index: {sorted(present - linked)}"
    assert linked - present == set(), f"index links records that do not exist: {sorted(linked - present)}"
