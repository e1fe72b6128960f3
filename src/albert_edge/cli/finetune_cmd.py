"""``albert-edge finetune``: train ALBERT for sequence classification on the CPU (TensorFlow)."""

from __future__ import annotations

import argparse

from albert_edge.cli import arg_types
from albert_edge.cli.hub_args import accept_hub_ids
from albert_edge.cli.training_args import add_training_arguments


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune ALBERT(-Tiny) for text classification; writes an albert_zh (brightmart) TF1 checkpoint",
        description="Train from random init (--config) or a checkpoint (--init) on label<TAB>text TSV files. "
        "Writes model.ckpt-STEP (no optimizer slots), checkpoint, albert_config.json, vocab.txt, labels.txt "
        "and finetune_log.json to --out; the best dev-accuracy step is kept.",
    )
    add_training_arguments(p, lr=1e-3, warmup=0.1, embeddings_from="the train texts")
    p.add_argument("--train", required=True, help="training TSV (label<TAB>text or label<TAB>text_a<TAB>text_b)")
    p.add_argument("--dev", required=True, help="dev TSV, evaluated during training to pick the best step")
    p.add_argument("--test", help="optional test TSV, evaluated once with the best weights")
    p.add_argument("--labels", help="labels.txt or comma list, in class-id order (default: sorted train labels)")
    p.add_argument("--epochs", type=arg_types.epochs, default=3.0, help="passes over --train, may be fractional (default 3)")
    p.add_argument("--evals-per-epoch", type=arg_types.positive_int, default=1,
                   help="dev evaluations (best-step candidates) per epoch (default 1)")
    p.add_argument("--max-steps", type=arg_types.positive_int, help="stop after this many steps (smoke runs)")
    p.add_argument("--teacher", help="soft targets for --train (out-of-fold teacher probabilities, e.g. from "
                   "examples/albert_tiny_zh_sentiment/baseline_tfidf.py --teacher-out): distil them into the model")
    p.add_argument("--distill-weight", type=arg_types.share,
                   help="share of the loss on the teacher's soft targets, 0..1 (default 0.5 with --teacher, else 0)")
    accept_hub_ids(p, "init")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.finetune.recipe import finetune_files
    from albert_edge.finetune.trainer import FinetuneSettings
    from albert_edge.outputs.claim import CHECKPOINT_FILES, claim_output_dir

    claim_output_dir(args.out, patterns=CHECKPOINT_FILES)  # before the training, not after it

    settings = FinetuneSettings(
        epochs=args.epochs, max_seq_len=args.max_seq_len, batch_size=args.batch_size, learning_rate=args.lr,
        warmup_ratio=args.warmup, weight_decay=args.weight_decay, dropout=args.dropout, seed=args.seed,
        threads=args.threads, max_steps=args.max_steps, evals_per_epoch=args.evals_per_epoch,
        distill_weight=args.distill_weight if args.distill_weight is not None else (0.5 if args.teacher else 0.0),
    )
    result, _ = finetune_files(
        args.config, args.train, args.dev, args.out, settings, vocab=args.vocab, init=args.init,
        labels=args.labels, test_path=args.test, log=lambda m: print(m, flush=True), progress=not args.no_progress, init_embeddings=args.init_embeddings,
        teacher=args.teacher,
    )
    return 130 if result.interrupted else 0
