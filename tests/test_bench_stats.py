"""Latency summaries and machine description."""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.bench_latency.machine import describe_machine, simd_flags
from albert_edge.bench_latency.stats import summarize
from albert_edge.errors import DataError


def test_summary_interpolates_percentiles_over_raw_samples():
    summary = summarize([float(x) for x in range(1, 101)])
    assert (summary.count, summary.min, summary.max) == (100, 1.0, 100.0)
    assert summary.median == pytest.approx(50.5)
    assert summary.mean == pytest.approx(50.5)
    assert summary.p90 == pytest.approx(90.1)
    assert summary.p99 == pytest.approx(99.01)
    assert summary.std == pytest.approx(np.std(np.arange(1, 101)))


def test_summary_of_no_samples_is_an_error():
    with pytest.raises(DataError, match="at least one timed run"):
        summarize([])


def test_simd_flags_name_x86_and_arm_extensions():
    assert simd_flags({"avx2", "avx512f", "avx512_vnni", "amx_int8", "sse2"}) == ["AMX-INT8", "AVX-512-VNNI",
                                                                                 "AVX-512F", "AVX2"]
    assert simd_flags({"asimd", "asimddp", "fphp"}) == ["DOTPROD", "FP16", "NEON"]


def test_machine_description_counts_cores_and_names_interpreters():
    machine = describe_machine()
    assert machine["physical_cores"] >= 1
    assert machine["logical_cores"] >= machine["physical_cores"]
    assert machine["usable_cpus"]
    assert "ai-edge-litert" in machine["packages"]
    assert "onnxruntime" in machine["packages"]
