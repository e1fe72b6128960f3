"""report.json: every documented field is present, round-trips, and defects are named."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
from pathlib import Path

import pytest
from tests.support.bench_models import shared_models

from albert_edge.bench_latency.report_md import render_markdown
from albert_edge.bench_latency.options import BenchOptions
from albert_edge.bench_latency.runner import run_benchmark
from albert_edge.bench_latency.schema import (
    ACCURACY_KEYS,
    LATENCY_KEYS,
    RESULT_KEYS,
    SCHEMA_VERSION,
    TOP_LEVEL_KEYS,
    VARIANT_KEYS,
    BenchReport,
    load_report,
    validate_report,
)
from albert_edge.errors import DataError


@functools.cache
def swept() -> tuple[Path, BenchReport]:
    out = Path(tempfile.mkdtemp(prefix="albert-edge-bench-schema-"))
    models = shared_models()
    report = run_benchmark([models["fp32"], models["int8"]], BenchOptions(threads=[1, 2], seq_lens=[4, 12], runs=3,
                           warmup=1, rounds=1, eval_path=models["eval"]), out_dir=out, progress=False)
    return out, report


def test_written_report_has_every_documented_key_and_the_schema_version():
    out, _ = swept()
    data = json.loads((out / "report.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert set(TOP_LEVEL_KEYS) <= set(data)
    for result in data["results"]:
        assert set(RESULT_KEYS) <= set(result)
        assert set(LATENCY_KEYS) <= set(result["latency_ms"])
    assert all(set(VARIANT_KEYS) <= set(v) for v in data["variants"])
    assert all(set(ACCURACY_KEYS) <= set(a) for a in data["accuracy"])
    assert data["machine"]["physical_cores"] >= 1 and "simd" in data["machine"]


def test_report_json_round_trips_through_load_report():
    out, report = swept()
    loaded = load_report(out / "report.json")
    assert loaded.to_dict() == json.loads(report.to_json())


def test_raw_samples_are_kept_and_the_summary_is_computed_from_them():
    _, report = swept()
    for result in report.results:
        samples = sorted(result["samples_ms"])
        assert len(samples) == result["latency_ms"]["count"] == 3
        assert result["latency_ms"]["min"] == samples[0] and result["latency_ms"]["median"] == samples[1]


def test_markdown_has_one_table_per_sequence_length_with_the_asked_columns():
    out, report = swept()
    text = (out / "report.md").read_text()
    assert text == render_markdown(report)
    assert text.count("## Sequence length:") == 2
    header = next(line for line in text.splitlines() if line.startswith("| variant | source"))
    for column in ("size", "p50 ms", "p90 ms", "speed-up vs fp32", "accuracy", "Δaccuracy", "agreement"):
        assert column in header
    # One verdict names the file to ship; each length's pick is a detail, never a second "ship".
    assert text.count("→ fastest within budget at this length (a detail") == 2 and "→ ship " not in text
    assert [line.split()[:1] for line in text.splitlines() if line.startswith("  ship ")] == [["ship"]]
    assert text.index("verdict (bench):") < text.index("## Sequence length:")
    assert "## Load time and model memory" in text and "| fp32 | host | litert |" in text
    assert "first answer ms" in text and "interpreter cold start ms" in text
    assert "cold start ms" in text and "model peak MB @ 12" in text and "baseline after importing only the runtime" in text
    assert report.recommendation["text"] in text


def test_markdown_says_where_each_variants_memory_goes():
    """The breakdown table has a row per variant and length: the model's own memory is the file's mapped pages,
    the packed weights and the heap's rest; with the library code it is the total, which the interpreter and
    first-call parts add up to; own x file is the own memory over the file (record 0290)."""
    out, report = swept()
    lines = (out / "report.md").read_text().splitlines()
    start = lines.index("## Where the model memory goes")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    header = next(line for line in lines[start:end] if line.startswith("| variant |"))
    names = [c.strip() for c in header.split("|")[1:-1]]
    rows = [line for line in lines[start:end] if line.startswith(("| fp32 | litert |", "| int8_dynamic | litert |"))]
    assert {tuple(c.strip() for c in row.split("|")[1:4]) for row in rows} == {
        (v, "litert", s) for v in ("fp32", "int8_dynamic") for s in ("4", "12")}
    for row in rows:
        cell = dict(zip(names, (c.strip() for c in row.split("|")[1:-1])))
        total = float(cell["total MB"])
        assert float(cell["interpreter MB"]) + float(cell["first call MB"]) == pytest.approx(total, abs=0.25), row
        if cell["own MB"] == "–":
            continue
        own = float(cell["own MB"])
        assert own + float(cell["library code MB"]) == pytest.approx(total, abs=0.25), row
        parts = float(cell["file mapped MB"]) + float(cell["packed weights MB"]) + float(cell["arena & rest MB"])
        assert parts == pytest.approx(own, abs=0.25), row
        size = report.variant(cell["variant"])["size_bytes"]
        assert float(cell["own x file"].rstrip("x")) * size / 2**20 == pytest.approx(own, abs=0.06), row


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("machine"), "missing keys machine"),
    (lambda d: d.update(schema_version=2), "schema_version 2, expected 1"),
    (lambda d: d["results"][0]["latency_ms"].pop("p99"), r"results\[0\].latency_ms: missing keys p99"),
    (lambda d: d["results"][0].update(variant="fp64"), "variant 'fp64' is not listed"),
    (lambda d: d["results"][0].update(seq_len="long"), "seq_len 'long'"),
])
def test_validation_names_the_defect(mutate, message):
    _, report = swept()
    data = copy.deepcopy(report.to_dict())
    mutate(data)
    with pytest.raises(DataError, match=message):
        validate_report(data, "report.json")


def test_unreadable_report_is_a_data_error_naming_the_file(tmp_path):
    path = tmp_path / "report.json"
    path.write_text("{not json")
    with pytest.raises(DataError, match="report.json: not a readable report.json"):
        load_report(path)
