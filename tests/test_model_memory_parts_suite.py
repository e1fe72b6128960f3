"""benchmarks/suites/model_memory_parts.py: the runtime's library code apart, and the file's pages per mapping.

The figures depend on the kernel and the page cache; what is checked is that the probes see what they claim
to: a first model pays the runtime's code and a second one little, the file's mapping is resident after the
load, empty after DONTNEED, and a call brings pages back (records 0290, 0292).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.bench_models import shared_models

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps")


def test_suite_prints_library_code_per_model_and_the_file_pages_after_load_dontneed_and_a_call():
    models = shared_models()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.model_memory_parts", str(models["int8"]),
                           str(models["fp32"]), "--seq-len", "8", "--threads", "1"],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    for pages in report["file_pages"]:
        assert 0 < pages["after_load_mb"] and pages["after_dontneed_mb"] == 0 < pages["after_one_call_mb"], pages
    for pair in report["library"]:
        assert pair["first"]["library_code_mb"] > 0.5 and pair["second"]["library_code_mb"] < pair["first"]["library_code_mb"]
