"""Does ``quantize --mode auto --max-size-mb 3`` on the shipped sample write an int4 or mixed 4/8 file that keeps
test.tsv accuracy within 0.5 pt of fp32 (issue #41 point 2)? Prints one JSON object.

1. ``albert-edge quantize examples/albert_tiny_zh_sentiment --calib calib.txt --eval dev.tsv --mode auto
   --max-size-mb MB --formats tflite``: the size search ranks on calib.txt and the choice is made on dev.tsv.
2. Every .tflite the run wrote (model.tflite and variants/, or over_budget/ when nothing fit) is opened with ``TextClassifier``
   as a user would and scored on **test.tsv**, which the run never read: accuracy, points against fp32,
   agreement with fp32, size. The report's chosen / best-effort key and status are copied.

    python -m benchmarks.records.int4_in_auto [--max-size-mb 3] [--out /tmp/int4_auto] [--reuse] [--prefer size] [--min-agreement 0.99]

``--reuse`` scores the files an earlier run left in ``--out`` without quantizing again.
Decision: benchmarks/decisions/0151-int4-in-auto.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

SAMPLE = Path(__file__).parents[2] / "examples" / "albert_tiny_zh_sentiment"
#: The fp32 reference's file name within budget (variants/) and over budget (over_budget/).
FP32_NAMES = ("fp32.tflite", "model_fp32.tflite")


def score(folder: Path) -> dict:
    """Accuracy on test.tsv of every model file in ``folder`` (fp32 read beside it when over budget)."""
    from albert_edge.inputs.data import read_tsv
    from albert_edge.runtime import TextClassifier

    rows = read_tsv(SAMPLE / "test.tsv")
    texts = [r.text_a for r in rows]
    files = sorted(folder.rglob("*.tflite"))  # model.tflite, variants/*.tflite; over budget: fp32 + the closest miss
    out: dict = {}
    ref, fp32 = None, ""
    for path in files:
        model = TextClassifier.from_file(path, num_threads=2)
        gold = np.asarray([model.labels.index(r.label) for r in rows])
        predicted = model.logits_batch(texts)[0].argmax(axis=1)
        if path.name in FP32_NAMES:
            ref, fp32 = predicted, str(path.relative_to(folder))
        out[str(path.relative_to(folder))] = {"mb": round(path.stat().st_size / 1e6, 3), "accuracy": round(100 * float((predicted == gold).mean()), 2),
                          "predicted": predicted}
    for entry in out.values():
        entry["points_vs_fp32"] = round(entry["accuracy"] - out[fp32]["accuracy"], 2)
        entry["agreement"] = round(100 * float((entry.pop("predicted") == ref).mean()), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-size-mb", type=float, default=3.0)
    parser.add_argument("--out", default="/tmp/int4_auto")
    parser.add_argument("--prefer", default="speed")
    parser.add_argument("--min-agreement", default="0.99")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    command = [sys.executable, "-m", "albert_edge", "quantize", str(SAMPLE), "--calib", str(SAMPLE / "calib.txt"),
               "--eval", str(SAMPLE / "dev.tsv"), "--mode", "auto", "--max-size-mb", str(args.max_size_mb),
               "--formats", "tflite", "--prefer", args.prefer, "--min-agreement", args.min_agreement, "--rounds", str(args.rounds), "--out", str(out)]
    result = {"command": " ".join(command[1:]), "load_before": os.getloadavg()}
    if not args.reuse:
        result["exit"] = subprocess.run(command, check=False).returncode
    folder = out / "over_budget" if (out / "over_budget" / "quantize_report.json").is_file() else out
    report = json.loads((folder / "quantize_report.json").read_text(encoding="utf-8"))
    result.update({"status": report.get("status"), "chosen": report.get("chosen"),
                   "best_effort": report.get("best_effort"), "folder": str(folder), "test_tsv": score(folder),
                   "load_after": os.getloadavg()})
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
