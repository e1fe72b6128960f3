"""``albert-edge arm-check MODEL... --eval FILE``: our runtime on ARM kernels under qemu-aarch64.

Sets up (or reuses) the cached aarch64 environment, then runs every model under every CPU model
and writes arm_check.json + arm_check.md. See albert_edge.arm for what is measured and why.
"""

from __future__ import annotations

import argparse

from albert_edge.arm.cpus import DEFAULT_CPUS
from albert_edge.cli import arg_types


def _cpu_list(text: str) -> list[str]:
    """``neoverse-n1,cortex-a72,max,sme=off`` -> ["neoverse-n1", "cortex-a72", "max,sme=off"]: an item with
    '=' is a qemu property of the model before it (``max:sme=off`` is accepted too)."""
    specs: list[str] = []
    for item in (x.strip() for x in text.replace(":", ",").split(",") if x.strip()):
        if "=" in item:
            if not specs:
                raise argparse.ArgumentTypeError(f"{text!r}: property {item!r} must follow a CPU model name")
            specs[-1] += f",{item}"
        else:
            specs.append(item)
    if not specs:
        raise argparse.ArgumentTypeError(f"{text!r}: expected CPU model names, e.g. neoverse-n1,cortex-a72")
    return specs


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "arm-check", help="accuracy, drift vs x86 and instruction counts of model files on emulated ARM CPUs",
        description="Run .tflite/.onnx files with albert-edge's runtime on aarch64 LiteRT and ONNX Runtime under "
                    "qemu-aarch64, for each CPU model, on a labelled eval TSV. Reports accuracy, agreement and "
                    "max |Δlogit| against the same file on x86, agreement with the fp32 file, and guest "
                    "instructions per inference (a cost proxy, not a time). The aarch64 environment is set up "
                    "on first use (Debian packages and pinned, hash-checked wheels; cached).")
    parser.add_argument("models", nargs="+", metavar="MODEL", help="packed .tflite or .onnx files")
    parser.add_argument("--eval", dest="eval_path", required=True, help="labelled TSV (label<TAB>text)")
    parser.add_argument("--cpu", type=_cpu_list, default=list(DEFAULT_CPUS),
                        help="qemu CPU models, comma-separated (default: neoverse-n1,cortex-a76,cortex-a72); "
                             "'max' only as max,sme=off")
    parser.add_argument("--limit", type=arg_types.positive_int, default=None, help="use the first N eval texts (default: all)")
    parser.add_argument("--count", type=arg_types.count_or_zero, default=20,
                        help="texts whose instructions per inference are counted at their real length (default 20)")
    parser.add_argument("--count-padded", type=arg_types.count_or_zero, default=3, help="texts counted padded to 128 (default 3)")
    parser.add_argument("--out", default="arm_check", help="output directory (default arm_check)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from albert_edge.arm.check import arm_check
    from albert_edge.arm.report import markdown_section, write
    from albert_edge.outputs.atomic import ensure_writable_dir
    from albert_edge.errors import DataError
    from albert_edge.outputs.claim import claim_output_dir

    if args.count < 0 or args.count_padded < 0:
        raise DataError("arm-check: --count and --count-padded must be >= 0")
    ensure_writable_dir(args.out)   # fail before an hour of emulation, not after
    claim_output_dir(args.out, ("arm_check.json", "arm_check.md"))
    data = arm_check(args.models, args.eval_path, args.cpu, limit=args.limit, count_limit=args.count,
                     count_padded=args.count_padded)
    write(data, args.out)
    print(markdown_section(data))
    print(f"wrote {args.out}/arm_check.json, arm_check.md")
    # Non-zero when some model/CPU pair could not run: the report is complete but has failed rows.
    return 1 if any(row.get("error") for row in data["rows"]) else 0
