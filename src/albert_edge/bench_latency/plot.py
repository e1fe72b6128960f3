"""report.png: latency vs accuracy per thread count, and latency vs threads (matplotlib, Agg)."""

from __future__ import annotations

from pathlib import Path

from albert_edge.bench_latency.analysis import _p50, headline_seq_len
from albert_edge.bench_latency.schema import BenchReport


def _model_memory(rows: list[dict]) -> dict[str, float]:
    """Largest model peak memory per (variant, backend) among ``rows`` (host results carry it)."""
    out: dict[str, float] = {}
    for r in rows:
        if r.get("memory"):
            key = f"{r['variant']} ({r['backend']})"
            out[key] = max(out.get(key, 0.0), r["memory"]["model_peak_mb"])
    return out


def render_png(report: BenchReport, target: Path) -> Path:
    """Draw the figure at the headline sequence length (real lengths if measured, else the longest).

    Host results are drawn when there are any; a device-only report draws the phone's numbers.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    source = "host" if any(r["source"] == "host" for r in report.results) else "device"
    measured = [r for r in report.results if r["source"] == source and r["threads"] is not None]
    if not measured and report.peers:  # a peers-only report: nothing else to draw
        from albert_edge.bench_latency.peers import plot_panel

        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        plot_panel(ax, report.peers)
        fig.tight_layout()
        fig.savefig(target, dpi=110, format="png")
        plt.close(fig)
        return target
    seq_len = headline_seq_len(r["seq_len"] for r in measured)
    rows = [r for r in measured if r["seq_len"] == seq_len]
    threads = sorted({r["threads"] for r in rows})
    accuracy = {a["variant"]: a["accuracy"] * 100 for a in report.accuracy if a.get("accuracy") is not None}
    variants = [v["name"] for v in report.variants]
    colors = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(variants)}

    memory = _model_memory(rows)
    paired = [r for r in rows if r.get("vs_baseline")]
    panels = len(threads) + 1 + (1 if paired else 0) + (1 if memory else 0) + (1 if report.peers else 0)
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.8), squeeze=False)
    # Without --eval the y axis shows what was measured instead: the file size.
    sizes = {v["name"]: (v.get("size_bytes") or 0) / 1e6 for v in report.variants}
    y_of = accuracy if accuracy else sizes
    for ax, n in zip(axes[0], threads):
        for r in (r for r in rows if r["threads"] == n):
            y = y_of.get(r["variant"], 0.0)
            marker = "o" if r["backend"] != "onnxruntime" else "s"
            # Variants of equal accuracy sit on one line, so text labels would overprint: a legend names them.
            ax.scatter(_p50(r), y, color=colors[r["variant"]], marker=marker,
                       label=f"{r['variant']} ({r['backend']})")
        ax.set_title(f"{source}: {n} thread{'s' if n > 1 else ''}, seq {seq_len}")
        ax.set_xlabel("p50 latency (ms)")
        ax.set_ylabel("accuracy (%)" if accuracy else "file size (MB); accuracy not measured")
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.grid(alpha=0.3)
        if ax is axes[0][0] and rows:
            ax.legend(fontsize=7, loc="best")
    ax = axes[0][len(threads)]
    for (variant, backend) in sorted({(r["variant"], r["backend"]) for r in rows}):
        points = sorted((r["threads"], _p50(r)) for r in rows if r["variant"] == variant and r["backend"] == backend)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color=colors[variant],
                linestyle="-" if backend != "onnxruntime" else "--", label=f"{variant} ({backend})")
    ax.set_title(f"{source}: latency vs threads, seq {seq_len}")
    ax.set_xlabel("threads")
    ax.set_ylabel("p50 latency (ms)")
    ax.set_xticks(threads)
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(fontsize=7)
    if paired:
        _paired_panel(axes[0][len(threads) + 1], paired, report.baseline(), colors, source, seq_len)
    if memory:
        ax = axes[0][len(threads) + 1 + (1 if paired else 0)]
        names = list(memory)
        ax.barh(range(len(names)), [memory[n] for n in names], color=[colors[n.split(" (")[0]] for n in names])
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_xlabel("model peak memory (MB, RSS minus runtime baseline)")
        ax.set_title(f"{source}: model memory, seq {seq_len}")
        ax.grid(alpha=0.3, axis="x")
    if report.peers:
        from albert_edge.bench_latency.peers import plot_panel

        plot_panel(axes[0][-1], report.peers)
    fig.tight_layout()
    fig.savefig(target, dpi=110, format="png")
    plt.close(fig)
    return target


def _paired_panel(ax, rows: list[dict], baseline: str | None, colors: dict, source: str, seq_len) -> None:
    """Each row's time over the baseline's, measured in the same rounds, with its 95 % interval as error bars.

    A bar that crosses the dashed 1.0 line is a comparison the run could not decide; hollow
    markers were measured under contention.
    """
    rows = sorted(rows, key=lambda r: (r["threads"], r["variant"], r["backend"]))
    for i, r in enumerate(rows):
        est = r["vs_baseline"]
        low = est["low"] if est["low"] is not None else est["ratio"]
        high = est["high"] if est["high"] is not None else est["ratio"]
        color = colors[r["variant"]]
        ax.errorbar(est["ratio"], i, xerr=[[est["ratio"] - low], [high - est["ratio"]]], fmt="o", color=color,
                    mfc="white" if est.get("contended") else color, capsize=3)
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(rows)), [f"{r['variant']} ({r['backend']}, {r['threads']}T)" for r in rows], fontsize=7)
    ax.set_xlabel(f"time / {baseline or 'baseline'} time, same rounds (95 % interval)")
    ax.set_title(f"{source}: paired ratio, seq {seq_len}")
    ax.grid(alpha=0.3, axis="x")
