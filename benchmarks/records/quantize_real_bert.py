"""int8 on a real pretrained BERT classifier: does ``quantize --mode auto`` find a variant within budget?

Builds (or reuses, cached) the fine-tuned all-MiniLM-L6-v2 sentiment classifier of
tests/support/minilm_classifier.py, runs ``albert-edge quantize CKPT --mode auto --max-drop 0.5 --eval dev.tsv``
(in process, same code path), then re-judges every written model on the held-out ``test.tsv`` (batch 1,
each text at its own length) against fp32. Prints one JSON object: per variant the dev drift, the gate's
rule, the latency ratio to fp32 (interleaved, in the quantize run), the fallback log and the test drift.

    python -m benchmarks.records.quantize_real_bert [--out DIR] [--formats tflite,onnx] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    from tests.support.minilm_classifier import build_minilm_sentiment

    from albert_edge.inputs.data import label_ids, read_tsv
    from albert_edge.errors import BudgetNotMetError
    from albert_edge.quantize import quantize_checkpoint
    from albert_edge.quantize.auto import Budget
    from albert_edge.quantize.measure import drift
    from albert_edge.runtime import TextClassifier

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/tmp/albert-edge-minilm-auto")
    parser.add_argument("--formats", default="tflite")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--max-drop", type=float, default=0.5)
    args = parser.parse_args()

    folder = build_minilm_sentiment(log=lambda line: print(line, file=sys.stderr))
    status = "chosen"
    try:
        report = quantize_checkpoint(folder, args.out, folder / "calib.txt", mode="auto", max_drop=args.max_drop,
                                     eval_tsv=folder / "dev.tsv", formats=args.formats, rounds=args.rounds,
                                     progress=lambda line: print(line, file=sys.stderr))
    except BudgetNotMetError as exc:
        report, status = exc.report, "over_budget"
    print(report.table(), file=sys.stderr)
    names = ["negative", "positive"]
    examples = read_tsv(folder / "test.tsv", names)
    y = label_ids(examples, names)
    test_logits = {}
    for v in report.variants:
        if v.file:
            classifier = TextClassifier.from_file(Path(args.out) / v.file, num_threads=2)
            test_logits[v.key], _ = classifier.logits_batch([e.text_a for e in examples], batch_size=1, bucket=False)
    out = {"checkpoint": str(folder), "finetune": json.loads((folder / "finetune.json").read_text()),
           "status": status, "chosen": report.chosen, "best_effort": report.best_effort, "relax": report.relax,
           "timing": report.timing, "fallback": report.fallback, "variants": []}
    budget = Budget(max_drop=args.max_drop)
    for v in report.variants:
        row = {"variant": v.key, "ratio_vs_fp32": v.ratio_vs_fp32, "median_ms": v.latency and v.latency["median_ms"],
               "size_mb": round(v.size_bytes / 1e6, 2), "error": v.error, "gate": v.gate,
               "meets_budget": v.meets_budget, "float_fallback": len(v.float_fallback)}
        if v.drift is not None:
            row["dev"] = {"drop_pt": round(v.drift.accuracy_drop, 3), "agreement": round(v.drift.agreement, 4),
                          "flips_by_margin": v.drift.to_dict()["flips_by_margin"], "accuracy": v.drift.accuracy}
        ref_key = f"{v.format}:fp32"
        if v.key in test_logits and ref_key in test_logits and v.name != "fp32":
            d = drift(test_logits[v.key], test_logits[ref_key], y)
            ok, rule = d.agreement_verdict(budget)
            row["test"] = {"drop_pt": round(d.accuracy_drop, 3), "agreement": round(d.agreement, 4),
                           "accuracy": d.accuracy, "gate_passed": ok, "gate": rule,
                           "flips_by_margin": d.to_dict()["flips_by_margin"]}
        out["variants"].append(row)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
