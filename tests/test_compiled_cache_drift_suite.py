"""benchmarks/suites/compiled_cache_drift.py on a tiny packed model: every way runs the rows and reads the
logits (not whichever output comes first), and the comparison counts what it says (figures never asserted
beyond what the tiny model fixes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.support.bench_models import shared_models

from benchmarks.suites.compiled_cache_drift import child, compare

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("way", ["interpreter_padded", "compiled"])
def test_each_way_gives_the_runtimes_probabilities(way):
    # CompiledModel without a cache runs the Interpreter's kernels: the same probabilities as the runtime's path.
    models = shared_models()
    runtime = child("interpreter", str(models["int8"]), str(models["eval"]), 1, 12, "")
    other = child(way, str(models["int8"]), str(models["eval"]), 1, 12, "")
    assert len(other["probs"]) == 12 and other["labels"] == runtime["labels"]
    np.testing.assert_allclose(other["probs"], runtime["probs"], atol=1e-5)


def test_compare_counts_accuracy_agreement_and_deltas():
    labels = [0, 1, 1, 0]
    base = {"probs": [[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.7, 0.3]], "labels": labels, "rss_after_first_mib": 1.0}
    moved = {"probs": [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]], "labels": labels, "rss_after_first_mib": 2.0}
    out = compare({"interpreter_padded": base, "compiled_cache": moved}, reference=base)
    assert out["interpreter_padded"]["accuracy"] == 1.0 and out["interpreter_padded"]["max_abs_delta_prob"] == 0.0
    assert out["compiled_cache"]["accuracy"] == 0.75
    assert out["compiled_cache"]["agreement_with_interpreter_padded"] == 0.75 == out["compiled_cache"]["agreement_with_fp32"]
    assert out["compiled_cache"]["max_abs_delta_prob"] == pytest.approx(0.2)
    assert out["compiled_cache"]["mean_abs_delta_prob"] == pytest.approx(0.05)


@pytest.mark.slow  # six fresh processes, each importing LiteRT and the runtime
def test_the_suite_runs_end_to_end_and_prints_every_way():
    models = shared_models()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.compiled_cache_drift", str(models["int8"]),
                           "--eval", str(models["eval"]), "--reference", str(models["fp32"]), "--limit", "6",
                           "--threads", "1"], capture_output=True, text=True, cwd=ROOT, check=True)
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert set(report["ways"]) == {"interpreter", "interpreter_padded", "compiled", "compiled_cache"}
    assert all(way["rows"] == 6 for way in report["ways"].values())
