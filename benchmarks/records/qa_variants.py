"""How much each quantized variant changes a QA model's answers: SQuAD EM / F1 and span agreement. Prints JSON.

Runs ``quantize_checkpoint`` with every TFLite variant (and ONNX dynamic int8) of a question-answering
checkpoint on a SQuAD-style ``.jsonl`` (``albert_edge.tasks.qa_data``) and prints, per variant, the
drift the quantize report holds (EM / F1 against gold, fp32's own, the F1 drop in points, the share
of questions whose answer span equals fp32's) with its latency ratio to fp32 measured in the same
interleaved run. Without arguments it uses the test suite's fine-tuned model (trained and cached by
tests/test_runtime_question_answerer.py) and its held-out questions.

    python -m benchmarks.records.qa_variants [CHECKPOINT --eval QA.jsonl --calib TEXTS.txt] [--max-seq-len 64]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_edge.quantize.pipeline import quantize_checkpoint

VARIANTS = ("fp32", "dynamic_int8", "int8_fc", "int8_full", "int16x8", "fp16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", nargs="?")
    parser.add_argument("--eval")
    parser.add_argument("--calib")
    parser.add_argument("--max-seq-len", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qa_variants_"))
    if args.checkpoint is None:
        from tests.support.qa_data import held_out
        from tests.support.qa_model import trained_checkpoint, write_jsonl

        checkpoint = trained_checkpoint()
        eval_path = write_jsonl(work / "eval.jsonl", held_out(40) + held_out(20, chinese=True))
        calib = work / "calib.txt"
        calib.write_text("\n".join(e["context"] for e in held_out(80)[40:]) + "\n", encoding="utf-8")
    else:
        checkpoint, eval_path, calib = args.checkpoint, args.eval, args.calib
    report = quantize_checkpoint(checkpoint, work / "q", calib, mode="dynamic", formats="tflite,onnx",
                                 variants=VARIANTS, max_seq_len=args.max_seq_len, seq_len=args.max_seq_len,
                                 num_threads=args.threads, rounds=args.rounds, eval_tsv=eval_path, max_drop=1.0,
                                 min_agreement=0.9)
    rows = [{"variant": f"{v.format}:{v.name}", "ratio_vs_fp32": v.ratio_vs_fp32, "size_bytes": v.size_bytes,
             "error": v.error, **(v.drift.to_dict() if v.drift else {})} for v in report.variants]
    print(json.dumps({"checkpoint": str(checkpoint), "eval": str(eval_path), "judge": report.judge,
                      "chosen": report.chosen, "decision_log": report.decision_log, "variants": rows}, indent=1))


if __name__ == "__main__":
    main()
