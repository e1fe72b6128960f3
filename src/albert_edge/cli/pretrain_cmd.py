"""``albert-edge pretrain``: masked-LM pre-training of ALBERT on unlabelled text (TensorFlow, CPU)."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "pretrain",
        help="masked-LM pre-training on plain text; writes an albert_zh TF1 checkpoint to fine-tune from",
        description="Pack the texts into full-length rows, mask 15%% of the tokens afresh every step and train "
        "the encoder with a tied-decoder MLM head. --out always holds the newest complete checkpoint "
        "(model.ckpt-STEP with cls/predictions/* beside the model), albert_config.json, vocab.txt and "
        "pretrain_log.json; pass it to `albert-edge finetune --init`.",
    )
    p.add_argument("--config", default="albert_tiny", help="albert_tiny, or a config JSON (ignored with --init)")
    p.add_argument("--text", action="append", required=True,
                   help="text file (one text per line) or TSV (text columns); repeat for several")
    p.add_argument("--heldout", required=True, help="held-out texts for the MLM loss/accuracy (e.g. dev.tsv)")
    p.add_argument("--out", required=True, help="output checkpoint directory")
    p.add_argument("--init", help="continue from this checkpoint instead of random init")
    p.add_argument("--init-embeddings", choices=("random", "ppmi-svd"), default="random",
                   help="without --init: start word embeddings from PPMI-SVD vectors of the texts")
    p.add_argument("--vocab", help="vocab.txt (default: the --init directory's)")
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--max-seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-4, help="peak AdamW learning rate")
    p.add_argument("--warmup", type=float, default=0.05, help="warmup share of the steps")
    p.add_argument("--mask-prob", type=float, default=0.15)
    p.add_argument("--evals", type=int, default=10, help="held-out evaluations (and checkpoints) per run")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.finetune.pretrain import PretrainSettings
    from albert_edge.finetune.recipe import pretrain_files

    settings = PretrainSettings(
        steps=args.steps, max_seq_len=args.max_seq_len, batch_size=args.batch_size, learning_rate=args.lr,
        warmup_ratio=args.warmup, mask_prob=args.mask_prob, seed=args.seed, threads=args.threads, evals=args.evals,
    )
    result = pretrain_files(args.config, args.text, args.heldout, args.out, settings, vocab=args.vocab,
                            init=args.init, init_embeddings=args.init_embeddings,
                            log=lambda m: print(m, flush=True), progress=not args.no_progress)
    return 130 if result.interrupted else 0
