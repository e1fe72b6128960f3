"""benchmarks/suites/real_length_floor.py on a tiny packed model: every part of a call is reported.

The figures are machine-dependent and never asserted; what is checked is that a run reports the
ratios, the fixed-shape curve and its fit, the step times of a new shape, and floors that follow
from the lengths it was given (the arithmetic ones need no timing and are checked exactly).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.bench_models import shared_models

from albert_edge.bench_latency.runner import describe_variants, real_lengths, sample_batch_lengths

ROOT = Path(__file__).resolve().parents[1]


def test_a_run_reports_ratios_curve_steps_and_floors():
    models = shared_models()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.real_length_floor", str(models["int8"]),
                           "--threads", "1", "--rounds", "5", "--calls", "2", "--grid", "1,8,16,32",
                           "--eval", str(models["eval"])],
                          capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    run = result["threads"]["1"]
    for clock in ("wall", "cpu"):
        ratios = run[clock]["ratios_vs_full"]
        assert {"app_real (median call)", "raw_real (median call)", "buckets_real (median call)",
                "app_real (mean call)", "fixed_1", "fixed_32"} <= set(ratios)
        pooled = run[clock]["pooled_ratios"]["app_real (median call)"]
        assert pooled["rounds"] == 5 and pooled["low"] <= pooled["high"] and pooled["ratio"] > 0
        assert ratios["fixed_32"]["ratio"] == 1.0 and ratios["app_real (median call)"]["rounds"] == 5
        assert set(run[clock]["fixed_ms"]) == {"1", "8", "16", "32"} and "a_ms" in run[clock]["fit"]
        assert run[clock]["one_token_call_ms"] == run[clock]["fixed_ms"]["1"] > 0
    assert set(run["raw_steps_ms"]["real"]) == {"resize_alloc", "set", "invoke", "get", "resize_alloc_cpu", "invoke_cpu"}
    assert set(run["new_shape_cpu_ms"]) == {"resize_alloc", "in_invoke"} and run["new_shape_cpu_ms"]["resize_alloc"] >= 0
    assert run["raw_steps_ms"]["real"]["resize_alloc"] > 0 and set(run["wrapper_cpu_ms"]) == {"1", "8", "16", "32"}
    lengths = sample_batch_lengths(real_lengths(describe_variants([models["int8"]])[0], models["eval"]), 1, seed=0)
    floors = run["floors"]
    assert floors["proportional_mean"] == pytest.approx(statistics.fmean(lengths) / 32)
    assert floors["proportional_median"] == pytest.approx(statistics.median(lengths) / 32)
    assert result["lengths"]["timed_mean"] == pytest.approx(statistics.fmean(lengths))


def test_a_grid_without_the_model_length_is_refused_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.real_length_floor", str(shared_models()["int8"]),
                           "--grid", "1,8,16", "--eval", str(shared_models()["eval"])],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode != 0 and "max_seq_len 32" in proc.stderr and "Traceback" not in proc.stderr
