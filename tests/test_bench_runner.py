"""The worker process, the interleaved schedule, real lengths and a full (tiny) sweep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.support.bench_models import shared_models

from albert_edge.bench_latency.options import BenchOptions
from albert_edge.bench_latency.runner import (
    _Cell,
    choose_baseline,
    describe_variants,
    device_lengths,
    real_lengths,
    run_benchmark,
    sample_batch_lengths,
    schedule,
)
from albert_edge.errors import DataError

WORKER = [sys.executable, "-m", "albert_edge.bench_latency.worker"]


def run_worker(*args: str) -> tuple[int, dict]:
    proc = subprocess.run([*WORKER, *args], capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stdout + proc.stderr
    return proc.returncode, json.loads(lines[0])


@pytest.mark.parametrize("key,backend", [("fp32", "litert"), ("onnx", "onnxruntime")])
def test_worker_prints_one_json_line_with_every_timed_run(key, backend):
    code, result = run_worker("--model", str(shared_models()[key]), "--backend", backend, "--threads", "1",
                              "--seq-len", "8", "--runs", "7", "--warmup", "2")
    assert code == 0 and result["ok"]
    assert len(result["samples_ms"]) == 7 and all(s > 0 for s in result["samples_ms"])
    assert result["init_ms"] > 0 and result["first_inference_ms"] > 0
    # The app's figure (task runtime from_file + first answer, in a child) includes the interpreter's load.
    assert result["first_answer_ms"] > result["init_ms"] * 0.5 > 0
    assert result["peak_rss_mb"] >= result["rss_before_load_mb"] > 0
    assert result["lengths"] == [8]


def test_first_answer_mode_times_the_task_runtime_and_refuses_a_file_without_a_pack(tmp_path):
    code, result = run_worker("--first-answer", "--model", str(shared_models()["fp32"]), "--backend", "litert",
                              "--threads", "1")
    assert code == 0 and result["task"] == "sequence_classification"
    assert result["first_answer_ms"] == pytest.approx(result["open_ms"] + result["first_call_ms"])
    bare = tmp_path / "bare.tflite"
    bare.write_bytes(b"\x00" * 4 + b"TFL3" + b"\x00" * 64)
    code, result = run_worker("--first-answer", "--model", str(bare), "--backend", "litert", "--threads", "1")
    assert code == 2 and not result["ok"] and "bare.tflite" in result["error"]


def test_worker_cycles_through_given_lengths():
    code, result = run_worker("--model", str(shared_models()["fp32"]), "--backend", "litert", "--threads", "1",
                              "--lengths", "3,9,17", "--runs", "3", "--warmup", "0", "--batch", "2")
    assert code == 0 and result["lengths"] == [3, 9, 17] and result["batch"] == 2


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_pinned_worker_runs_only_on_the_given_cpu():
    cpu = min(os.sched_getaffinity(0))
    code, result = run_worker("--model", str(shared_models()["fp32"]), "--backend", "litert", "--threads", "1",
                              "--seq-len", "4", "--runs", "2", "--warmup", "0", "--pin", str(cpu))
    assert code == 0 and result["affinity"] == [cpu]


def test_worker_failure_is_a_json_line_and_a_nonzero_exit(tmp_path):
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"not a model")
    code, result = run_worker("--model", str(bad), "--backend", "litert", "--threads", "1")
    assert code != 0 and result["ok"] is False
    assert "broken.tflite" in result["error"]


def test_schedule_keeps_a_cell_together_and_alternates_variant_order_between_rounds():
    models = shared_models()
    variants = describe_variants([models["fp32"], models["int8"]])
    cells = [_Cell(v, "litert", n, 16, None) for n in (1, 2) for v in variants]
    order = schedule(cells, rounds=2)
    names = [(r, c.threads, c.variant.name) for r, c in order]
    assert names == [(0, 1, "fp32"), (0, 1, "int8_dynamic"), (0, 2, "fp32"), (0, 2, "int8_dynamic"),
                     (1, 1, "int8_dynamic"), (1, 1, "fp32"), (1, 2, "int8_dynamic"), (1, 2, "fp32")]


def test_variants_are_named_by_their_pack_tag_and_fp32_is_the_baseline():
    models = shared_models()
    variants = describe_variants([models["int8"], models["fp32"], models["onnx"]])
    assert [v.name for v in variants] == ["int8_dynamic", "fp32", "fp32-onnx"]
    assert [v.format for v in variants] == ["tflite", "tflite", "onnx"]
    assert choose_baseline(variants) == "fp32"
    assert choose_baseline(variants, "fp32-onnx") == "fp32-onnx"
    with pytest.raises(DataError, match="--baseline 'fp16'"):
        choose_baseline(variants, "fp16")


def test_real_lengths_are_the_packed_tokenizer_lengths_of_the_eval_set():
    from albert_edge.evaluate import read_tsv

    models = shared_models()
    [variant] = describe_variants([models["fp32"]])
    lengths = real_lengths(variant, models["eval"])
    words = [len(ex.text_a.split()) for ex in read_tsv(models["eval"])]
    assert lengths == [n + 2 for n in words]   # every word is in the vocab; + [CLS] and [SEP]


def test_batch_lengths_pad_each_batch_to_its_longest_draw():
    widths = sample_batch_lengths([3, 5, 40], batch=4, seed=1)
    assert set(widths) <= {3, 5, 40}
    assert max(widths) == 40 and sum(w == 40 for w in widths) > len(widths) / 2


def test_batch_one_lengths_follow_the_eval_set_quantiles_in_a_shuffled_order():
    import numpy as np

    population = [5] * 10 + [20] * 50 + [90] * 40   # median 20, mean 47
    widths = sample_batch_lengths(population, batch=1, seed=3)
    assert len(widths) == 256 and sorted(set(widths)) == [5, 20, 90]
    assert np.median(widths) == 20 and abs(np.mean(widths) - np.mean(population)) < 1.0
    assert widths != sorted(widths) and widths == sample_batch_lengths(population, batch=1, seed=3)


def test_real_lengths_without_an_eval_set_are_refused():
    with pytest.raises(DataError, match="--seq-len real needs --eval"):
        run_benchmark([shared_models()["fp32"]], BenchOptions(threads=[1], seq_lens=["real"], runs=1), progress=False)


def test_sweep_measures_every_variant_thread_and_length(tmp_path):
    models = shared_models()
    report = run_benchmark([models["fp32"], models["onnx"]],
                           BenchOptions(threads=[1, 2], seq_lens=[8, "real"], runs=4, warmup=1, rounds=2,
                                        eval_path=models["eval"]), out_dir=tmp_path, progress=False)
    cells = {(r["variant"], r["backend"], r["threads"], r["seq_len"]) for r in report.results}
    assert len(cells) == len(report.results) == 2 * 2 * 2
    assert ("fp32-onnx", "onnxruntime", 2, "real") in cells
    for r in report.results:
        assert r["latency_ms"]["count"] == 4 and len(r["round_medians_ms"]) == 2
        assert r["peak_rss_mb"] > 0 and r["init_ms"] > 0
        if Path("/proc/stat").exists():   # the neighbours' CPUs, read by the worker around each burst
            assert r["contention"]["neighbour_cores"] >= 0.0
    real = next(r for r in report.results if r["seq_len"] == "real")
    assert real["lengths"]["examples"] == 40
    assert report.recommendation["seq_len"] == "real"
    assert {p.name for p in tmp_path.iterdir()} >= {"report.json", "report.md", "report.png", "device_commands.sh"}
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "report.md").read_text()
    assert "## Real lengths vs padding to 8" in md and "| fp32 | host | litert | 2 |" in md


def test_phone_commands_use_the_swept_lengths_plus_the_real_p90():
    assert device_lengths([16, 128], {}) == [16, 128]
    assert device_lengths([16, "real"], {"fp32": list(range(1, 101))}) == [16, 91]


def test_inference_failure_in_the_worker_is_reported_as_json():
    code, result = run_worker("--model", str(shared_models()["fp32"]), "--backend", "litert", "--threads", "1",
                              "--seq-len", "4", "--runs", "2", "--warmup", "0", "--id-low", "-9", "--id-high", "-1")
    assert code != 0 and result["ok"] is False   # negative ids: GATHER refuses them (ids past the table are clamped)
    assert "fp32.tflite: inference failed" in result["error"]


def test_one_pack_tag_in_two_formats_is_named_by_format(tmp_path):
    import onnx

    from albert_edge.runtime.pack import read_pack

    models = shared_models()
    model = onnx.load(str(models["onnx"]))
    for prop in model.metadata_props:
        if prop.key == "albert_edge.json":
            prop.value = prop.value.replace('"fp32-onnx"', '"fp32"')
    retagged = tmp_path / "exported.onnx"
    onnx.save(model, str(retagged))
    assert read_pack(retagged).variant == "fp32"
    variants = describe_variants([models["fp32"], retagged, models["int8"]])
    assert [v.name for v in variants] == ["fp32-tflite", "fp32-onnx", "int8_dynamic"]


def test_bench_options_refuse_a_bad_setting_before_any_model_is_opened():
    with pytest.raises(DataError, match="--seq-len 0"):
        BenchOptions(seq_lens=[16, 0])
    with pytest.raises(DataError, match="warmup >= 0"):
        BenchOptions(runs=0)
    with pytest.raises(DataError, match="needs --eval"):
        run_benchmark(["never_opened.tflite"], BenchOptions(), seq_lens=["real"], progress=False)


def test_bench_options_are_frozen_tuples_so_equal_settings_compare_equal():
    assert BenchOptions(threads=[1, 2], seq_lens=[8, "real"], eval_path="x.tsv") == \
        BenchOptions(threads=(1, 2), seq_lens=(8, "real"), eval_path="x.tsv")


def test_the_worker_s_litert_buckets_backend_computes_what_litert_computes():
    from albert_edge.bench_latency.worker import load, make_inputs

    path = str(shared_models()["fp32"])
    plain, _, _ = load(path, "litert", 1, True, 12)
    bucketed, version, _ = load(path, "litert_buckets", 1, True, 12)
    assert version != "unknown"
    rng = np.random.default_rng(0)
    for length in (3, 9, 12):
        inputs = make_inputs(1, length, 1, 20, rng)
        np.testing.assert_allclose(bucketed(inputs)["logits"], plain(inputs)["logits"], atol=1e-5)
    assert bucketed.__self__.buckets == (12,)
