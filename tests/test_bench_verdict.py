"""The bench's verdict block from fixed reports: one file to ship, and no decision from contended rows."""

from __future__ import annotations

from albert_edge.bench_latency.bench_verdict import bench_verdict
from albert_edge.bench_latency.schema import BenchReport
from albert_edge.verdict import MAX_LINES, verdict_lines


def _row(variant: str, threads: int, median: float, contended: bool = False, vs: tuple | None = None) -> dict:
    row = {"variant": variant, "backend": "litert", "threads": threads, "seq_len": 128, "source": "host",
           "batch": 1, "latency_ms": {"median": median, "mean": median},
           "contention": {"contended": contended}}
    if vs:
        row["vs_baseline"] = {"ratio": vs[0], "low": vs[1], "high": vs[2], "contended": contended}
    return row


def _report(contended: bool, decided: bool = True) -> BenchReport:
    variants = [{"name": "fp32", "path": "models/model_fp32.tflite", "size_bytes": 16_850_000, "sha256": "a",
                 "is_baseline": True},
                {"name": "dynamic_int8_col", "path": "models/variants/dynamic_int8_col.tflite",
                 "size_bytes": 4_380_000, "sha256": "b", "is_baseline": False},
                {"name": "dynamic_int8_col-2", "path": "models/model.tflite", "size_bytes": 4_380_000,
                 "sha256": "b", "is_baseline": False}]
    results = [_row("fp32", 1, 60.0), _row("fp32", 2, 35.0, contended),
               _row("dynamic_int8_col", 1, 22.0, vs=(0.37, 0.36, 0.38)),
               _row("dynamic_int8_col", 2, 13.0, contended, vs=(0.37, 0.35, 0.39))]
    accuracy = [{"variant": "fp32", "accuracy": 0.8403, "agreement": 1.0},
                {"variant": "dynamic_int8_col", "accuracy": 0.8397, "agreement": 0.998}]
    rec = {"variant": "dynamic_int8_col", "backend": "litert", "threads": 2, "seq_len": 128, "median_ms": 13.0,
           "accuracy_drop_points": 0.06, "text": "ship dynamic_int8_col (litert, 2 threads)", "decided": decided}
    return BenchReport(settings={"threads": [1, 2], "eval": "test.tsv", "max_seconds": 90}, machine={"kind": "host"},
                       variants=variants, results=results, accuracy=accuracy, recommendation=rec,
                       warnings=["a 10.59x int8 speed-up, above the ~4x"] * 3,
                       stability={"unstable": ["x"] * 32, "impossible": ["a 10.59x int8 speed-up"] * 2})


def test_a_quiet_run_ships_the_model_file_with_its_interval_accuracy_and_threads():
    text = "\n".join(verdict_lines(bench_verdict(_report(contended=False), details="report/report.md")))
    assert "ship      models/model.tflite (dynamic_int8_col)" in text  # the shipped name of the same bytes
    assert "4.38 MB (fp32 16.85 MB)" in text and "0.37x [0.35-0.39] of fp32's time at seq 128" in text
    assert "-0.06 points (83.97 % vs 84.03 % for fp32), agreement 99.8 %" in text
    assert "threads   2" in text and "machine   could decide" in text
    assert "warnings  32 UNSTABLE ratios, 2 impossible int8 speed-ups, 1 other warnings" in text


def test_contended_rows_decide_nothing_and_the_block_names_the_run_that_would():
    lines = verdict_lines(bench_verdict(_report(contended=True)))
    text = "\n".join(lines)
    assert "could not decide: 2 of 4 configurations at seq 128 were measured under contention" in text
    assert ("rerun on an idle machine: albert-edge bench models/model_fp32.tflite "
            "models/variants/dynamic_int8_col.tflite models/model.tflite --threads 1,2 --seq-len 128 "
            "--eval test.tsv --max-seconds 180") in text
    assert len(lines) <= MAX_LINES


def test_overlapping_intervals_are_undecided_even_on_a_quiet_machine():
    text = "\n".join(verdict_lines(bench_verdict(_report(contended=False, decided=False))))
    assert "could not decide: the fastest candidates' intervals overlap" in text and "rerun on an idle" in text


def test_no_pick_within_budget_ships_nothing_and_says_why():
    report = _report(contended=False)
    report.recommendation = {"variant": None, "seq_len": 128, "threads": None,
                             "text": "no variant is within the 0.5-point accuracy budget at seq 128"}
    lines = verdict_lines(bench_verdict(report))
    assert lines[1] == "  ship      nothing: no variant is within the 0.5-point accuracy budget at seq 128"
