"""What a quantize run reports: one ``VariantResult`` per built variant and the ``QuantizeReport``.

``quantize_report.json`` is ``QuantizeReport.to_dict()``; ``table()`` is the printed summary, and
the decision-log and relax sentences are made here so that the report reads the same whichever
step filled it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from albert_edge import __version__
from albert_edge.quantize.auto import Budget, budget_failures
from albert_edge.tasks import Task, TaskDrift
from albert_edge.verdict import Verdict

REPORT_NAME = "quantize_report.json"
#: The human side of the report: every variant's row, the worst ops and the decision log (the console
#: shows only the verdict block and this file's path).
REPORT_MD = "quantize_report.md"
#: Prefix of the files written when no variant meets the budget (the best effort, marked in its name).
OVER_BUDGET_PREFIX = "over_budget_"
# A run that meets no budget (exit 3) writes its report and best effort here, inside --out: the
# previous run's shippable model and report stay exactly as they were.
OVER_BUDGET_DIR = "over_budget"
#: Every built variant is written here (``variants/dynamic_int8.tflite``); the chosen one is also
#: ``model.tflite`` / ``model.onnx`` beside it, the one name an app, a doc or a command ships.
VARIANTS_DIR = "variants"
SHIPPED_NAMES = ("model.tflite", "model.onnx")


def shipped_name(fmt: str) -> str:
    """``model.tflite`` or ``model.onnx``: the file of the chosen variant of format ``fmt``."""
    return f"model.{fmt}"


def variant_file_name(fmt: str, variant: str) -> str:
    """``variants/dynamic_int8.tflite``: where a quantize run keeps each candidate (convert's
    ``model_fp32.tflite`` and the shipped ``model.tflite`` in the same folder never collide with it)."""
    return f"{VARIANTS_DIR}/{variant}.{fmt}"


@dataclass
class VariantResult:
    """One built variant: what it is, what it costs (size, latency), what it loses (drift)."""

    name: str
    format: str
    size_bytes: int = 0
    census: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, float] | None = None
    ratio_vs_fp32: float | None = None
    #: The per-round time ratio to fp32 with its interval (``measure.ratio_interval``): the verdict's speed.
    ratio_interval: dict[str, Any] | None = None
    drift: TaskDrift | None = None
    error: str | None = None
    float_fallback: list[str] = field(default_factory=list)
    file: str | None = None
    meets_budget: bool = False
    #: Why the variant was not judged (``auto.not_judged``: no rows, or too few for the agreement asked).
    not_judged: str | None = None
    gate: str | None = None
    fallback_of: str | None = None
    data: bytes = field(default=b"", repr=False)

    @property
    def key(self) -> str:
        return f"{self.format}:{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "format": self.format, "file": self.file, "size_bytes": self.size_bytes,
                "latency": self.latency, "ratio_vs_fp32": self.ratio_vs_fp32, "ratio_interval": self.ratio_interval,
                "drift": None if self.drift is None else self.drift.to_dict(), "error": self.error,
                "float_fallback": self.float_fallback, "fallback_of": self.fallback_of,
                "meets_budget": self.meets_budget, "not_judged": self.not_judged, "agreement_gate": self.gate,
                "census": self.census}


@dataclass
class QuantizeReport:
    """What ``quantize_report.json`` holds; ``table()`` is the printed summary."""

    checkpoint: str
    mode: str
    budget: Budget
    calibration: dict[str, Any]
    judge: dict[str, Any]
    timing: dict[str, Any]
    variants: list[VariantResult] = field(default_factory=list)
    chosen: str | None = None
    decision_log: list[str] = field(default_factory=list)
    report_path: str | None = None
    seconds: float = 0.0
    status: str = "explicit"
    best_effort: str | None = None
    relax: str | None = None
    error_tables: dict[str, Any] = field(default_factory=dict)
    fallback: list[dict[str, Any]] = field(default_factory=list)
    #: Per searched dynamic int8 variant that misses the budget: the ops that keep it from the budget
    #: (``held_back``); the printed ``held back by:`` lines.
    held_back: list[dict[str, Any]] = field(default_factory=list)
    #: ``{"model.tflite": {"variant", "key", "copy_of", "size_bytes", "ratio_vs_fp32", "drift"}}``: which
    #: variant each shipped file is (``pipeline._ship``); empty when nothing was chosen.
    shipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: How the TFLite graphs were written (``{"tflite": {"attention_head_groups": N}}``), as convert's report says.
    graph: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"albert_edge_version": __version__, "checkpoint": self.checkpoint, "mode": self.mode,
                "status": self.status, "shipped": self.shipped, "budget": self.budget.to_dict(),
                "min_judge_rows": min_rows(self.budget), "calibration": self.calibration, "judge": self.judge,
                "timing": self.timing, "chosen": self.chosen, "best_effort": self.best_effort, "relax": self.relax,
                "decision_log": self.decision_log, "fallback": self.fallback, "held_back": self.held_back,
                "graph": self.graph, "variants": [v.to_dict() for v in self.variants],
                "error_tables": {k: t.to_dict() for k, t in self.error_tables.items()},
                "seconds": round(self.seconds, 1)}

    def offenders(self, n: int = 5) -> list[str]:
        """The worst ops of each variant's error table, for the console."""
        lines = []
        for table in self.error_tables.values():
            lines += table.lines(n)
        return (["worst ops (local = the op alone on the variant's own float input; graph = vs fp32 at that point):"]
                + lines) if lines else []

    def table(self) -> str:
        """One row per variant: size, time, the task's drift columns (``TaskDrift.columns``), census."""
        drifts = [v.drift for v in self.variants if v.drift is not None]
        columns = drifts[0].table_columns() if drifts else ()
        widths = [max(8, len(c.header) + 1) for c in columns]
        header = (f"{'format':<7}{'variant':<22}{'size MB':>8}{'median ms':>10}{'x fp32':>7}"
                  + "".join(f"{c.header:>{w}}" for c, w in zip(columns, widths)) + f"{'Q/DQ':>8}{'XNNPACK':>9}  budget")
        rows = [header, "-" * len(header)]
        for v in self.variants:
            d, c, lat = v.drift, v.census, v.latency
            qdq = f"{c.get('quantize', 0)}/{c.get('dequantize', 0)}" if c else "-"
            xnn = f"{c['delegated_nodes']}/{c['total_nodes']}" if "delegated_nodes" in c else "-"
            mark = ("CHOSEN" if v.key == self.chosen else "ok" if v.meets_budget else "ref" if v.name == "fp32"
                    else "not judged" if v.not_judged else "no")
            if v.error:
                rows.append(f"{v.format:<7}{v.name:<22}{v.size_bytes / 1e6:>8.2f}  error: {v.error}")
                continue
            values = d.to_dict() if d is not None else {}
            rows.append(f"{v.format:<7}{v.name:<22}{v.size_bytes / 1e6:>8.2f}{_f(lat and lat['median_ms'], 2):>10}"
                        f"{_f(v.ratio_vs_fp32, 2):>7}" + "".join(f"{col.cell(values):>{w}}" for col, w in zip(columns, widths))
                        + f"{qdq:>8}{xnn:>9}  {mark}")
        return "\n".join(rows + ["", *self.offenders(), "", *self.decision_log])

    def markdown(self) -> str:
        """``quantize_report.md``: the verdict, then the table and decision log as printed text."""
        from albert_edge.verdict import verdict_lines

        shipped = [f"- `{name}` is `{item['copy_of']}` ({item['variant']})" for name, item in self.shipped.items()]
        return "\n".join(["# albert-edge quantize", "", "```", *verdict_lines(quantize_verdict(self)), "```", "",
                          *shipped, "", "## Variants", "", "```", self.table(), "```", ""])


def min_rows(budget: Budget) -> int:
    """Judged rows needed before ``min_agreement`` can be shown at ``confidence`` (the report records it)."""
    from albert_edge.tasks.metrics import min_judge_rows

    return min_judge_rows(budget.min_agreement, budget.confidence)


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fallback_line(entry: dict[str, Any]) -> str:
    """The decision-log line of one fallback search: what was tried and which step recovered."""
    if entry.get("skipped"):
        return f"fallback {entry['variant']}: not searched ({entry['skipped']})"
    tried = ", ".join(f"{s['variant'].split(':')[1]} ({s['drift'] or s['error']})" for s in entry["steps"])
    result = f"recovered by {entry['recovered_by']}" if entry["recovered_by"] else "not recovered"
    return f"fallback {entry['variant']} ({entry.get('method')}): {tried}: {result}"


#: The dynamic int8 recipes whose misses ``held_back`` explains: the int8 a user reaches for first.
DYNAMIC_INT8 = ("dynamic_int8", "dynamic_int8_col")
#: Ops named per held-back variant in the printed line (the report keeps them all).
HELD_BACK_SHOWN = 6


def held_back(fallback: list[dict[str, Any]], results: list[VariantResult], budget: Budget) -> list[dict[str, Any]]:
    """Which ops keep each format's dynamic int8 from the budget, from the fallback searches' own steps.

    A search that recovered the variant names them exactly: the ops kept float by the first step that
    fits (``recovered``: True); one that did not names every op its last step kept float and says so
    (the drift left is what those ops could not fix: a kernel or the task's own near ties, not one op).
    Each op reads as the search ranked it (task-level error drop when float, or local SNR).
    """
    by_key = {r.key: r for r in results}
    out = []
    for entry in fallback:
        base = by_key.get(entry["variant"])
        if base is None or base.name not in DYNAMIC_INT8 or base.drift is None:
            continue
        item: dict[str, Any] = {"variant": base.key, "failures": budget_failures(base, budget),
                                "drift": base.drift.summary(), "ranked_by": entry.get("ranked_by"),
                                "recovered_by": entry.get("recovered_by"), "ops": [], "recovered": False}
        if entry.get("skipped"):
            item["skipped"] = entry["skipped"]
        else:
            last = by_key.get(entry["recovered_by"] or (entry["steps"][-1]["variant"] if entry["steps"] else ""))
            item["ops"] = list(last.float_fallback) if last is not None else []
            item["recovered"] = bool(entry["recovered_by"])
            item["after"] = None if last is None or last.drift is None else last.drift.summary()
        out.append(item)
    return out


def held_back_line(item: dict[str, Any]) -> str:
    """``<variant> held back by: op, op, ...`` with what floating them did."""
    if item.get("skipped"):
        return f"{item['variant']} held back by: not searched ({item['skipped']})"
    ops = [op.split(" (")[0] for op in item["ops"]]
    shown = ", ".join(ops[:HELD_BACK_SHOWN]) + (f" and {len(ops) - HELD_BACK_SHOWN} more" if len(ops) > HELD_BACK_SHOWN else "")
    if item["recovered"]:
        return f"{item['variant']} held back by: {shown} (float, {item['recovered_by']} meets the budget)"
    return (f"{item['variant']} held back by: more than {shown or 'any op the search could rank'}: with these "
            f"{len(ops)} float it still misses ({item.get('after') or item['drift']})")


def relax_sentence(closest: VariantResult | None, budget: Budget, task: Task) -> str:
    """The one sentence printed when nothing fits: the closest variant and the budget that it would meet."""
    from albert_edge.convert.pipeline import model_file_name

    if closest is None:
        return "no quantized variant could be built and run; see the decision log in the report"
    failures = budget_failures(closest, budget)
    what = closest.drift.relax_hints(budget) if closest.drift is not None else []
    if budget.max_size_bytes is not None and closest.size_bytes > budget.max_size_bytes:
        what.append(f"--max-size-mb {np.ceil(closest.size_bytes / 1e4) / 100:g}")
    relax = " and ".join(what) if what else "the budget"
    if closest.not_judged:
        return (f"no quantized variant could be judged: {closest.not_judged}; the closest by its measured drift, "
                f"{closest.key} (x{_f(closest.ratio_vs_fp32, 2)} of fp32), is written as {OVER_BUDGET_DIR}/"
                f"{OVER_BUDGET_PREFIX}{model_file_name(closest.format, closest.name)}: judge on more rows "
                f"(--eval FILE) or relax {relax} to accept it")
    return (f"no quantized variant meets the budget; the closest, {closest.key} (x{_f(closest.ratio_vs_fp32, 2)} of fp32: "
            f"{'; '.join(failures)}), is written as {OVER_BUDGET_DIR}/{OVER_BUDGET_PREFIX}{model_file_name(closest.format, closest.name)}: "
            f"relax {relax} to accept it")


def _timing_contended(timing: dict[str, Any]) -> tuple[bool, str]:
    """(whether the timing rounds shared the CPUs with other processes, the reason in words).

    Where the run read ``/proc/stat`` (``neighbour_cores``: the CPUs other processes held, this run's own
    time taken out), contended means they left fewer CPUs than the timing's threads, the bench's rule
    (``neighbours.leaves_too_few``). Elsewhere, a load average above the logical cores: cruder, since it
    counts this run's own threads (2.0-2.1 on an idle 2-core machine timing at 2 threads).
    """
    from albert_edge.neighbours import CONTENTION_SHARE, leaves_too_few

    held, cpus, threads = timing.get("neighbour_cores"), timing.get("usable_cpus"), timing.get("threads") or 1
    if held is not None and cpus:
        return leaves_too_few(held, cpus, threads, CONTENTION_SHARE), f"other processes held {held:.1f} of {cpus} CPUs"
    cores, loads = timing.get("logical_cores"), [x for x in timing.get("load_average") or () if x]
    busy = bool(cores and loads and max(loads) > cores)
    return busy, f"load average {max(loads) if loads else 0:.1f} on {cores} logical cores"


def quantize_verdict(report: QuantizeReport) -> Verdict:
    """The console's verdict block of a quantize run (``albert_edge.verdict``): the shipped ``model.*``
    (TFLite first), what it costs against fp32, and whether the timing ran on a quiet enough machine.

    Quantize times at one thread count in interleaved rounds; a load average above the logical cores
    during that timing means the speed ranking was measured under contention, so the block says this
    machine could not decide speed and names the bench run that would.
    """
    from pathlib import Path

    from albert_edge.verdict import Speed

    directory = Path(report.report_path).parent if report.report_path else Path(".")
    name = next((n for n in SHIPPED_NAMES if n in report.shipped), None)
    by_key = {v.key: v for v in report.variants}
    fp32 = by_key.get("tflite:fp32")
    threads = report.timing.get("threads")
    busy, why = _timing_contended(report.timing)
    variants_glob = f"{directory / VARIANTS_DIR}/*.{name.split('.')[1] if name else 'tflite'}"
    common = {"threads": threads, "details": str(directory / REPORT_MD), "decided": not busy,
              "undecided": f"{why} while timing (contended: the speed ranking may be the neighbours')"
                           if busy else None,
              "rerun": f"albert-edge bench {variants_glob} --threads {threads}" if busy else None}
    if name is None:
        unjudged = next((v.not_judged for v in report.variants if v.not_judged), None)
        why = (f"no variant was judged: {unjudged}" if unjudged else
               report.relax or "no quantized variant meets the budget (see the decision log in the report)")
        return Verdict("quantize", None, nothing_because=why, **common)
    shipped = report.shipped[name]
    pick = by_key[shipped["key"]]
    interval = pick.ratio_interval or {}
    speed = Speed(interval.get("ratio", pick.ratio_vs_fp32 or 0.0), interval.get("low"), interval.get("high"),
                  f"at seq {report.timing.get('seq_len')}") if pick.ratio_vs_fp32 is not None else None
    rows = f" on {pick.drift.examples} rows" if pick.drift is not None and hasattr(pick.drift, "examples") else ""
    return Verdict("quantize", str(directory / name), variant=pick.name, size_bytes=pick.size_bytes,
                   fp32_size_bytes=fp32.size_bytes if fp32 and name.endswith("tflite") else None, speed=speed,
                   accuracy=(pick.drift.summary() + rows) if pick.drift else None, **common)
