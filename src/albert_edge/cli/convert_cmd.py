"""``albert-edge convert CHECKPOINT --out DIR``: packed, parity-checked .tflite / .onnx files."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from albert_edge import progress
from albert_edge.cli import arg_types
from albert_edge.cli.hub_args import accept_hub_ids
from albert_edge.convert.pipeline import (
    FORMATS,
    REPORT_NAME,
    ConvertOptions,
    convert_checkpoint,
    placeholder_labels_warning,
)
from albert_edge.convert.source import ModelSource
from albert_edge.convert.tf_graph import GraphOptions
from albert_edge.tasks import TASK_NAMES, canonical_task_name
from albert_edge.tasks.feature_extraction import POOLING_MODES


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "convert", help="export a checkpoint to .tflite / .onnx with its tokenizer packed in",
        description="Convert a TF1 (Google / brightmart albert_zh) or Hugging Face checkpoint into fp32 (and fp16) "
                    "TFLite and ONNX files carrying vocab, labels and settings; every file is run against the numpy "
                    f"reference and the result written to DIR/{REPORT_NAME}.")
    parser.add_argument("checkpoint", help="TF1 prefix or directory, or Hugging Face directory")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    parser.add_argument("--formats", default=",".join(FORMATS), help=f"comma list of {', '.join(FORMATS)} (default: all)")
    parser.add_argument("--max-seq-len", type=arg_types.model_seq_len, metavar="N",
                        help="tokenizer max length stored in the pack and the longest parity sample "
                             "(default 128, or max_position_embeddings if smaller)")
    parser.add_argument("--labels", help="comma list of class names, one per classifier output")
    parser.add_argument("--fp16", action="store_true", help="also write fp16-weight variants")
    parser.add_argument("--vocab", metavar="PATH", help="vocab.txt or spiece.model (default: found beside the checkpoint)")
    parser.add_argument("--config", metavar="PATH", help="config JSON to use instead of the one beside the checkpoint")
    parser.add_argument("--cased", action="store_true", help="do not lower-case text (default: tokenizer_config.json, else lower-case)")
    parser.add_argument("--task", choices=TASK_NAMES, type=canonical_task_name,
                        help="default: question answering for a span head (HF qa_outputs, TF1 cls/squad/...), "
                             "token classification for a classifier without a pooler (HF "
                             "*ForTokenClassification), classification for one with; a TF1 NER head looks like a "
                             "classifier, so pass token_classification; Hugging Face task names (text-classification, token-classification, question-answering, feature-extraction) are accepted")
    batch = parser.add_mutually_exclusive_group()
    batch.add_argument("--dynamic-batch", dest="batch_one", action="store_false",
                       help="TFLite: a [batch, seq] graph instead of the default [1, seq] one (whose constant "
                            "reshapes leave no dynamic tensors: one XNNPACK partition, less memory, faster at real "
                            "lengths; the runtime runs a batch row by row), for callers that feed batches to the "
                            "interpreter themselves")
    batch.add_argument("--batch-one", dest="batch_one", action="store_true",
                       help="TFLite: the [1, seq] graph (the default; kept for scripts that pass it)")
    parser.add_argument("--embedding-lookup", action="store_true",
                        help="TFLite: read the embedding tables with EMBEDDING_LOOKUP instead of GATHER (exact), so "
                             "litert-quantizer quantizes the word table too")
    parser.add_argument("--shared-layer-loop", action="store_true",
                        help="TFLite, ALBERT: write the one shared layer once, as a WHILE loop's body, so XNNPACK "
                             "packs its weights once instead of once per layer (less memory; BERT-like files are "
                             "unchanged)")
    parser.add_argument("--attention-head-groups", type=arg_types.head_groups, default=GraphOptions.attention_head_groups,
                        metavar="N", help="TFLite: compute attention for N (1-4) groups of heads in turn, so one group's "
                                          "[seq, seq] scores are in memory at a time: less memory at long texts, "
                                          "more ops to dispatch (default %(default)s: all heads at once)")
    add_pooling_arguments(parser)
    accept_hub_ids(parser, "checkpoint")
    parser.set_defaults(run=run, batch_one=True)


def run(args: argparse.Namespace) -> int:
    labels = [label for label in args.labels.split(",")] if args.labels else None
    options = ConvertOptions(formats=args.formats, max_seq_len=args.max_seq_len, labels=labels, fp16=args.fp16,
                             vocab=args.vocab, do_lower_case=False if args.cased else None, task=args.task,
                             graph_options=GraphOptions(batch_one=args.batch_one,
                                                          embedding_lookup=args.embedding_lookup,
                                                          shared_layer_loop=args.shared_layer_loop,
                                                          attention_head_groups=args.attention_head_groups))
    progress.step(f"read {args.checkpoint}")
    source = ModelSource.load(args.checkpoint, args.config)
    pooled = embedding_task(args, source)
    if pooled is not None:
        options = replace(options, task=pooled)
    report = convert_checkpoint(source, args.out, options, progress=progress.step)
    progress.clear()
    print(f"{report.checkpoint} ({report.scheme}, {report.num_parameters / 1e6:.2f} M parameters, {report.task})")
    print(report.table())
    print(f"report: {report.report_path}")
    warning = placeholder_labels_warning(report.labels, "convert")
    if warning and not labels:  # names the user typed are theirs, whatever they look like
        print(warning, file=sys.stderr)
    return 0


def add_pooling_arguments(parser: argparse.ArgumentParser) -> None:
    """--pooling / --normalize / --pooling-in-runtime: an embedding head (feature extraction)."""
    parser.add_argument("--pooling", choices=POOLING_MODES,
                        help="feature extraction: pool hidden states into one embedding per text (default: the "
                             "sentence-transformers folder's 1_Pooling, else none: hidden states + pooled output)")
    parser.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                        help="L2-normalise the embedding (default: whether modules.json has a Normalize module)")
    parser.add_argument("--pooling-in-runtime", action="store_true",
                        help="return hidden states and pool in the runtime instead of in the graph")


def embedding_task(args: argparse.Namespace, source: ModelSource | None = None):
    """The FeatureExtraction task the pooling flags ask for, or None to let the checkpoint decide.

    The flags are refused (one line) when the checkpoint carries a head of another task or
    ``--task`` names one: they used to turn a token classifier into an embedding model silently,
    dropping its head, where ``predict`` refuses a flag foreign to the model's task. ``--task
    feature_extraction`` says the encoder alone is wanted. ``source`` is read when not given.
    """
    given = [flag for flag, value in (("--pooling", args.pooling), ("--normalize", args.normalize),
                                      ("--pooling-in-runtime", args.pooling_in_runtime or None)) if value is not None]
    if not given:
        return None
    from albert_edge.errors import DataError
    from albert_edge.model.sentence_transformers import read_pooling
    from albert_edge.tasks import FeatureExtraction, detect_task

    if args.task is not None and args.task != FeatureExtraction.name:
        raise DataError(f"{given[0]} is a {FeatureExtraction.name} flag; --task {args.task} has no pooling")
    if args.task is None:
        source = source or ModelSource.load(args.checkpoint, getattr(args, "config", None))
        detected = detect_task(source.weights, source.checkpoint)
        if not isinstance(detected, FeatureExtraction):
            raise DataError(f"{args.checkpoint}: {given[0]} is a {FeatureExtraction.name} flag, but the checkpoint "
                            f"is a {detected.name} model whose head it would drop; pass --task "
                            f"{FeatureExtraction.name} to export the encoder alone")

    found = read_pooling(args.checkpoint)
    pooling = args.pooling or (found.mode if found else "mean")
    normalize = args.normalize if args.normalize is not None else bool(found and found.normalize)
    return FeatureExtraction(pooling, normalize, pooling_in_graph=not args.pooling_in_runtime)
