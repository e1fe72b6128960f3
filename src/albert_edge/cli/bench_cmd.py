"""``albert-edge bench``: latency, memory and accuracy drift of model variants, or import phone logs."""

from __future__ import annotations

import argparse

from albert_edge.cli import arg_types
from albert_edge.cli.arg_types import positive_int_list, seq_len_list
from albert_edge.errors import DataError

DEFAULT_ROUNDS = 20
DEFAULT_MAX_SECONDS = 300.0


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="which variant to ship: latency per thread count and sequence length, and its accuracy cost",
        description="Benchmark .tflite/.onnx variants (one long-lived process per configuration, timed in paired "
                    "rounds; every ratio with a bootstrap interval) and write "
                    "report.json, report.md, report.png and device_commands.sh; or fold phone logs from "
                    "TFLite's benchmark_model into a report with --import-device-log.")
    parser.add_argument("models", nargs="*", metavar="MODEL", help=".tflite or .onnx files (packed or plain)")
    parser.add_argument("--threads", type=positive_int_list, default=None,
                        help="thread counts (default: 1,2,4,... up to the host's physical cores)")
    parser.add_argument("--seq-len", type=seq_len_list, default=[16, 32, 64, 128],
                        help="sequence lengths, or 'real' for the eval set's token lengths (default 16,32,64,128)")
    parser.add_argument("--batch", type=arg_types.batch_size, default=1,
                        help="texts per call, the input's batch dimension (default 1: one text at a time, as an app calls)")
    parser.add_argument("--runs", type=arg_types.positive_int, default=200,
                        help="timed calls per configuration over the first --rounds rounds (default 200)")
    parser.add_argument("--warmup", type=arg_types.count_or_zero, default=20, help="untimed calls per worker process first (default 20)")
    parser.add_argument("--rounds", type=arg_types.positive_int, default=None,
                        help="paired rounds: every configuration times a short burst per round in its own "
                             f"long-lived process (default {DEFAULT_ROUNDS}, then more until --target-precision "
                             f"or --max-seconds; an explicit --rounds N runs exactly N unless --max-seconds is given)")
    parser.add_argument("--target-precision", type=arg_types.open_share, default=0.03,
                        help="relative half-width every paired ratio's 95%% interval should reach (default 0.03); the "
                             "extra rounds also stop once the ratios the verdict reads are decided or this close")
    parser.add_argument("--max-seconds", type=arg_types.seconds, default=None,
                        help=f"time cap for the extra rounds over the whole sweep (default {DEFAULT_MAX_SECONDS:g} "
                             "when --rounds is not given)")
    parser.add_argument("--eval", dest="eval_path", help="eval file in the model's task format: labelled TSV for classifiers, texts for embeddings, "
                             "an entity .jsonl (or texts) for NER, a SQuAD-style .jsonl for QA, a {\"text\", \"score\"} .jsonl "
                             "(or texts) for regression: drift in the task's metric, and --seq-len real's lengths")
    parser.add_argument("--reference", help="checkpoint for the numpy reference: logit drift of every variant")
    parser.add_argument("--backend", type=lambda t: [x for x in t.split(",") if x],
                        help="comma-separated: litert, litert_buckets (LiteRT with one interpreter per padded "
                             "length bucket), tflite_runtime, tf, onnxruntime (default: litert for .tflite, "
                             "onnxruntime for .onnx)")
    parser.add_argument("--baseline", help="variant name or path the others are compared with (default: fp32)")
    parser.add_argument("--max-drop", type=arg_types.accuracy_points, default=0.5,
                        help="accuracy budget in percentage points for the recommendation (default 0.5)")
    parser.add_argument("--pin", action="store_true", help="pin each worker to the first N CPUs (sched_setaffinity)")
    parser.add_argument("--out", default="bench_report", help="report directory (default bench_report)")
    parser.add_argument("--import-device-log", nargs="+", metavar="FILE",
                        help="parse TFLite benchmark_model output into --out/report.json instead of benchmarking")
    parser.add_argument("--import-arm", metavar="FILE",
                        help="fold an arm_check.json (albert-edge arm-check) into --out/report.json instead of benchmarking")
    parser.add_argument("--import-peers", metavar="FILE",
                        help="fold a benchmarks/suites/peers.py JSON into --out/report.json instead of benchmarking")
    parser.add_argument("--variant", help="with --import-device-log: the variant name (default: the graph's stem)")
    parser.add_argument("--device", help="with --import-device-log: a device label, e.g. 'Pixel 7'")
    parser.set_defaults(run=run)


def _print_table(report, out: str) -> None:
    """One screen: the verdict block (``albert_edge.verdict``); tables and warnings are in report.md."""
    from albert_edge.bench_latency.bench_verdict import bench_verdict
    from albert_edge.verdict import verdict_lines

    print("\n".join(verdict_lines(bench_verdict(report, details=f"{out}/report.md"))))


def _refuse_conflicting_modes(args: argparse.Namespace) -> None:
    """Benchmarking and each import are different runs; given together, one would be silently dropped."""
    imports = [flag for flag, value in (("--import-device-log", args.import_device_log), ("--import-arm", args.import_arm),
                                        ("--import-peers", args.import_peers)) if value]
    if len(imports) > 1:
        raise DataError(f"bench: {' and '.join(imports)} are separate runs; give one at a time")
    if imports and args.models:
        raise DataError(f"bench: {imports[0]} imports instead of benchmarking; drop the MODEL files "
                        f"({' '.join(args.models)}) or the import")


def run(args: argparse.Namespace) -> int:
    _refuse_conflicting_modes(args)
    if args.import_device_log:
        from albert_edge.bench_latency.importer import import_device_logs

        report = import_device_logs(args.import_device_log, args.out, args.variant, args.device)
        _print_table(report, args.out)
        print(f"wrote {args.out}/report.json, report.md, report.png")
        return 0
    if args.import_arm:
        from albert_edge.bench_latency.importer import import_arm_report

        import_arm_report(args.import_arm, args.out)
        print(f"wrote {args.out}/report.json, report.md (ARM-emulated section from {args.import_arm})")
        return 0
    if args.import_peers:
        from albert_edge.bench_latency.importer import import_peers_report

        import_peers_report(args.import_peers, args.out)
        print(f"wrote {args.out}/report.json, report.md, report.png (peers section from {args.import_peers})")
        return 0
    if not args.models:
        raise DataError("bench: expected MODEL files (or --import-device-log FILE)")
    from albert_edge.bench_latency.options import BenchOptions
    from albert_edge.bench_latency.output import REPORT_FILES
    from albert_edge.bench_latency.runner import run_benchmark
    from albert_edge.outputs.claim import claim_output_dir

    claim_output_dir(args.out, REPORT_FILES)  # before minutes of timing, not after

    options = BenchOptions(
        threads=args.threads, seq_lens=args.seq_len, batch=args.batch, runs=args.runs, warmup=args.warmup,
        rounds=args.rounds or DEFAULT_ROUNDS, eval_path=args.eval_path, reference=args.reference,
        backends=args.backend, pin=args.pin, max_drop=args.max_drop, baseline=args.baseline,
        target_precision=args.target_precision,
        # Without --rounds the run is adaptive; an explicit --rounds N keeps its old meaning (N rounds).
        max_seconds=args.max_seconds or (DEFAULT_MAX_SECONDS if args.rounds is None else None))
    report = run_benchmark(args.models, options, out_dir=args.out, progress=not args.no_progress)
    _print_table(report, args.out)
    print(f"wrote {args.out}/report.json, report.md, report.png, device_commands.sh")
    return 0
