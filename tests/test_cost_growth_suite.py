"""benchmarks/suites/cost_growth.py: the random-weight shapes are real checkpoints albert-edge reads,
and a stage's record holds wall, CPU, peak RSS and exit of the albert-edge process it ran.

The base shapes themselves (10-100 M parameters) are far too slow for a test: a tiny shape of each
kind (shared ALBERT layer, BERT layers of their own) stands in, written by the suite's own writer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.suites import cost_growth

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=48)


@pytest.fixture
def tiny_shapes(monkeypatch):
    own_layers = {"embedding_size": 32, "num_hidden_groups": 2}  # BERT: one group per layer, no projection
    shapes = {name: {**fields, **TINY, **(own_layers if fields["model_type"] == "bert" else {})}
              for name, fields in cost_growth.BASE_SHAPES.items()}
    monkeypatch.setattr(cost_growth, "BASE_SHAPES", shapes)


@pytest.mark.parametrize("shape, model_type", [("albert-base", "albert"), ("bert-base", "bert")])
def test_a_written_shape_is_a_checkpoint_inspect_reads(tiny_shapes, tmp_path, shape, model_type):
    checkpoint, params = cost_growth.write_shape(shape, tmp_path / shape)
    record = cost_growth.run_stage(["inspect", str(checkpoint), "--json"], timeout=300)
    assert record["exit"] == 0 and not record["timed_out"], record
    assert record["wall_s"] > 0 and record["cpu_s"] > 0 and record["peak_rss_mb"] > 10


def test_a_stage_over_its_timeout_is_killed_and_recorded(tmp_path):
    # convert imports TensorFlow and runs parity checks: many seconds, never under one.
    record = cost_growth.run_stage(["convert", str(cost_growth.SAMPLE), "--out", str(tmp_path / "out")], timeout=1.0)
    assert record["timed_out"] and record["exit"] != 0


def test_bench_is_skipped_without_quantized_files(tmp_path):
    assert cost_growth.stage_argv("bench", cost_growth.SAMPLE, tmp_path) is None
    (tmp_path / "dynamic").mkdir()
    (tmp_path / "dynamic" / "model.tflite").write_bytes(b"")
    assert cost_growth.stage_argv("bench", cost_growth.SAMPLE, tmp_path)[:2] == ["bench", str(tmp_path / "dynamic" / "model.tflite")]
    (tmp_path / "dynamic" / "variants").mkdir()
    for name in ("fp32", "dynamic_int8"):
        (tmp_path / "dynamic" / "variants" / f"{name}.tflite").write_bytes(b"")
    argv = cost_growth.stage_argv("bench", cost_growth.SAMPLE, tmp_path)
    assert [a for a in argv if a.endswith(".tflite")] == [str(tmp_path / "dynamic" / "variants" / f"{name}.tflite")
                                                          for name in ("dynamic_int8", "fp32")]  # model.tflite is a copy


def test_a_written_shape_converts_with_the_samples_tokenizer(tiny_shapes, tmp_path):
    """The shape's word table matches the sample's vocab.txt, which convert checks (inspect does not)."""
    checkpoint, _ = cost_growth.write_shape("bert-base", tmp_path / "bert-base")
    record = cost_growth.run_stage(["convert", str(checkpoint), "--formats", "tflite", "--max-seq-len", "16",
                                    "--labels", "neg,pos", "--out", str(tmp_path / "out")], timeout=600)
    assert record["exit"] == 0, record
    assert (tmp_path / "out" / "conversion_report.json").is_file()


def test_the_tree_peak_sums_a_parent_and_the_child_it_waits_for():
    """quantize's parent judges while its child converts: the record must hold their sum, which wait4 does not."""
    script = ("import subprocess, sys, time\n"
              "held = bytearray(150 * 2**20)\n"
              "child = 'x = bytearray(150 * 2**20); import time; time.sleep(4.0)'\n"
              "subprocess.run([sys.executable, '-c', child], check=True)\n")
    import subprocess
    import sys

    # Measured from a small fresh process, as the suite runs: Linux carries the spawning process's RSS
    # high-water mark into the child's wait4 figure across exec, so from this test worker (gigabytes
    # after other tests' conversions) wait4 would report the worker's peak, not the command's.
    measure = ("import json, sys; from benchmarks.suites import cost_growth; "
               "print(json.dumps(cost_growth.run_command([sys.executable, '-c', sys.argv[1]], timeout=120)))")
    out = subprocess.run([sys.executable, "-c", measure, script], capture_output=True, text=True, check=True,
                         cwd=Path(cost_growth.__file__).resolve().parents[2])
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert record["exit"] == 0, record
    assert record["peak_rss_mb"] < 250  # wait4: the larger of the two, each ~160 MB
    assert record["tree_peak_rss_mb"] > 300  # both held at once
