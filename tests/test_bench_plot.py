"""report.png drawn for a reader (issue #36, item 3): rendered from a fixed report, then measured.

The old figure was a 2310x418 strip of five panels with 7-pt text, legends on the points, no mark on
the chosen file, no budget, and an accuracy axis where a 0.06-point difference filled the panel. These
tests read the rendered figure back: its size, the annotation naming the recommended file, the budget,
the axis range, and that no text leaves the canvas. About 5 s (matplotlib).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from albert_edge.bench_latency import plot
from albert_edge.bench_latency.schema import BenchReport

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

# name, fp32 share of time at seq 128 one thread, accuracy (the sample's spread: 0.06 points)
VARIANTS = [("fp32", 1.00, 0.8403), ("fp16", 0.98, 0.8403), ("dynamic_int8", 0.37, 0.8397),
            ("int8", 0.45, 0.8409), ("int8_fc", 0.41, 0.8397)]
SEQ_LENS = [16, 32, 64, 128, "real"]
THREADS = [1, 2]
FP32_MS = {16: 2.0, 32: 3.1, 64: 5.6, 128: 11.8, "real": 4.4}


def _latency(ms: float) -> dict:
    return {"count": 100, "min": ms * 0.9, "median": ms, "mean": ms * 1.01, "p90": ms * 1.1, "p99": ms * 1.2,
            "std": ms * 0.05, "max": ms * 1.3}


def _result(variant: str, backend: str, threads: int, seq_len, share: float) -> dict:
    ms = FP32_MS[seq_len] * share * (0.62 if threads == 2 else 1.0) * (1.1 if backend == "onnxruntime" else 1.0)
    ratio = share * (1.1 if backend == "onnxruntime" else 1.0)
    return {"variant": variant, "backend": backend, "backend_version": "1.0", "threads": threads,
            "seq_len": seq_len, "batch": 1, "source": "host", "device": None, "latency_ms": _latency(ms),
            "samples_ms": [ms] * 5, "round_medians_ms": [ms] * 20, "init_ms": 3.0, "first_inference_ms": ms * 2,
            "warmup_avg_ms": None, "peak_rss_mb": 80.0, "rss_before_load_mb": 60.0, "oversubscribed": False,
            "lengths": {"min": 5, "median": 41, "p90": 90, "max": 128, "examples": 500} if seq_len == "real"
            else None, "op_profile": None, "round_group": f"g{seq_len}",
            "vs_baseline": None if variant == "fp32" else
            {"ratio": ratio, "low": ratio * 0.97, "high": ratio * 1.03, "rounds": 20, "cv": 0.02,
             "relative_half_width": 0.03, "round_ratios": [ratio] * 20, "baseline_backend": backend,
             "contended": False}}


def fixed_report() -> dict:
    """A report.json as bench writes it for the sample: 5 variants x 2 backends x 2 threads x 5 lengths."""
    variants = [{"name": n, "path": f"models/model_{n}.tflite", "format": "tflite", "size_bytes": int(16e6 * s),
                 "sha256": "0" * 64, "pack_variant": n, "is_baseline": n == "fp32"} for n, s, _ in VARIANTS]
    results = [_result(n, b, t, s, share) for n, share, _ in VARIANTS for b in ("litert", "onnxruntime")
               for t in THREADS for s in SEQ_LENS]
    accuracy = [{"variant": n, "examples": 1749, "accuracy": a, "agreement": 0.99, "max_abs_logit_diff": 0.1,
                 "mean_abs_logit_diff": 0.01, "reference": None, "task": "sequence_classification"}
                for n, _, a in VARIANTS]
    recommendation = {"variant": "dynamic_int8", "backend": "litert", "threads": 2, "seq_len": "real",
                      "median_ms": 1.0, "accuracy_drop_points": 0.06, "text": "ship dynamic_int8", "decided": True}
    return {"schema_version": 1, "tool": "albert-edge bench", "albert_edge_version": "0", "created_utc": "",
            "settings": {"threads": THREADS, "seq_lens": SEQ_LENS, "max_drop": 0.5, "baseline": "fp32"},
            "machine": {}, "variants": variants, "results": results, "accuracy": accuracy,
            "thread_scaling": [], "warnings": [], "recommendation": recommendation}


@pytest.fixture
def rendered(tmp_path, monkeypatch):
    """Render a report; keep the figure open so its artists can be read back."""
    figures = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figures.append(fig))

    def render(data: dict) -> tuple[Path, object]:
        target = plot.render_png(BenchReport.from_dict(json.loads(json.dumps(data))), tmp_path / "report.png")
        return target, figures[-1]
    return render


def _texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def test_the_figure_is_1000_px_wide_with_no_text_under_9_pt(rendered):
    target, fig = rendered(fixed_report())
    width, height = matplotlib.image.imread(target).shape[1::-1]
    assert width == 1000 and 500 <= height <= 1400
    # At 1000 px a Markdown viewer shows the image at its own scale: the point size is what is read.
    small = [(t.get_text(), t.get_fontsize()) for t in _texts(fig) if t.get_fontsize() < 9]
    assert not small


def test_no_text_leaves_the_canvas(rendered):
    _, fig = rendered(fixed_report())
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    # Matplotlib's tight bbox holds every drawn artist (tick labels only where ticks are drawn)...
    tight = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    assert canvas.x0 - 1 <= tight.x0 and tight.x1 <= canvas.x1 + 1 and canvas.y0 - 1 <= tight.y0 \
        and tight.y1 <= canvas.y1 + 1, (tight, canvas)
    # ...and each text that is not a tick label (titles, axis labels, legends, the annotation) by itself.
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_ticklabels() + axis.get_ticklabels(minor=True)}
    for text in (t for t in _texts(fig) if id(t) not in ticks):
        box = text.get_window_extent(renderer)
        assert canvas.x0 - 1 <= box.x0 and box.x1 <= canvas.x1 + 1 and canvas.y0 - 1 <= box.y0 and \
            box.y1 <= canvas.y1 + 1, (text.get_text(), box, canvas)


def test_the_recommended_file_is_annotated_by_name(rendered):
    _, fig = rendered(fixed_report())
    notes = [t.get_text() for t in fig.axes[0].texts if "ship:" in t.get_text()]
    assert len(notes) == 1
    assert notes[0].startswith("ship: dynamic_int8 (litert, 2 threads)")
    assert "0.37x" in notes[0]


def test_the_annotation_follows_the_reports_recommendation(rendered):
    data = fixed_report()
    data["recommendation"].update(variant="int8", backend="onnxruntime", threads=1)
    _, fig = rendered(data)
    assert any(t.get_text().startswith("ship: int8 (onnxruntime, 1 thread)\n") for t in fig.axes[0].texts)


def test_cost_axis_keeps_zero_and_the_budget_in_view_with_zero_at_the_top(rendered):
    _, fig = rendered(fixed_report())
    bottom, top = fig.axes[0].get_ylim()
    assert top < 0 < 0.5 < bottom  # inverted: 0 cost at the top, the 0.5-point budget below it
    assert bottom - top >= 1.0  # a 0.12-point spread does not fill the axis
    assert any("budget" in t.get_text() and "0.5" in t.get_text() for t in fig.axes[0].texts)
    assert "accuracy drop" in fig.axes[0].get_ylabel()


def test_a_large_drop_widens_the_axis_to_show_it(rendered):
    data = fixed_report()
    data["accuracy"][3]["accuracy"] = 0.80  # int8 four points below fp32
    _, fig = rendered(data)
    bottom, top = fig.axes[0].get_ylim()
    assert bottom > 4.03 and top <= 0


def test_every_main_point_carries_its_paired_interval(rendered):
    _, fig = rendered(fixed_report())
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "dynamic_int8 (litert)" in legend and "fp32 (onnxruntime)" in legend
    assert fig.axes[0].get_legend().get_bbox_to_anchor().y1 < fig.axes[0].bbox.y0  # below the axes, off the data


def test_the_second_chart_shows_threads_and_lengths(rendered):
    _, fig = rendered(fixed_report())
    lines = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert "dynamic_int8 (litert), 2 threads" in lines and "fp32 (litert), 1 thread" in lines
    # Real lengths sit where their median falls among the fixed lengths, not after 128.
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == ["16", "32", "real\n(median 41)", "64", "128"]


def test_without_eval_the_y_axis_says_accuracy_was_not_measured(rendered):
    data = fixed_report()
    for entry in data["accuracy"]:
        entry["accuracy"] = None
    data["accuracy"] = []
    _, fig = rendered(data)
    assert "accuracy not measured" in fig.axes[0].get_ylabel()


def test_a_report_without_a_recommendation_still_renders(rendered):
    data = copy.deepcopy(fixed_report())
    data["recommendation"] = None
    target, fig = rendered(data)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [t for t in fig.axes[0].texts if "ship:" in t.get_text()]


def test_an_embedding_report_shows_its_cosine_cost(rendered):
    data = fixed_report()
    for entry in data["accuracy"]:
        entry.update(accuracy=None, task="feature_extraction", mean_cosine=0.9995, min_cosine=0.998)
    _, fig = rendered(data)
    assert "cosine" in fig.axes[0].get_ylabel()
    assert any("mean cosine to the baseline 0.99950" in t.get_text() for t in fig.axes[0].texts)


def test_unpaired_rows_are_placed_by_their_ratio_of_medians(rendered):
    data = fixed_report()
    for r in data["results"]:
        r["vs_baseline"] = None
    _, fig = rendered(data)
    note = next(t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("ship:"))
    assert "0.37x fp32's time," in note  # no interval: the rows were not timed in the same rounds
