"""``albert-edge convert CHECKPOINT --out DIR``: packed, parity-checked .tflite / .onnx files."""

from __future__ import annotations

import argparse

from albert_edge.convert.pipeline import FORMATS, REPORT_NAME, convert_checkpoint


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert", help="export a checkpoint to .tflite / .onnx with its tokenizer packed in",
        description="Convert a TF1 (Google / brightmart albert_zh) or Hugging Face checkpoint into fp32 (and fp16) "
                    "TFLite and ONNX files carrying vocab, labels and settings; every file is run against the numpy "
                    f"reference and the result written to DIR/{REPORT_NAME}.")
    parser.add_argument("checkpoint", help="TF1 prefix or directory, or Hugging Face directory")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    parser.add_argument("--formats", default=",".join(FORMATS), help=f"comma list of {', '.join(FORMATS)} (default: all)")
    parser.add_argument("--max-seq-len", type=int, metavar="N",
                        help="tokenizer max length stored in the pack and the longest parity sample "
                             "(default 128, or max_position_embeddings if smaller)")
    parser.add_argument("--labels", help="comma list of class names, one per classifier output")
    parser.add_argument("--fp16", action="store_true", help="also write fp16-weight variants")
    parser.add_argument("--vocab", metavar="PATH", help="vocab.txt or spiece.model (default: found beside the checkpoint)")
    parser.add_argument("--config", metavar="PATH", help="config JSON to use instead of the one beside the checkpoint")
    parser.add_argument("--cased", action="store_true", help="do not lower-case text (default: tokenizer_config.json, else lower-case)")
    parser.add_argument("--task", choices=("sequence_classification", "feature_extraction"),
                        help="default: classification if the checkpoint has a classifier head")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    labels = [label for label in args.labels.split(",")] if args.labels else None
    report = convert_checkpoint(args.checkpoint, args.out, formats=args.formats, max_seq_len=args.max_seq_len,
                                labels=labels, fp16=args.fp16, vocab=args.vocab,
                                do_lower_case=False if args.cased else None, task=args.task, config=args.config)
    print(f"{report.checkpoint} ({report.scheme}, {report.num_parameters / 1e6:.2f} M parameters, {report.task})")
    print(report.table())
    print(f"report: {report.report_path}")
    return 0
