"""report.png: what to ship, drawn for a reader (matplotlib, Agg).

The first chart answers "which file": every variant's accuracy cost (points of drop from the baseline
in the task's own metric, 0 at the top) against its time as a ratio of the baseline's, with the paired
95 % interval as error bars, the ``--max-drop`` budget shaded and the recommended file ringed and named.
The second shows how the recommended file and the baseline scale with threads and sequence length.
A peers chart follows when a peers run was folded in.

The figure is 1000 px wide at 100 dpi, so a Markdown viewer that scales it to 1000 px shows every text
at its own point size (all >= 9 pt); legends sit below the axes, never on the points.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from albert_edge.bench_latency.analysis import _p50, headline_seq_len
from albert_edge.bench_latency.schema import BenchReport

WIDTH_IN, DPI = 10.0, 100
FONT = 10
#: The y axis never spans less than this many points, so a 0.06-point difference cannot fill it.
MIN_COST_SPAN = 1.0
#: The task metric whose drop the y axis shows (report.json keeps it in ``accuracy`` for every task).
#: Keyed by task name with a generic default, so a new task needs no entry here (docs/architecture.md).
METRIC_NAMES = {"sequence_classification": "accuracy", "token_classification": "entity F1",
                "question_answering": "answer F1"}


@dataclass(frozen=True)
class Point:
    """One (variant, backend) of the main chart: time ratio with its interval, and accuracy cost."""

    variant: str
    backend: str
    ratio: float
    low: float
    high: float
    cost: float
    contended: bool


def chosen_label(recommendation: dict) -> str:
    """The annotation naming the recommended file (what the render test looks for)."""
    plural = "s" if recommendation.get("threads") != 1 else ""
    return f"ship: {recommendation['variant']} ({recommendation['backend']}, {recommendation['threads']} thread{plural})"


def _costs(report: BenchReport) -> tuple[dict[str, float], str, float | None]:
    """(variant -> cost, y label, budget): the accuracy drop in points when measured, else the file size."""
    baseline = report.accuracy_of(report.baseline() or "")
    measured = {a["variant"]: a for a in report.accuracy if a.get("accuracy") is not None}
    if baseline is not None and baseline.get("accuracy") is not None:
        metric = METRIC_NAMES.get(baseline.get("task", "sequence_classification"), "task metric")
        costs = {v: (baseline["accuracy"] - a["accuracy"]) * 100.0 for v, a in measured.items()}
        budget = report.settings.get("max_drop")
        return costs, f"{metric} drop from {baseline['variant']} (points; 0 = no loss)", budget
    cosine = {a["variant"]: a["mean_cosine"] for a in report.accuracy if a.get("mean_cosine") is not None}
    if cosine:
        return ({v: (1.0 - c) * 1000.0 for v, c in cosine.items()},
                "1 - mean cosine to the baseline (x1000; 0 = identical)", None)
    sizes = {v["name"]: (v.get("size_bytes") or 0) / 1e6 for v in report.variants}
    return sizes, "file size (MB); accuracy not measured (pass --eval)", None


def _main_points(rows: list[dict], costs: dict[str, float], baseline: str | None) -> list[Point]:
    """The main chart's points: the paired ratio where timed in one group, else the ratio of medians."""
    base = {(r["backend"]): _p50(r) for r in rows if r["variant"] == baseline}
    points = []
    for r in rows:
        if r["variant"] not in costs:
            continue
        est = r.get("vs_baseline")
        if est:
            ratio = est["ratio"]
            low = est["low"] if est.get("low") is not None else ratio
            high = est["high"] if est.get("high") is not None else ratio
        elif r["variant"] == baseline:
            ratio = low = high = 1.0
        elif base:
            ratio = low = high = _p50(r) / base.get(r["backend"], next(iter(base.values())))
        else:
            continue
        points.append(Point(r["variant"], r["backend"], ratio, low, high, costs[r["variant"]],
                            bool(est and est.get("contended"))))
    return points


def _cost_limits(points: list[Point], budget: float | None) -> tuple[float, float]:
    """(top, bottom) of the inverted cost axis: 0 and the budget in view, never narrower than MIN_COST_SPAN."""
    values = [p.cost for p in points] + [0.0] + ([budget] if budget is not None else [])
    low, high = min(values), max(values)
    if high - low < MIN_COST_SPAN:
        high = low + MIN_COST_SPAN
    pad = 0.08 * (high - low)
    return low - pad, high + pad


def _draw_main(ax, points: list[Point], report: BenchReport, label: str, budget: float | None,
               colors: dict, title: str) -> None:
    """Cost (down = worse) against time ratio; budget shaded; the recommended point ringed and named."""
    top, bottom = _cost_limits(points, budget)
    ax.set_ylim(bottom, top)  # inverted: 0 cost at the top
    if budget is not None:
        ax.axhspan(top, budget, color="tab:green", alpha=0.10, zorder=0)
        ax.axhspan(budget, bottom, color="tab:red", alpha=0.06, zorder=0)
        ax.axhline(budget, color="tab:green", linewidth=1.2, linestyle="--", zorder=1)
        ax.text(0.99, budget, f"within budget (--max-drop {budget:g} points) ", transform=ax.get_yaxis_transform(),
                ha="right", va="bottom", color="darkgreen", fontsize=FONT - 1)
        ax.text(0.99, budget, "over budget ", transform=ax.get_yaxis_transform(), ha="right", va="top",
                color="darkred", fontsize=FONT - 1)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.axhline(0.0, color="grey", linestyle=":", linewidth=1)
    for p in points:
        ax.errorbar(p.ratio, p.cost, xerr=[[p.ratio - p.low], [p.high - p.ratio]], fmt="s" if p.backend ==
                    "onnxruntime" else "o", color=colors[p.variant], mfc="white" if p.contended else colors[p.variant],
                    markersize=7, capsize=3, label=f"{p.variant} ({p.backend})", zorder=3)
    xs = [x for p in points for x in (p.low, p.high)] + [1.0]
    span = max(xs) - min(xs) or 1.0
    ax.set_xlim(max(0.0, min(xs) - 0.1 * span), max(xs) + 0.1 * span)
    rec = report.recommendation or {}
    chosen = next((p for p in points if p.variant == rec.get("variant") and p.backend == rec.get("backend")), None)
    if chosen is not None:
        ax.scatter(chosen.ratio, chosen.cost, s=420, facecolors="none", edgecolors="black", linewidths=2, zorder=4)
        interval = f" [{chosen.low:.2f}\u2013{chosen.high:.2f}]" if chosen.high > chosen.low else ""
        text = (f"{chosen_label(rec)}\n{chosen.ratio:.2f}x {report.baseline() or 'the baseline'}'s time{interval}, "
                f"{_cost_words(chosen.cost, label)}")
        if rec.get("decided") is False:  # the data did not separate it from a rival: report.md says which
            text += "\nundecided on this machine: the conservative pick, see report.md"
        ax.annotate(text, (chosen.ratio, chosen.cost), xytext=(0.5, 0.2), textcoords="axes fraction",
                    ha="center", va="center", fontsize=FONT + 1, fontweight="bold",
                    bbox=dict(boxstyle="round", fc="lightyellow", ec="black"),
                    arrowprops=dict(arrowstyle="->", color="black"), zorder=5)
    ax.set_xlabel(f"time / {report.baseline() or 'baseline'} time, paired rounds (95 % interval); "
                  "left = faster", fontsize=FONT)
    ax.set_ylabel(label, fontsize=FONT)
    ax.set_title(title, fontsize=FONT + 2)
    ax.grid(alpha=0.3)
    hollow = "hollow: timed under contention" if any(p.contended for p in points) else ""
    if not points:
        return
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=FONT - 1, frameon=False,
              title=f"circle: LiteRT-family backend, square: ONNX Runtime; bars: 95 % interval\n{hollow}",
              title_fontsize=FONT - 1)


def _cost_words(cost: float, label: str) -> str:
    """The chosen point's cost in words, in the unit ``label`` (from ``_costs``) gives the y axis."""
    if "cosine" in label:
        return f"mean cosine to the baseline {1.0 - cost / 1000.0:.5f}"
    if "drop" not in label:
        return f"{cost:.2f} MB"
    return f"{abs(cost):.2f} points {'lower' if cost > 0 else 'higher'}" if round(cost, 2) else "no accuracy lost"


def _length_order(rows: list[dict]) -> list:
    """The measured lengths left to right by size, "real" placed at its median token length."""
    median = next((r["lengths"]["median"] for r in rows if r["seq_len"] == "real" and r.get("lengths")), 0)
    return sorted({r["seq_len"] for r in rows}, key=lambda s: median if s == "real" else s)


def _draw_scaling(ax, rows: list[dict], keep: list[tuple[str, str]], colors: dict, source: str) -> None:
    """p50 latency by sequence length, one line per kept (variant, backend) and thread count."""
    seq_lens = _length_order(rows)
    threads = sorted({r["threads"] for r in rows})
    styles = ["-", "--", ":", "-."]
    for variant, backend in keep:
        for k, n in enumerate(threads):
            found = {r["seq_len"]: _p50(r) for r in rows
                     if (r["variant"], r["backend"], r["threads"]) == (variant, backend, n)}
            xs = [i for i, s in enumerate(seq_lens) if s in found]
            if xs:
                ax.plot(xs, [found[seq_lens[i]] for i in xs], marker="s" if backend == "onnxruntime" else "o",
                        color=colors[variant],
                        linestyle=styles[k % len(styles)],
                        label=f"{variant} ({backend}), {n} thread{'s' if n != 1 else ''}")
    names = []
    for s in seq_lens:
        lengths = next((r.get("lengths") for r in rows if r["seq_len"] == s and r.get("lengths")), None)
        names.append(f"real\n(median {lengths['median']:g})" if s == "real" and lengths else str(s))
    ax.set_xticks(range(len(seq_lens)), names, fontsize=FONT)
    ax.set_xlabel("sequence length (tokens)", fontsize=FONT)
    ax.set_ylabel("p50 latency (ms)", fontsize=FONT)
    ax.set_ylim(bottom=0)
    ax.set_title(f"{source}: the recommended file and the baseline by threads and length", fontsize=FONT + 2)
    ax.grid(alpha=0.3)
    if ax.get_lines():
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=FONT - 1, frameon=False)


def render_png(report: BenchReport, target: Path) -> Path:
    """Draw report.png; host results when there are any, else the phone's; peers alone if that is all."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source = "host" if any(r["source"] == "host" for r in report.results) else "device"
    measured = [r for r in report.results if r["source"] == source and r["threads"] is not None]
    charts = (2 if measured else 0) + (1 if report.peers else 0)
    fig, axes = plt.subplots(charts, 1, figsize=(WIDTH_IN, 5.2 * charts), dpi=DPI, squeeze=False,
                             gridspec_kw={"height_ratios": ([1.4, 1.0] if measured else []) + ([0.8] if report.peers else [])})
    with plt.rc_context({"font.size": FONT, "xtick.labelsize": FONT, "ytick.labelsize": FONT}):
        if measured:
            _draw_measured(axes[0][0], axes[1][0], report, measured, source, plt)
        if report.peers:
            from albert_edge.bench_latency.peers import plot_panel

            plot_panel(axes[-1][0], report.peers)
        for ax in fig.axes:
            ax.tick_params(labelsize=FONT)
        fig.tight_layout()
        fig.savefig(target, dpi=DPI, format="png")
    plt.close(fig)
    return target


def _draw_measured(main_ax, scaling_ax, report: BenchReport, measured: list[dict], source: str, plt) -> None:
    """The main chart at the headline length and the recommended thread count, then the scaling chart."""
    seq_len = headline_seq_len(r["seq_len"] for r in measured)
    rec = report.recommendation or {}
    rows = [r for r in measured if r["seq_len"] == seq_len]
    threads = rec.get("threads") if rec.get("seq_len") == seq_len and rec.get("threads") else \
        min(r["threads"] for r in rows)
    variants = [v["name"] for v in report.variants]
    colors = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(variants)}
    costs, label, budget = _costs(report)
    points = _main_points([r for r in rows if r["threads"] == threads], costs, report.baseline())
    title = (f"{source}, seq {seq_len}, {threads} thread{'s' if threads != 1 else ''}: which file to ship "
             "(up = more accurate, left = faster)")
    _draw_main(main_ax, points, report, label, budget, colors, title)
    keep = [(rec["variant"], rec["backend"])] if rec.get("variant") else []
    # The baseline on the recommended file's backend: the comparison the annotation above states.
    keep += sorted({(r["variant"], r["backend"]) for r in measured if r["variant"] == report.baseline()
                    and (not keep or r["backend"] == rec["backend"])})
    _draw_scaling(scaling_ax, measured, keep or sorted({(r["variant"], r["backend"]) for r in measured}),
                  colors, source)
