"""Sequence regression end to end, the task added as one module: train, quantize, judge, bench drift.

Trains the regression tests' tiny BERT scorer (``tests/support/regression_task.py``: a synthetic
rule, score = (good words - bad words) / 2, 300 steps, about 10 s), runs ``albert-edge quantize --mode
dynamic --formats tflite,onnx`` judged on 300 gold-scored texts (Pearson/Spearman against gold, drop in
correlation points, scores within 5 % of fp32's spread), then the bench's drift on 300 other texts.
Prints quantize's table and one line per measured file. Needs torch and transformers (the test extra).

    python -m benchmarks.records.sequence_regression_task
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from albert_edge.bench_latency.drift import measure_drift
from albert_edge.cli import main
from tests.support import regression_task as fixture  # the tests' task and model, not copied

KEYS = ("pearson", "spearman", "drop", "agreement", "max_abs_diff")


def run() -> int:
    ckpt = fixture.train_regressor(Path(tempfile.mkdtemp(prefix="regressor")))
    tmp = Path(tempfile.mkdtemp(prefix="regression-bench"))
    (tmp / "calib.txt").write_text("\n".join(text for text, _ in fixture.scored_texts(64, seed=5)) + "\n", encoding="utf-8")
    gold = fixture.write_scores(tmp / "dev.jsonl", fixture.scored_texts(300, seed=6))
    out = tmp / "q"
    status = main(["quantize", str(ckpt), "--calib", str(tmp / "calib.txt"), "--eval", str(gold), "--out", str(out),
                   "--mode", "dynamic", "--formats", "tflite,onnx", "--max-seq-len", str(fixture.MAX_SEQ_LEN),
                   "--rounds", "20", "--max-drop", "2", "--min-agreement", "0.9"])
    report = json.loads((out / "quantize_report.json").read_text())
    for v in report["variants"]:
        drift = v.get("drift") or {}
        print("quantize", v["format"], v["name"], {k: round(drift[k], 4) for k in KEYS if k in drift})
    test = fixture.write_scores(tmp / "test.jsonl", fixture.scored_texts(300, seed=7))
    files = [("fp32", out / "variants" / "fp32.tflite"), ("dynamic_int8", out / "variants" / "dynamic_int8.tflite")]
    for entry in measure_drift(files, "fp32", test, threads=1):
        print("bench", entry["variant"], {k: round(entry[k], 4) for k in KEYS})
    return status


if __name__ == "__main__":
    sys.exit(run())
