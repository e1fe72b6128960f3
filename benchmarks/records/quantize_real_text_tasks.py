"""int8 and int4 on NER and QA models built from real registry text: issue #28's done-when, in figures.

Builds (or reuses, cached) the all-MiniLM-L6-v2 NER and QA models of tests/support/realtext_models.py
(fine-tuned briefly on vaderSentiment's NYT editorial sentences), then per task runs, in process on the
CLI's code path:

1. ``quantize --mode auto --formats tflite,onnx --eval dev.jsonl`` over dynamic_int8, dynamic_int8_col and
   ONNX dynamic_int8 (default budget): per variant the task's agreement with fp32 (NER entity F1 vs fp32's
   entities, QA span agreement), vs gold, near ties, latency ratio (interleaved, in the quantize run),
   the chosen variant or the closest miss, and the ``held_back`` ops;
2. ``quantize --mode dynamic --variants dynamic_int8,dynamic_int4,onnx_dynamic_int8,onnx_int4``: the
   same figures and the file sizes for int4.

Prints one JSON object (stdout; progress on stderr).

    python -m benchmarks.records.quantize_real_text_tasks [--out DIR] [--rounds 10] [--tasks ner,qa]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _row(v) -> dict:
    d = v.drift.to_dict() if v.drift is not None else {}
    vs_fp32 = d.get("entity_f1_vs_baseline", d.get("agreement"))
    gold = d.get("entity_f1", d.get("f1"))
    return {"variant": v.key, "size_mb": round(v.size_bytes / 1e6, 2), "ratio_vs_fp32": v.ratio_vs_fp32,
            "vs_fp32": None if vs_fp32 is None else round(vs_fp32, 4),
            "entity_agreement": d.get("entity_agreement"), "tag_or_span_agreement": d.get("agreement"),
            "vs_gold": None if gold is None else round(gold, 4), "near_ties": d.get("near_ties"),
            "max_abs_logit": d.get("max_abs_logit"), "meets_budget": v.meets_budget, "error": v.error,
            "float_fallback": len(v.float_fallback)}


def _run(folder: Path, out: Path, rounds: int, **options) -> tuple[object, str]:
    from albert_edge.errors import BudgetNotMetError
    from albert_edge.quantize import quantize_checkpoint

    try:
        report = quantize_checkpoint(folder, out, folder / "calib.txt", eval_tsv=folder / "dev.jsonl",
                                     formats="tflite,onnx", rounds=rounds, seq_len=64, max_seq_len=128,
                                     progress=lambda line: print(line, file=sys.stderr), **options)
        return report, report.status
    except BudgetNotMetError as exc:
        return exc.report, "over_budget"


def main() -> int:
    from tests.support.realtext_models import build_realtext

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/albert-edge-realtext")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--tasks", default="ner,qa")
    args = parser.parse_args()
    result = {}
    for task in args.tasks.split(","):
        folder = build_realtext(task, log=lambda line: print(line, file=sys.stderr))
        auto, status = _run(folder, Path(args.out) / task / "auto", args.rounds, mode="auto",
                            variants=("dynamic_int8", "dynamic_int8_col", "onnx_dynamic_int8"), max_fallback_steps=3)
        print(auto.table(), file=sys.stderr)
        int4, _ = _run(folder, Path(args.out) / task / "int4", args.rounds, mode="dynamic", error_tables=False,
                       variants=("dynamic_int8", "dynamic_int4", "onnx_dynamic_int8", "onnx_int4"))
        print(int4.table(), file=sys.stderr)
        result[task] = {"finetune": json.loads((folder / "finetune.json").read_text()), "judge": auto.judge,
                        "auto": {"status": status, "chosen": auto.chosen, "best_effort": auto.best_effort,
                                 "relax": auto.relax, "held_back": auto.held_back, "decision_log": auto.decision_log,
                                 "variants": [_row(v) for v in auto.variants]},
                        "int4": {"variants": [_row(v) for v in int4.variants]}}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
