"""``albert-edge pretrain``: masked-LM pre-training of ALBERT on unlabelled text (TensorFlow, CPU)."""

from __future__ import annotations

import argparse

from albert_edge.cli import arg_types
from albert_edge.cli.training_args import add_training_arguments


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "pretrain",
        help="masked-LM pre-training on plain text; writes an albert_zh TF1 checkpoint to fine-tune from",
        description="Pack the texts into full-length rows, mask 15%% of the tokens afresh every step and train "
        "the encoder with a tied-decoder MLM head (with --init, the checkpoint's cls/predictions head is resumed). --out always holds the newest complete checkpoint "
        "(model.ckpt-STEP with cls/predictions/* beside the model), albert_config.json, vocab.txt and "
        "pretrain_log.json; pass it to `albert-edge finetune --init`.",
    )
    add_training_arguments(p, lr=5e-4, warmup=0.05, embeddings_from="the texts")
    p.add_argument("--text", action="append", required=True,
                   help="text file (one text per line) or TSV (text columns); repeat for several")
    p.add_argument("--heldout", required=True, help="held-out texts for the MLM loss/accuracy (e.g. dev.tsv)")
    p.add_argument("--steps", type=arg_types.positive_int, default=4000, help="training steps (default 4000)")
    p.add_argument("--mask-prob", type=arg_types.open_share, default=0.15,
                   help="share of tokens masked afresh every step (default 0.15)")
    p.add_argument("--evals", type=arg_types.positive_int, default=10, help="held-out evaluations (and checkpoints) per run")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.finetune.pretrain import PretrainSettings
    from albert_edge.finetune.recipe import pretrain_files
    from albert_edge.outputs.claim import CHECKPOINT_FILES, claim_output_dir

    claim_output_dir(args.out, patterns=CHECKPOINT_FILES)  # before the training, not after it

    settings = PretrainSettings(
        steps=args.steps, max_seq_len=args.max_seq_len, batch_size=args.batch_size, learning_rate=args.lr,
        warmup_ratio=args.warmup, weight_decay=args.weight_decay, dropout=args.dropout, mask_prob=args.mask_prob,
        seed=args.seed, threads=args.threads, evals=args.evals,
    )
    result = pretrain_files(args.config, args.text, args.heldout, args.out, settings, vocab=args.vocab,
                            init=args.init, init_embeddings=args.init_embeddings,
                            log=lambda m: print(m, flush=True), progress=not args.no_progress)
    return 130 if result.interrupted else 0
