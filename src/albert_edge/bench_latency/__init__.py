"""Latency, memory and accuracy drift of model variants: which one to ship, on how many threads.

``run_benchmark(models, BenchOptions(threads=..., seq_lens=...), out_dir=...) -> BenchReport`` sweeps every variant x
backend x threads x sequence length, one process per configuration (``worker``), interleaving
variants so that ratios measured in one run are fair. ``import_device_logs`` folds TFLite
``benchmark_model`` output from a phone into the same report. Schema: ``schema`` module docstring
and docs/report_schema.md.

Names resolve lazily so that a worker process imports only numpy and its interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert_edge.lazy import lazy_getattr

if TYPE_CHECKING:
    # The same names for type checkers, which do not see the lazy __getattr__ below.
    from albert_edge.bench_latency.device import device_commands_script, parse_benchmark_log
    from albert_edge.bench_latency.importer import import_device_logs
    from albert_edge.bench_latency.machine import describe_machine
    from albert_edge.bench_latency.options import BenchOptions
    from albert_edge.bench_latency.output import write_report
    from albert_edge.bench_latency.report_md import render_markdown
    from albert_edge.bench_latency.runner import describe_variants, run_benchmark
    from albert_edge.bench_latency.schema import BenchReport, SCHEMA_VERSION, load_report, validate_report
    from albert_edge.bench_latency.stats import summarize

_EXPORTS = {
    "run_benchmark": "albert_edge.bench_latency.runner",
    "BenchOptions": "albert_edge.bench_latency.options",
    "describe_variants": "albert_edge.bench_latency.runner",
    "BenchReport": "albert_edge.bench_latency.schema",
    "SCHEMA_VERSION": "albert_edge.bench_latency.schema",
    "load_report": "albert_edge.bench_latency.schema",
    "validate_report": "albert_edge.bench_latency.schema",
    "write_report": "albert_edge.bench_latency.output",
    "import_device_logs": "albert_edge.bench_latency.importer",
    "parse_benchmark_log": "albert_edge.bench_latency.device",
    "device_commands_script": "albert_edge.bench_latency.device",
    "render_markdown": "albert_edge.bench_latency.report_md",
    "describe_machine": "albert_edge.bench_latency.machine",
    "summarize": "albert_edge.bench_latency.stats",
}

__all__ = sorted(_EXPORTS)

if not TYPE_CHECKING:
    # Hidden from type checkers, so that a misspelt name is an error there rather than Any.
    __getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
