"""``albert-edge android-assets``: fill the Android demo's assets, or regenerate its test goldens.

    albert-edge android-assets MODEL.tflite android_demo/app/src/main/assets
    albert-edge android-assets --golden-only android_demo/albert-core/src/test/resources
"""

from __future__ import annotations

import argparse
from pathlib import Path

from albert_edge.errors import DataError

_TABLES_UNDER_RESOURCES = Path("../../main/java/org/albertedge/core/UnicodeTables.java")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "android-assets",
        help="copy a packed .tflite and its golden files into the Android demo",
        description=(
            "Copy MODEL (a .tflite with its albert-edge pack) to ASSETS_DIR/model.tflite and write "
            "golden_tokenization.jsonl and golden_logits.jsonl (golden_ner.jsonl for a token-classification "
            "model, golden_qa.jsonl for a question-answering one: each --sentences line is then a context) for it, which the app's instrumented test checks on the phone. With --golden-only DIR, "
            "regenerate the committed JVM-test goldens (and UnicodeTables.java) instead."
        ),
    )
    p.add_argument("model", nargs="?", help="packed .tflite written by albert-edge convert/quantize (the file quantize chose is OUT/model.tflite)")
    p.add_argument("assets_dir", nargs="?", help="the app's assets directory, e.g. android_demo/app/src/main/assets")
    p.add_argument("--sentences", help="UTF-8 file of golden input texts, one per line")
    p.add_argument("--no-logits", action="store_true", help="skip the model goldens (golden_logits/ner/qa.jsonl; needs no interpreter)")
    p.add_argument(
        "--golden-only",
        metavar="DIR",
        help="regenerate the albert-core test goldens in DIR (reads DIR/vocab.txt and DIR/golden_sentences.txt)",
    )
    p.add_argument("--vocab", help="with --golden-only: vocab.txt to use (default DIR/vocab.txt)")
    p.add_argument(
        "--reviews",
        nargs=2,
        metavar=("POS", "NEG"),
        help="with --golden-only: re-pick DIR/golden_sentences.txt from these review files first",
    )
    p.add_argument(
        "--unicode-tables",
        help="with --golden-only: where to write UnicodeTables.java (default: beside DIR in the albert-core layout)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.android import goldens as android

    if args.golden_only:
        return _run_golden_only(args, android)
    if not args.model or not args.assets_dir:
        raise DataError("android-assets: expected MODEL and ASSETS_DIR (or --golden-only DIR)")
    sentences = android.read_sentences(args.sentences) if args.sentences else None
    written = android.write_android_assets(args.model, args.assets_dir, sentences, with_logits=not args.no_logits)
    for path in written:
        print(f"wrote {path}")
    return 0


def _run_golden_only(args: argparse.Namespace, android) -> int:
    out = Path(args.golden_only)
    sentences_path = Path(args.sentences) if args.sentences else out / android.SENTENCES_FILE
    if args.reviews:
        picked = android.review_sentences(args.reviews[0], args.reviews[1])
        print(f"wrote {android.write_sentences(sentences_path, picked)}")
    tables = Path(args.unicode_tables) if args.unicode_tables else (out / _TABLES_UNDER_RESOURCES).resolve()
    if not args.unicode_tables and not tables.parent.is_dir():
        tables = None
    vocab = Path(args.vocab) if args.vocab else out / android.VOCAB_FILE
    for path in android.write_test_goldens(out, vocab, sentences_path, tables):
        print(f"wrote {path}")
    from albert_edge.android import ner as android_ner

    # Offsets and tag decoding (token classification); the NER model's own golden is rebuilt with
    # tests/support/android_fixtures.py, which trains that model.
    for path in android_ner.write_offset_goldens(out):
        print(f"wrote {path}")
    return 0
