"""arm_check.json and arm_check.md, and the Markdown section the bench report reuses.

Why one renderer: ``albert-edge bench --import-arm FILE`` folds the same rows into the bench
report (report.json key ``arm_emulated``), so both documents show one table with one meaning.
Instruction counts are always labelled a cost proxy: they are guest instructions counted by
qemu, not phone time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.errors import DataError

REPORT_KEYS = ("tool", "created_utc", "eval", "examples", "host_machine", "emulator", "cpus", "variants", "rows")
ROW_KEYS = ("variant", "cpu", "source", "accuracy", "agreement_vs_x86", "max_abs_logit_diff_vs_x86",
            "agreement_vs_fp32", "instructions_real", "instructions_padded")


def _arm_spec():
    """The types of every field ``markdown_section`` reads (other keys pass as JSON)."""
    from albert_edge.bench_latency.typed import (
        RATIO,
        TEXT,
        Int,
        Json,
        ListOf,
        MapOf,
        Num,
        Obj,
        Optional,
        Str,
    )

    count = Num(0.0, 1e18)  # guest instructions per inference
    summary = Optional(Obj({"median": count, "min": count, "max": count, "count": Int(0, 10**9)}))
    row = Obj({"variant": TEXT, "cpu": TEXT, "source": TEXT, "accuracy": Optional(RATIO),
               "agreement_vs_x86": Optional(RATIO), "max_abs_logit_diff_vs_x86": Optional(Num(0.0, 1e12)),
               "agreement_vs_fp32": Optional(RATIO), "instructions_real": summary, "instructions_padded": summary},
              {"int8_kernels": Optional(TEXT), "padded_length": Optional(Int(1, 1_000_000)), "suspect": Json(),
               "error": Optional(TEXT), "instructions_real_median_length": Optional(Num(0.0, 1e6))})
    return Obj({"tool": TEXT, "created_utc": TEXT, "eval": TEXT, "examples": Int(0, 10**9),
                "host_machine": Obj({}, {"cpu_model": Optional(TEXT), "simd": ListOf(Str(100))}),
                "emulator": Obj({"qemu": TEXT}, {"packages": MapOf(TEXT)}),
                "cpus": ListOf(Obj({"cpu": TEXT, "midr": TEXT, "features": ListOf(Str(100))})),
                "variants": ListOf(Json()), "rows": ListOf(row)},
               {"count_limit": Optional(Int(0, 10**9)), "fp32_reference": Optional(TEXT)})


def validate(data: object, source: str) -> dict:
    """Raise DataError naming the first missing or mistyped field of an arm_check.json; return it."""
    from albert_edge.bench_latency.typed import check

    if not isinstance(data, dict) or data.get("tool") != "albert-edge arm-check":
        raise DataError(f"{source}: not an arm_check.json (no 'tool': 'albert-edge arm-check')")
    missing = [k for k in REPORT_KEYS if k not in data]
    if missing:
        raise DataError(f"{source}: missing keys {', '.join(missing)}")
    if not isinstance(data["rows"], list):
        raise DataError(f"{source}: rows: expected a list, got {type(data['rows']).__name__}")
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict) or any(k not in row for k in ROW_KEYS):
            raise DataError(f"{source}: rows[{i}] lacks one of {', '.join(ROW_KEYS)}")
    check(data, _arm_spec(), source)
    return data


def load(path: str | os.PathLike[str]) -> dict:
    """Read and validate an arm_check.json."""
    from albert_edge.inputs.jsonfile import load_json_file

    return validate(load_json_file(path, DataError), str(path))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}%"


def _millions(summary: dict | None) -> str:
    if not summary:
        return "–"
    text = f"{summary['median'] / 1e6:.1f}M"
    if summary["count"] > 1 and summary["max"] != summary["min"]:
        text += f" ({summary['min'] / 1e6:.1f}–{summary['max'] / 1e6:.1f}M)"
    return text


def _delta(value: float | None) -> str:
    return "–" if value is None else ("0" if value == 0 else f"{value:.2g}")


def markdown_section(data: dict, level: int = 2) -> str:
    """The table of every (variant, CPU) row, the CPU features, and how to read them."""
    head = "#" * level
    machine = data["host_machine"]
    emulator = data["emulator"]
    real_lengths = sorted({r.get("instructions_real_median_length") for r in data["rows"] if r.get("instructions_real_median_length")})
    lines = [
        f"{head} ARM-emulated numerics (qemu-aarch64 {emulator['qemu']}, {data['created_utc'][:10]})",
        "",
        f"Eval: `{data['eval']}`, {data['examples']} examples, batch 1 at each text's real length, 1 interpreter thread. "
        f"x86 host: {machine.get('cpu_model', '?')} ({', '.join(machine.get('simd', [])) or 'no SIMD flags read'}). "
        "\"vs x86\" compares each file with itself on the x86 host; \"vs fp32\" with "
        f"{data.get('fp32_reference') or 'no fp32 file given'} on the x86 host.",
        "",
        "**Instructions per inference are guest instructions counted by a TCG plugin around the invoke: a "
        "deterministic cost proxy for comparing kernel paths, not a time.** "
        f"Real-length counts are medians over the first {data.get('count_limit', '?')} texts (median length "
        f"{', '.join(str(x) for x in real_lengths) or '–'} tokens; range in brackets); padded counts use one length for every text.",
        "",
        "| variant | CPU | int8 kernels | accuracy | agreement vs x86 | max \\|Δlogit\\| vs x86 | agreement vs fp32 "
        "| instructions/inference (real lengths) | instructions/inference (padded) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["rows"]:
        padded = _millions(row.get("instructions_padded"))
        if row.get("instructions_padded"):
            padded += f" at {row.get('padded_length')}"
        flag = " ⚠ suspect" if row.get("suspect") else (" ✗ failed" if row.get("error") else "")
        lines.append(
            f"| {row['variant']} | {row['cpu']}{flag} | {row.get('int8_kernels', 'x86')} | {_pct(row['accuracy'])} "
            f"| {_pct(row['agreement_vs_x86'])} | {_delta(row['max_abs_logit_diff_vs_x86'])} | {_pct(row['agreement_vs_fp32'])} "
            f"| {_millions(row['instructions_real'])} | {padded} |"
        )
    failed = [row for row in data["rows"] if row.get("error")]
    if failed:
        lines += [""] + [f"- failed: {row['error']}" for row in failed]
    lines += ["", "| emulated CPU | MIDR | features (Linux HWCAP names) |", "|---|---|---|"]
    for cpu in data["cpus"]:
        lines.append(f"| {cpu['cpu']} | {cpu['midr']} | {' '.join(cpu['features'])} |")
    packages = emulator.get("packages", {})
    interp = ", ".join(f"{k} {packages[k]}" for k in ("ai-edge-litert", "onnxruntime", "numpy") if k in packages)
    lines += ["", f"Emulator: qemu-user {emulator['qemu']} with the insn_count TCG plugin; aarch64 wheels: {interp}; "
              f"arm64 Python {packages.get('python3.11-minimal:arm64', '?')} from Debian."]
    return "\n".join(lines) + "\n"


def render_markdown(data: dict) -> str:
    from albert_edge.bench_latency.md_escape import md_escaped

    return "# albert-edge arm-check\n\n" + markdown_section(md_escaped(data), level=2)


def write(data: dict, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """arm_check.json + arm_check.md, rendered first and swapped in as one set (the JSON last)."""
    from albert_edge.outputs.output_set import OutputSet

    out = ensure_writable_dir(out_dir)
    markdown = render_markdown(data)
    with OutputSet(out, "arm-check") as staged:
        md = staged.write_text("arm_check.md", markdown)
        js = staged.write_text("arm_check.json", json.dumps(data, indent=1) + "\n")
    return {"arm_check.json": js, "arm_check.md": md}
