"""Write the four report files as one set: report.json, report.md, report.png, device_commands.sh."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.bench_latency.device import device_commands_script
from albert_edge.bench_latency.plot import render_png
from albert_edge.bench_latency.report_md import render_markdown
from albert_edge.bench_latency.schema import BenchReport, validate_report
from albert_edge.outputs.output_set import OutputSet

REPORT_FILES = ("report.json", "report.md", "report.png", "device_commands.sh")


def write_report(report: BenchReport, out_dir: str | os.PathLike[str],
                 device_seq_lens: Sequence[int] | None = None) -> dict[str, Path]:
    """Write the report files into ``out_dir``; device_commands.sh only when a .tflite was benchmarked.

    Everything is rendered first and the files are swapped in as one set (report.json last): a
    render error used to leave a new report.json beside the old .md/.png, and every later import
    then failed on the mix.
    """
    out = ensure_writable_dir(out_dir)
    data = report.to_dict()
    validate_report(data, "report")
    markdown = render_markdown(report)
    script = None
    tflite = [(v["name"], Path(v["path"])) for v in report.variants
              if v["format"] == "tflite" and Path(v["path"]).exists()]
    seq_lens = list(device_seq_lens or [s for s in report.settings.get("seq_lens", []) if isinstance(s, int)])
    if tflite and seq_lens:
        script = device_commands_script(tflite, report.settings.get("threads", [1]), seq_lens,
                                        report.settings.get("batch", 1), report.settings.get("warmup", 20),
                                        report.settings.get("runs", 200))
    paths: dict[str, Path] = {}
    with OutputSet(out, "bench") as staged:
        paths["report.md"] = staged.write_text("report.md", markdown)
        if report.results or report.peers:
            render_png(report, staged.stage_dir() / "report.png")
            paths.update((p.name, p) for p in staged.adopt_staged())
        if script is not None:
            paths["device_commands.sh"] = staged.write_text("device_commands.sh", script)
            os.chmod(staged.stage_dir() / "device_commands.sh", 0o755)
        paths["report.json"] = staged.write_text("report.json", report.to_json())
    return {name: paths[name] for name in REPORT_FILES if name in paths}
