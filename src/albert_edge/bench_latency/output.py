"""Write the four report files atomically: report.json, report.md, report.png, device_commands.sh."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from albert_edge.atomic import atomic_path, ensure_writable_dir, write_text_atomic
from albert_edge.bench_latency.device import device_commands_script
from albert_edge.bench_latency.plot import render_png
from albert_edge.bench_latency.report_md import render_markdown
from albert_edge.bench_latency.schema import BenchReport, validate_report

REPORT_FILES = ("report.json", "report.md", "report.png", "device_commands.sh")


def write_report(report: BenchReport, out_dir: str | os.PathLike[str],
                 device_seq_lens: Sequence[int] | None = None) -> dict[str, Path]:
    """Write the report files into ``out_dir``; device_commands.sh only when a .tflite was benchmarked."""
    out = ensure_writable_dir(out_dir)
    data = report.to_dict()
    validate_report(data, "report")
    paths = {"report.json": write_text_atomic(out / "report.json", report.to_json()),
             "report.md": write_text_atomic(out / "report.md", render_markdown(report))}
    if report.results or report.peers:
        with atomic_path(out / "report.png") as tmp:
            render_png(report, tmp)
        paths["report.png"] = out / "report.png"
    tflite = [(v["name"], Path(v["path"])) for v in report.variants
              if v["format"] == "tflite" and Path(v["path"]).exists()]
    seq_lens = list(device_seq_lens or [s for s in report.settings.get("seq_lens", []) if isinstance(s, int)])
    if tflite and seq_lens:
        script = device_commands_script(tflite, report.settings.get("threads", [1]), seq_lens,
                                        report.settings.get("batch", 1), report.settings.get("warmup", 20),
                                        report.settings.get("runs", 200))
        paths["device_commands.sh"] = write_text_atomic(out / "device_commands.sh", script)
    for name, path in paths.items():
        # mkstemp creates 0600 files; a report is meant to be shared.
        os.chmod(path, 0o755 if name.endswith(".sh") else 0o644)
    return paths
