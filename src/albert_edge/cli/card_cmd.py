"""``albert-edge card OUT [--bench DIR]``: a shareable model card (README.md) from OUT's reports."""

from __future__ import annotations

import argparse

from albert_edge.model_card import BENCH_REPORT, CARD_NAME, CONVERSION_REPORT, QUANTIZE_REPORT, write_card


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "card", help="write a model card (README.md with Hugging Face Hub front matter) from a run's reports",
        description=f"Write OUT/{CARD_NAME} for sharing the files in OUT (e.g. on the Hugging Face Hub): front "
                    "matter (license, tags, pipeline_tag by task, base_model when the checkpoint came from the "
                    f"Hub) and tables from OUT/{CONVERSION_REPORT}, OUT/{QUANTIZE_REPORT} and, with --bench, "
                    f"DIR/{BENCH_REPORT} (with a link to its report.png). A {CARD_NAME} that albert-edge did not "
                    "write is never replaced.")
    parser.add_argument("out", metavar="OUT", help="the folder convert / quantize wrote (--out)")
    parser.add_argument("--bench", metavar="DIR", help="a benchmark folder (albert-edge bench --out DIR)")
    parser.add_argument("--license", default="apache-2.0", metavar="ID",
                        help="the Hub license id of the model (default: apache-2.0)")
    parser.add_argument("--base-model", metavar="ORG/NAME",
                        help="the Hub model it was made from (default: found when the checkpoint came from the Hub)")
    parser.add_argument("--title", help="the card's heading (default: the base model or the checkpoint's name)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = write_card(args.out, args.bench, license_id=args.license, base_model=args.base_model, title=args.title)
    print(f"card: {path}")
    return 0
