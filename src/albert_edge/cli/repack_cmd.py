"""``albert-edge repack MODEL --from ORIGINAL --out OUT``: give a rewritten model file its pack back."""

from __future__ import annotations

import argparse

from albert_edge.cli import arg_types
from albert_edge.cli.hub_args import accept_hub_ids
from albert_edge.tasks import TASK_NAMES, canonical_task_name


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "repack", help="re-attach tokenizer, labels and settings to a model an outside tool rewrote",
        description="Tools such as litert-quantizer (or an ONNX optimizer) keep the graph but drop what albert-edge "
                    "carries beside it. repack takes the pack from the file MODEL was made from (a packed .tflite / "
                    ".onnx) or from its checkpoint, checks that MODEL's graph is still that model (input and output "
                    "names and shapes, the word table's rows against the vocab, the position table), and writes OUT "
                    "with the pack and, for a .tflite, standard TFLite metadata that MediaPipe reads.")
    parser.add_argument("model", help="the rewritten .tflite or .onnx (read only)")
    parser.add_argument("--from", dest="source", required=True, metavar="ORIGINAL",
                        help="the albert-edge .tflite / .onnx MODEL was made from, or its checkpoint")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the repacked model file to write (never over a file albert-edge did not write)")
    parser.add_argument("--variant", help="variant tag recorded in the pack (default: the original's when the "
                                          "weight types are unchanged, else e.g. int8_external)")
    parser.add_argument("--max-seq-len", type=arg_types.model_seq_len, metavar="N",
                        help="checkpoint ORIGINAL: tokenizer max length (default: MODEL's fixed input length)")
    parser.add_argument("--labels", help="checkpoint ORIGINAL: comma list of class names")
    parser.add_argument("--task", choices=TASK_NAMES, type=canonical_task_name,
                        help="checkpoint ORIGINAL: the task, as for convert (default: detected)")
    parser.add_argument("--vocab", metavar="PATH",
                        help="checkpoint ORIGINAL: vocab.txt or spiece.model (default: found beside it)")
    accept_hub_ids(parser, "source")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.convert.repack import repack_model

    labels = args.labels.split(",") if args.labels else None
    result = repack_model(args.model, args.source, args.out, variant=args.variant, max_seq_len=args.max_seq_len,
                          labels=labels, task=args.task, vocab=args.vocab)
    print(f"wrote {result.out} ({result.kind}, variant {result.variant}), pack from {result.pack_from}")
    print(f"checked: {', '.join(result.checked)}")
    return 0
