"""Fold phone logs (TFLite benchmark_model output) into a report, beside the host numbers.

If ``out_dir`` already holds a report.json (from a host run), device results are appended to it,
replacing earlier device results of the same variant/threads/seq_len/device, so that phone and
host sit in one table. Otherwise a device-only report is started.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from albert_edge import __version__
from albert_edge.bench_latency.analysis import thread_scaling
from albert_edge.bench_latency.device import device_result, parse_benchmark_log
from albert_edge.bench_latency.machine import physical_cores
from albert_edge.bench_latency.output import write_report
from albert_edge.bench_latency.report_md import overall_recommendation
from albert_edge.bench_latency.schema import BenchReport, load_report
from albert_edge.errors import DataError


def _key(result: dict) -> tuple:
    return (result["variant"], result["backend"], result["threads"], result["seq_len"], result["batch"],
            result["source"], result["device"])


def import_device_logs(logs: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str],
                       variant: str | None = None, device: str | None = None) -> BenchReport:
    """Parse each log, merge into ``out_dir``/report.json (created if absent), rewrite the report files.

    The variant is ``variant`` if given, else the stem of the ``Graph:`` path in the log.
    """
    if not logs:
        raise DataError("--import-device-log: expected at least one log file")
    out = Path(out_dir)
    report = _existing_or_new_report(out, "device-only")
    for log in logs:
        path = Path(log)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise DataError(f"{path}: cannot read device log ({exc.strerror or exc})") from None
        for run in parse_benchmark_log(text, str(path)):
            name = variant or Path(run.graph).stem or path.stem
            if report.variant(name) is None:
                report.variants.append({"name": name, "path": run.graph, "format": "tflite", "size_bytes": None,
                                        "sha256": None, "pack_variant": None, "is_baseline": False})
            result = device_result(run, name, device)
            report.results = [r for r in report.results if _key(r) != _key(result)] + [result]
    cores = report.machine.get("physical_cores") or physical_cores()
    report.thread_scaling, report.warnings = thread_scaling(report.results, cores)
    report.recommendation = overall_recommendation(report)
    write_report(report, out)
    return report


def import_arm_report(path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> BenchReport:
    """Fold an ``albert-edge arm-check`` result into ``out_dir``/report.json (created if absent).

    The ARM rows replace any earlier import; the host and device results are kept as they are.
    """
    from albert_edge.arm.report import load

    return _fold_section(out_dir, "arm-emulated-only", "arm_emulated", load(path))


def import_peers_report(path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> BenchReport:
    """Fold a ``benchmarks/suites/peers.py`` JSON into ``out_dir``/report.json (created if absent).

    The peers replace any earlier import; host, device and ARM rows are kept as they are. The peers
    stay in their own section: their ratios are to albert-edge's fp32 file timed in the peers run.
    """
    from albert_edge.bench_latency.peers import load_peers

    return _fold_section(out_dir, "peers-only", "peers", load_peers(path))


def _fold_section(out_dir: str | os.PathLike[str], kind: str, section: str, data: dict) -> BenchReport:
    """Set one imported section (``arm_emulated``, ``peers``) of ``out_dir``/report.json, the rest kept as it is."""
    out = Path(out_dir)
    report = _existing_or_new_report(out, kind)
    setattr(report, section, data)
    write_report(report, out)
    return report


def _existing_or_new_report(out: Path, kind: str) -> BenchReport:
    """The bench report already in ``out`` (imports join it beside host rows), else an empty one of ``kind``."""
    existing = out / "report.json"
    if existing.exists():
        return load_report(existing)
    return BenchReport(settings={"threads": [], "seq_lens": [], "max_drop": 0.5, "baseline": None},
                       machine={"kind": kind}, created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       albert_edge_version=__version__)
