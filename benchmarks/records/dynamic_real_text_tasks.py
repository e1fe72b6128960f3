"""``--mode dynamic``'s int8 files on the real-text QA and NER models (issue #41 point 3). Prints one JSON object.

Builds (or reuses, cached) the all-MiniLM-L6-v2 QA and NER models of tests/support/realtext_models.py, then per task
runs ``quantize --mode dynamic --eval dev.jsonl --formats tflite,onnx`` (in process, the CLI's code path, no error
tables, ``--rounds`` timing rounds) over TFLite ``dynamic_int8``, ``dynamic_int8_col``, ``dynamic_int8_col_sq`` and
ONNX ``dynamic_int8_block`` and ``dynamic_int8`` (per-tensor), and prints per variant the task's agreement with
fp32 (QA span agreement, NER entity F1 against fp32's entities), against gold, and the flips that were fp32 near
ties. Decision: benchmarks/decisions/0201-qa-ner-under-dynamic-int8.md.

    python -m benchmarks.records.dynamic_real_text_tasks [--out DIR] [--rounds 1] [--tasks qa,ner]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

VARIANTS = ("dynamic_int8", "dynamic_int8_col", "dynamic_int8_col_sq", "onnx_dynamic_int8_block", "onnx_dynamic_int8")


def main() -> int:
    from benchmarks.records.quantize_real_text_tasks import _row, _run
    from tests.support.realtext_models import build_realtext

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/albert-edge-dynamic-realtext")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tasks", default="qa,ner")
    args = parser.parse_args()
    result: dict = {"load_before": os.getloadavg()}
    for task in args.tasks.split(","):
        folder = build_realtext(task, log=lambda line: print(line, file=sys.stderr))
        report, status = _run(folder, Path(args.out) / task, args.rounds, mode="dynamic", error_tables=False,
                              variants=VARIANTS)
        result[task] = {"status": status, "variants": [_row(v) for v in report.variants]}
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
