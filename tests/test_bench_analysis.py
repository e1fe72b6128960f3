"""Thread scaling, speed-ups and the recommendation, on hand-made results (no timing involved)."""

from __future__ import annotations

from albert_edge.bench_latency.analysis import (
    recommend,
    speedup_vs_baseline,
    thread_scaling,
)


def result(variant: str, threads: int, median: float, seq_len: int | str = 128, source: str = "host",
           backend: str = "litert", oversubscribed: bool = False) -> dict:
    return {"variant": variant, "backend": backend, "threads": threads, "seq_len": seq_len, "batch": 1,
            "source": source, "device": None, "oversubscribed": oversubscribed,
            "latency_ms": {"count": 10, "min": median, "median": median, "mean": median, "p90": median,
                           "p99": median, "std": 0.0, "max": median}}


def accuracy(**values: float) -> dict[str, dict]:
    return {name: {"variant": name, "accuracy": acc} for name, acc in values.items()}


def test_speedup_over_one_thread_is_reported_per_thread_count():
    scaling, warnings = thread_scaling([result("fp32", 1, 10.0), result("fp32", 2, 5.0)], physical_cores=2)
    assert [p["speedup_vs_1"] for p in scaling[0]["points"]] == [1.0, 2.0]
    assert warnings == []


def test_more_threads_slower_than_fewer_is_a_warning():
    rows = [result("fp32", 1, 10.0), result("fp32", 2, 6.0), result("fp32", 4, 8.0, oversubscribed=True)]
    scaling, warnings = thread_scaling(rows, physical_cores=2)
    assert any("4 threads slower than 2" in w for w in warnings)
    assert scaling[0]["warnings"] == [w for w in warnings if "slower" in w]


def test_threads_beyond_physical_cores_are_called_oversubscribed():
    rows = [result("fp32", 2, 6.0), result("fp32", 4, 5.0, oversubscribed=True)]
    _, warnings = thread_scaling(rows, physical_cores=2)
    assert any("4 threads > 2 physical cores" in w and "oversubscribed" in w for w in warnings)


def test_speedup_compares_with_the_baseline_at_the_same_threads_and_length():
    rows = [result("fp32", 1, 12.0), result("fp32", 2, 8.0), result("int8", 2, 4.0), result("int8", 2, 2.0, seq_len=16)]
    assert speedup_vs_baseline(rows, rows[2], "fp32") == 2.0
    assert speedup_vs_baseline(rows, rows[3], "fp32") is None


def test_recommendation_is_the_fastest_variant_within_the_accuracy_budget():
    rows = [result("fp32", 2, 10.0), result("fp16", 2, 9.0), result("dynamic", 2, 5.0), result("int8", 2, 3.0)]
    acc = accuracy(fp32=0.900, fp16=0.900, dynamic=0.897, int8=0.880)
    pick = recommend(rows, acc, "fp32", 128, max_drop=0.5)
    assert pick["variant"] == "dynamic"
    assert abs(pick["accuracy_drop_points"] - 0.3) < 1e-9
    assert "2.00x vs fp32" in pick["text"] and "accuracy -0.30 points vs fp32" in pick["text"]


def test_recommendation_without_eval_says_accuracy_was_not_measured():
    pick = recommend([result("fp32", 1, 10.0), result("int8", 1, 4.0)], {}, "fp32", 128, max_drop=0.5)
    assert pick["variant"] == "int8"
    assert "accuracy not measured" in pick["text"]


def test_no_variant_within_budget_is_said_plainly():
    rows = [result("fp32", 1, 10.0), result("int8", 1, 4.0)]
    pick = recommend(rows, accuracy(fp32=0.9, int8=0.8), "fp32", 128, max_drop=-1.0)
    assert pick["variant"] is None
    assert "no variant is within" in pick["text"]


def test_recommendation_never_picks_more_threads_than_physical_cores():
    rows = [result("int8", 1, 9.0), result("int8", 2, 6.0), result("int8", 4, 5.0, oversubscribed=True)]
    pick = recommend(rows, {}, "int8", 128, 0.5, max_threads=2)
    assert pick["threads"] == 2 and "WARNING" not in pick["text"]
    # Without the host's core count (a device report) the fastest row wins, whatever its threads.
    assert recommend(rows, {}, "int8", 128, 0.5)["threads"] == 4


def test_an_oversubscribed_pick_says_so_loudly_when_nothing_else_was_measured():
    pick = recommend([result("int8", 4, 5.0, oversubscribed=True)], {}, "int8", 128, 0.5, max_threads=2)
    assert pick["threads"] == 4
    assert "WARNING: only thread counts above the 2 physical cores" in pick["text"] and "--threads 2" in pick["text"]


def test_default_thread_sweep_follows_the_host():
    from albert_edge.bench_latency.machine import default_thread_counts, physical_cores

    assert default_thread_counts(1) == [1]
    assert default_thread_counts(2) == [1, 2]
    assert default_thread_counts(6) == [1, 2, 4, 6]
    assert default_thread_counts(8) == [1, 2, 4, 8]
    assert max(default_thread_counts()) == physical_cores()
