"""The arguments `finetune` and `pretrain` share: model source, optimizer, threads and seed.

One definition, so the two training commands cannot drift apart in names or meaning.
"""

from __future__ import annotations

import argparse

from albert_edge.cli import arg_types


def add_training_arguments(p: argparse.ArgumentParser, lr: float, warmup: float, embeddings_from: str) -> None:
    """Add ``--config --out --init --init-embeddings --vocab --max-seq-len --batch-size --lr --warmup
    --weight-decay --dropout --threads --seed`` (``--no-progress`` is global); ``lr``/``warmup`` are the defaults."""
    p.add_argument("--config", default="albert_tiny", help="albert_tiny, or a config JSON (ignored with --init)")
    p.add_argument("--out", required=True, help="output checkpoint directory")
    p.add_argument("--init", help="start from this checkpoint (TF1 prefix/dir or HF dir) instead of random init")
    p.add_argument("--init-embeddings", choices=("random", "ppmi-svd"), default="random",
                   help=f"without --init: start word embeddings from PPMI-SVD co-occurrence vectors of {embeddings_from}")
    p.add_argument("--vocab", help="vocab.txt (default: the vocab.txt beside --init, beside a --config JSON, "
                   "or beside the data files; albert_tiny needs the bert-base-chinese vocab)")
    p.add_argument("--max-seq-len", type=arg_types.model_seq_len, default=None, metavar="N",
                   help="tokens per row, [CLS] and [SEP] included (default 128, or the model's max_position_embeddings if fewer)")
    p.add_argument("--batch-size", type=arg_types.batch_size, default=32, help="rows per training step (default 32)")
    p.add_argument("--lr", type=arg_types.learning_rate, default=lr, help="peak AdamW learning rate")
    p.add_argument("--warmup", type=arg_types.share_below_one, default=warmup, help="warmup share of the steps")
    p.add_argument("--weight-decay", type=arg_types.weight_decay, default=0.01,
                   help="AdamW decoupled weight decay (default 0.01)")
    p.add_argument("--dropout", type=arg_types.share_below_one, default=0.1,
                   help="dropout share on hidden states and attention while training (default 0.1)")
    p.add_argument("--threads", type=arg_types.threads, default=2, help="TensorFlow CPU threads (default 2)")
    p.add_argument("--seed", type=arg_types.seed, default=0,
                   help="seed of the initialisation, shuffling and masking: same seed, same run (default 0)")
