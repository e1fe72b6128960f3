"""Sequence regression end to end, the task added as one module: train, quantize, judge, bench drift.

Trains the tiny BERT scorer of ``tests/test_task_sequence_regression.py`` (its fixture: a synthetic
rule, score = (good words - bad words) / 2, 300 steps, about 10 s), runs ``albert-edge quantize --mode
dynamic --formats tflite,onnx`` judged on 300 gold-scored texts (Pearson/Spearman against gold, drop in
correlation points, scores within 5 % of fp32's spread), then the bench's drift on 300 other texts.
Prints quantize's table and one line per measured file. Needs torch and transformers (the test extra).

    python benchmarks/sequence_regression_task.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_task_sequence_regression as fixture  # noqa: E402  (the tests' fixture, not copied)

from albert_edge.bench_latency.drift import measure_drift  # noqa: E402
from albert_edge.cli import main  # noqa: E402

KEYS = ("pearson", "spearman", "drop", "agreement", "max_abs_diff")


class _TmpFactory:
    """What pytest's tmp_path_factory gives the fixture: fresh directories."""

    def mktemp(self, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=name))


def run() -> int:
    train = getattr(fixture.trained, "__pytest_wrapped__", None)
    ckpt = (train.obj if train else fixture.trained.__wrapped__)(_TmpFactory())
    tmp = Path(tempfile.mkdtemp(prefix="regression-bench"))
    (tmp / "calib.txt").write_text("\n".join(text for text, _ in fixture._texts(64, seed=5)) + "\n", encoding="utf-8")
    gold = fixture._write_scores(tmp / "dev.jsonl", fixture._texts(300, seed=6))
    out = tmp / "q"
    status = main(["quantize", str(ckpt), "--calib", str(tmp / "calib.txt"), "--eval", str(gold), "--out", str(out),
                   "--mode", "dynamic", "--formats", "tflite,onnx", "--max-seq-len", str(fixture.MAX_SEQ_LEN),
                   "--rounds", "20", "--max-drop", "2", "--min-agreement", "0.9"])
    report = json.loads((out / "quantize_report.json").read_text())
    for v in report["variants"]:
        drift = v.get("drift") or {}
        print("quantize", v["format"], v["name"], {k: round(drift[k], 4) for k in KEYS if k in drift})
    test = fixture._write_scores(tmp / "test.jsonl", fixture._texts(300, seed=7))
    files = [("fp32", out / "model_fp32.tflite"), ("dynamic_int8", out / "model_dynamic_int8.tflite")]
    for entry in measure_drift(files, "fp32", test, threads=1):
        print("bench", entry["variant"], {k: round(entry[k], 4) for k in KEYS})
    return status


if __name__ == "__main__":
    sys.exit(run())
