"""``albert-edge demo``: the whole pipeline on the shipped ALBERT-Tiny sentiment sample."""

from __future__ import annotations

import argparse
from dataclasses import replace

from albert_edge import progress
from albert_edge.cli import arg_types
from albert_edge.cli.arg_types import positive_int, positive_int_list, seq_len_list
from albert_edge.demo.pipeline import DemoSettings, run_demo
from albert_edge.demo.examples import DEFAULT_COUNT, DEFAULT_SEED


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="convert, quantize and benchmark the shipped ALBERT-Tiny sample, end to end",
        description="Load the trained sample checkpoint (examples/albert_tiny_zh_sentiment), convert it to "
                    "TFLite and ONNX (fp32, fp16), quantize (dynamic int8, int8, auto within --max-drop), "
                    "benchmark every variant against accuracy on the held-out test split, and print where "
                    "everything went.")
    parser.add_argument("--out", default="demo_out", metavar="DIR", help="output directory (default: demo_out)")
    parser.add_argument("--sample", metavar="DIR", help="sample checkpoint directory (default: the shipped one)")
    parser.add_argument("--threads", type=positive_int_list, default=None,
                        help="thread counts to time (default: 1,2,4,... up to the host's physical cores)")
    parser.add_argument("--seq-len", type=seq_len_list, default=["real", 128], help="sequence lengths and/or 'real' (default: real,128)")
    parser.add_argument("--runs", type=arg_types.positive_int, default=100, help="timed runs per configuration (default: 100)")
    parser.add_argument("--max-drop", type=arg_types.accuracy_points, default=0.5, help="accuracy budget in points (default: 0.5)")
    parser.add_argument("--examples", type=positive_int, default=DEFAULT_COUNT, metavar="N",
                        help=f"held-out test examples to show at the end, with gold labels (default: {DEFAULT_COUNT})")
    parser.add_argument("--seed", type=arg_types.seed, default=DEFAULT_SEED,
                        help=f"seed of the random pick of held-out examples (default: {DEFAULT_SEED})")
    parser.add_argument("--text", action="append", default=[], metavar="TEXT",
                        help="also classify this text of your own at the end (repeatable)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = DemoSettings(seq_lens=tuple(args.seq_len), runs=args.runs, example_count=args.examples,
                            example_seed=args.seed, texts=tuple(args.text))
    settings.quantize = replace(settings.quantize, max_drop=args.max_drop)
    if args.threads:
        settings.threads = tuple(args.threads)
    from albert_edge.outputs.atomic import ensure_writable_dir
    from albert_edge.demo.console import quiet_console

    log_path = ensure_writable_dir(args.out) / "demo_chatter.log"
    with quiet_console(log_path, enabled=not getattr(args, "verbose", False)) as console:
        result = run_demo(args.out, sample=args.sample, settings=settings,
                          log=lambda line: _say(line, console), progress=progress.step)
    print()
    print(f"models:            {result.out_dir / 'models'}")
    print(f"conversion report: {result.conversion_report}")
    print(f"quantize report:   {result.quantize_report}")
    print(f"benchmark report:  {result.bench_dir}/report.md, report.json, report.png, device_commands.sh")
    print(f"predictions:       {result.out_dir / 'predictions.json'}")
    print("seconds per stage: " + ", ".join(f"{k} {v:g}" for k, v in result.seconds.items()))
    if not getattr(args, "verbose", False):
        print(f"library output:    {log_path} (--verbose shows it)")
    print()
    print("\n".join(result.verdict))  # the last screen: what to ship, from this run's own measurements
    return 0


def _say(line: str, console) -> None:
    """A demo line on the console, after wiping a progress status line it would otherwise continue."""
    progress.clear()
    print(line, file=console, flush=True)
