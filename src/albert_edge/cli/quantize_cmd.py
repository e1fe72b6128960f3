"""``albert-edge quantize CHECKPOINT [--calib FILE] --mode ...``: quantized variants and what each costs."""

from __future__ import annotations

import argparse
import sys

from albert_edge import progress
from albert_edge.cli import arg_types
from albert_edge.cli.convert_cmd import add_pooling_arguments, embedding_task
from albert_edge.cli.hub_args import accept_hub_ids
from albert_edge.convert.pipeline import placeholder_labels_warning
from albert_edge.errors import DataError, QuantizationError
from albert_edge.quantize.pipeline import FORMATS, MODES, REPORT_NAME, QuantizeOptions, quantize_checkpoint
from albert_edge.quantize.report import quantize_verdict
from albert_edge.verdict import verdict_lines
from albert_edge.tasks import TASK_NAMES, canonical_task_name


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "quantize", help="write int8 / 16x8 / fp16 variants with their size, latency and accuracy cost",
        description="Quantize a checkpoint for LiteRT (and ONNX Runtime) using calibration text tokenized with the "
                    "model's own tokenizer. Every variant is timed against fp32 in one interleaved run and judged "
                    f"against fp32 on --eval (or held-out calibration text); the table goes to DIR/{REPORT_NAME}. "
                    "--calib is needed where calibration is used (int8, int16x8, auto); dynamic and fp16 take it "
                    "only as text to judge on. A variant judged on too few rows to show --min-agreement is "
                    "'not judged' (never chosen), not rejected. "
                    "--mode auto picks the fastest variant whose accuracy drop is within --max-drop, falling back "
                    "the int8 ops that the per-op error table ranks worst to float when needed. When nothing fits, "
                    "the report and the closest variant (named over_budget_*) are still written, into DIR/over_budget/ "
                    "so that the previous run's files stay as they were; one line says what to relax, and the exit "
                    "code is 3.")
    parser.add_argument("checkpoint", help="TF1 prefix or directory, or Hugging Face directory (float weights)")
    parser.add_argument("--calib", metavar="FILE",
                        help="calibration texts: .txt one per line, or .tsv label<TAB>text; needed by int8, int16x8 "
                             "and auto; dynamic and fp16 judge on all of them when there is no --eval")
    parser.add_argument("--mode", choices=MODES, default="auto", help="variants to build (default: auto)")
    parser.add_argument("--max-drop", type=arg_types.accuracy_points, default=0.5, metavar="PT",
                        help="accuracy points a variant may lose vs fp32 (default 0.5); entity-F1 points for "
                             "token classification, answer-F1 points for question answering")
    parser.add_argument("--min-agreement", type=arg_types.share, default=0.99, metavar="F",
                        help="share of predictions that must equal fp32's (default 0.99); tokens' tags for token "
                             "classification, answer spans for question answering")
    parser.add_argument("--confidence", type=arg_types.open_share, default=0.95, metavar="C",
                        help="the agreement's one-sided lower confidence bound must reach --min-agreement (default 0.95)")
    parser.add_argument("--tie-margin", type=arg_types.logit_margin, default=0.1, metavar="LOGIT",
                        help="classifiers: flips of rows whose fp32 top-1 minus top-2 logit is below this are near "
                             "ties; when the agreement over all rows misses --min-agreement, it is judged on the "
                             "other rows instead (default 0.1; 0 turns this rule off). The report says which rule decided")
    parser.add_argument("--max-fallback-steps", type=arg_types.fallback_steps, default=5, metavar="N",
                        help="auto: float-fallback steps per variant (1, 2, 4, ... worst ops float; default 5)")
    parser.add_argument("--max-size-mb", type=arg_types.size_mb, metavar="MB",
                        help="reject variants larger than this; auto: under the int8 file's size, int4 and mixed 4/8 "
                             "variants are built and judged too")
    parser.add_argument("--prefer", choices=("speed", "size"), default="speed",
                        help="auto: choose the fastest variant within budget (default) or the smallest file")
    parser.add_argument("--variants", metavar="NAMES",
                        help="comma list of variants to build instead of the mode's (fp32 is always built): TFLite "
                             "names such as dynamic_int8,dynamic_int4; onnx_-prefixed ONNX names such as "
                             "onnx_dynamic_int8_col,onnx_int4")
    parser.add_argument("--min-cosine", type=arg_types.cosine, default=0.995, metavar="C",
                        help="embedding models: the worst text's cosine to fp32 must reach this (default 0.995)")
    parser.add_argument("--min-mean-cosine", type=arg_types.cosine, default=0.999, metavar="C",
                        help="embedding models: the mean cosine to fp32 must reach this (default 0.999)")
    parser.add_argument("--eval", metavar="FILE",
                        help="labelled label<TAB>text data to judge drift on (embedding models: texts, one per line; "
                             'token classification: .jsonl {"text": ..., "entities": [[start, end, label], ...]}; '
                             'question answering: SQuAD-style .jsonl {"question", "context", "answers": '
                             '[{"text", "answer_start"}]}, answers optional)')
    parser.add_argument("--out", metavar="DIR", help="output directory (default: CHECKPOINT_DIR/quantized)")
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help=f"comma list of {', '.join(FORMATS)} (default: all, as convert)")
    parser.add_argument("--labels", help="comma list of class names, one per classifier output")
    parser.add_argument("--vocab", metavar="PATH", help="vocab.txt or spiece.model (default: found beside the checkpoint)")
    parser.add_argument("--max-seq-len", type=arg_types.model_seq_len, metavar="N",
                        help="tokenizer max length (default 128, or the checkpoint's positions if fewer)")
    parser.add_argument("--task", choices=TASK_NAMES, type=canonical_task_name, help="default: detected from the checkpoint (see convert --task)")
    parser.add_argument("--threads", type=arg_types.threads, default=2, metavar="N", help="interpreter threads for timing (default 2)")
    parser.add_argument("--rounds", type=arg_types.positive_int, default=30, metavar="N", help="interleaved timing rounds (default 30)")
    parser.add_argument("--attention-head-groups", type=arg_types.head_groups,
                        default=QuantizeOptions.attention_head_groups, metavar="N",
                        help="TFLite: every variant computes attention for N (1-4) groups of heads in turn, as "
                             "convert --attention-head-groups: less memory at long texts, more ops to run "
                             "(default %(default)s)")
    add_pooling_arguments(parser)
    accept_hub_ids(parser, "checkpoint")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.convert.assets import checkpoint_dir

    if args.out is None and getattr(args, "hub_resolved", False):
        # The default (a folder beside the checkpoint) would write into the Hugging Face cache.
        raise DataError(f"{args.checkpoint}: the checkpoint came from the Hugging Face cache; pass --out DIR "
                        "for the quantized files")
    out = args.out or str(checkpoint_dir(args.checkpoint) / "quantized")
    labels = args.labels.split(",") if args.labels else None
    try:
        options = QuantizeOptions(mode=args.mode, max_drop=args.max_drop, eval_tsv=args.eval, formats=args.formats,
                                  labels=labels, vocab=args.vocab, max_seq_len=args.max_seq_len,
                                  num_threads=args.threads, rounds=args.rounds, min_agreement=args.min_agreement,
                                  max_size_mb=args.max_size_mb, confidence=args.confidence, task=embedding_task(args) or args.task,
                                  min_cosine=args.min_cosine, min_mean_cosine=args.min_mean_cosine,
                                  tie_margin=args.tie_margin, max_fallback_steps=args.max_fallback_steps,
                                  prefer=args.prefer, attention_head_groups=args.attention_head_groups,
                                  variants=[v.strip() for v in args.variants.split(",") if v.strip()]
                                  if args.variants is not None else None)
        progress.step(f"read {args.checkpoint}" + (f" and {args.calib}" if args.calib else ""))
        report = quantize_checkpoint(args.checkpoint, out, args.calib, options, progress=progress.step)
    except QuantizationError as exc:
        progress.clear()
        # BudgetNotMetError (exit 3): the report and the over_budget_ best effort are written into over_budget/.
        if getattr(exc, "report", None) is not None:
            print(exc.report.table(), file=sys.stderr)
            if exc.report.report_path:
                print(f"report: {exc.report.report_path}", file=sys.stderr)
        raise
    progress.clear()
    # One screen: the verdict and where the details are (every variant's row: quantize_report.md).
    print("\n".join(verdict_lines(quantize_verdict(report))))
    print(f"report: {report.report_path}")
    warning = placeholder_labels_warning(report.judge.get("labels"), "quantize")
    if warning and not labels:
        print(warning, file=sys.stderr)
    return 0
