"""The peers table of docs/peers.md and docs/benchmarks.md, printed as Markdown from one peers.py JSON.

    python -m benchmarks.suites.peers_table peers_out/peers.json

One row per file (128 tokens and real lengths side by side), sorted by the ratio at 128 tokens, with the
spread of its per-round ratios (each round's median over the baseline's median in the same round: how far
the pooled ratio can be trusted on a loaded machine), then
the files that failed or were not timed, above it one paragraph naming the run: date, CPU and its SIMD
features, load average at start and end, settings and the command. The numbers are the JSON's; the
table adds nothing but layout, so a doc's table can always be regenerated from the run it quotes.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _cell(value: float | None, spec: str, suffix: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{suffix}"


def round_ratios(row: dict | None, base: dict | None) -> str:
    """The spread of the per-round ratios (each round's median over the baseline's median in that round)."""
    if not row or not base or len(row["round_medians_ms"]) != len(base["round_medians_ms"]):
        return "–"
    ratios = [mine / theirs for mine, theirs in zip(row["round_medians_ms"], base["round_medians_ms"]) if theirs > 0]
    return f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "–"


def _row(name: str, variant: dict, by_seq: dict, accuracy: dict, baseline: str, base: dict) -> str:
    at128, real = by_seq.get(128), by_seq.get("real")
    shape = "static [1,128]" if variant["static_shape"] else "dynamic"
    size = f"{variant['size_bytes'] / 1e6:.2f} MB" if variant.get("size_bytes") else "–"
    label = f"{name} (baseline)" if name == baseline else name
    acc = accuracy.get(name, {})
    real_cells = ("– (pads to 128)", "–", "–") if real is None else (
        _cell(real["latency_ms"]["median"], ".3g"), _cell(real["ratio_vs_baseline"], ".2f", "x"),
        round_ratios(real, base.get("real")))
    return (f"| {label} | {variant['tool']} | {shape} | {size} | "
            f"{_cell(at128 and at128['latency_ms']['median'], '.3g')} | {_cell(at128 and at128['latency_ms']['p90'], '.3g')} | "
            f"{_cell(at128 and at128['ratio_vs_baseline'], '.2f', 'x')} | {round_ratios(at128, base.get(128))} | "
            f"{real_cells[0]} | {real_cells[1]} | {real_cells[2]} | "
            f"{_cell(None if acc.get('accuracy') is None else acc['accuracy'] * 100, '.2f', '%')} | "
            f"{_cell(None if acc.get('agreement') is None else acc['agreement'] * 100, '.2f', '%')} |")


def render(peers: dict) -> str:
    """Markdown: the run's paragraph, the table, then what failed or was not timed."""
    settings, machine = peers["settings"], peers["machine"]
    variants = {v["name"]: v for v in peers["variants"]}
    accuracy = {a["variant"]: a for a in peers["accuracy"]}
    results: dict[str, dict] = {}
    for r in peers["results"]:
        results.setdefault(r["variant"], {})[r["seq_len"]] = r
    lines = [(f"Run of {peers['created_utc']}: {machine.get('cpu_model', '?')}, {machine.get('physical_cores', '?')} "
              f"physical cores, SIMD {', '.join(machine.get('simd', [])) or '–'}; load average "
              f"{machine.get('load_average')} at the start, {settings.get('load_average_end')} at the end. "
              f"{settings['threads']} threads, batch 1, {settings['rounds']} interleaved rounds × {settings['runs']} "
              f"timed runs after {settings['warmup']} warm-up, one process per configuration; accuracy and agreement "
              f"with the baseline on {settings.get('examples')} texts. Ratio = p50 / {settings['baseline']}'s p50 at "
              f"the same length in the same run. Command: `{settings.get('command', 'python -m benchmarks.suites.peers')}`."),
             "",
             "| file | tool | shape | size | p50 ms @128 | p90 @128 | ratio @128 | per round @128 | p50 ms real lengths "
             "| ratio real | per round real | accuracy | agreement |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def order(name: str) -> tuple:
        ratio = results[name].get(128, {}).get("ratio_vs_baseline")
        return (ratio is None, ratio or 0.0, name)

    for name in sorted(results, key=order):
        lines.append(_row(name, variants[name], results[name], accuracy, settings["baseline"],
                          results.get(settings["baseline"], {})))
    notes = [f"- **failed**: {f['variant']} ({f['stage']}): {f['error']}" for f in peers["failed"]]
    notes += [f"- built and evaluated, not timed: {name}" for name in variants if name not in results]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main(argv: list[str] | None = None) -> int:
    from albert_edge.bench_latency.peers import load_peers
    from albert_edge.errors import AlbertEdgeError

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.suites.peers_table PEERS_JSON", file=sys.stderr)
        return 2
    try:
        peers = load_peers(Path(args[0]))
    except (AlbertEdgeError, OSError) as exc:
        print(f"peers_table: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(render(peers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
