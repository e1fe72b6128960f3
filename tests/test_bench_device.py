"""benchmark_model commands for a phone, and parsing its output into report results.

The log texts follow the real tool's output (tensorflow/lite/tools/benchmark: BenchmarkModel's
"Inference timings in us" line, Stat/StatWithPercentiles lines, the memory footprint line and the
op-profiling tables of a 2.x build with --enable_op_profiling=true).
"""

from __future__ import annotations

import json

import pytest
from tests.support.bench_models import shared_models

from albert_edge.bench_latency.device import (
    benchmark_command,
    device_commands_script,
    device_result,
    parse_benchmark_log,
    tflite_input_order,
)
from albert_edge.errors import DataError
from tests.support.benchmark_logs import PLAIN_LOG, PROFILED_LOG


def test_inference_timings_line_gives_init_first_warmup_and_average_in_ms():
    [run] = parse_benchmark_log(PROFILED_LOG)
    assert run.init_ms == pytest.approx(38.412)
    assert run.first_inference_ms == pytest.approx(61.234)
    assert run.warmup_avg_ms == pytest.approx(26.1016)
    assert run.inference_avg_ms == pytest.approx(24.1904)


def test_the_regular_runs_stat_line_is_used_not_the_warmup_or_profiler_one():
    [run] = parse_benchmark_log(PROFILED_LOG)
    assert run.stats_us["count"] == 200
    assert run.stats_us["median"] == 24022
    assert run.stats_us["min"] == 23102


def test_parameters_give_graph_threads_shape_and_delegate():
    [run] = parse_benchmark_log(PROFILED_LOG)
    assert run.graph == "/data/local/tmp/albert_edge/int8_dynamic.tflite"
    assert (run.threads, run.batch, run.seq_len, run.use_xnnpack) == (4, 1, 128, True)
    assert run.peak_memory_mb == pytest.approx(21.8594)


def test_op_profile_is_the_regular_runs_summary_by_node_type():
    [run] = parse_benchmark_log(PROFILED_LOG)
    types = [row["node_type"] for row in run.op_profile]
    assert types == ["TfLiteXNNPackDelegate", "FULLY_CONNECTED", "SOFTMAX", "GATHER"]
    assert run.op_profile[1]["avg_ms"] == pytest.approx(5.402)
    assert run.op_profile[1]["times_called"] == 8
    assert "ModifyGraphWithDelegate" not in types


def test_a_log_without_percentiles_has_no_median_but_keeps_the_average():
    [run] = parse_benchmark_log(PLAIN_LOG)
    result = device_result(run, "fp32", "Pixel 4a")
    assert result["latency_ms"]["median"] is None
    assert result["latency_ms"]["mean"] == pytest.approx(57.4208)
    assert result["latency_ms"]["min"] == pytest.approx(56.433)
    assert (result["threads"], result["seq_len"], result["source"]) == (1, 64, "device")
    assert result["backend"] == "benchmark_model"
    assert result["peak_rss_mb"] == pytest.approx(27.0391)
    assert result["op_profile"] is None


def test_device_result_converts_microseconds_to_milliseconds():
    [run] = parse_benchmark_log(PROFILED_LOG)
    latency = device_result(run, "int8_dynamic", None)["latency_ms"]
    assert latency["median"] == pytest.approx(24.022)
    assert latency["std"] == pytest.approx(0.913)
    assert json.loads(json.dumps(latency)) == latency


def test_concatenated_logs_parse_into_one_run_each():
    runs = parse_benchmark_log(PLAIN_LOG + "\n" + PROFILED_LOG)
    assert [r.threads for r in runs] == [1, 4]


def test_text_that_is_not_benchmark_model_output_is_rejected_by_name():
    with pytest.raises(DataError, match="phone.log: no 'Inference timings in us"):
        parse_benchmark_log("adb: device offline\n", "phone.log")


def test_command_gives_every_input_a_shape_and_a_safe_value_range():
    argv = benchmark_command("/data/local/tmp/m.tflite", ["attention_mask", "input_ids", "token_type_ids"],
                             threads=4, seq_len=128, batch=1, warmup=20, runs=200)
    assert "--num_threads=4" in argv and "--use_xnnpack=true" in argv
    assert "--warmup_runs=20" in argv and "--num_runs=200" in argv and "--enable_op_profiling=true" in argv
    assert "--input_layer=attention_mask,input_ids,token_type_ids" in argv
    assert "--input_layer_shape=1,128:1,128:1,128" in argv
    assert "--input_layer_value_range=attention_mask,1,1:input_ids,1,99:token_type_ids,0,0" in argv


def test_input_order_is_read_from_the_model():
    order = tflite_input_order(shared_models()["fp32"])
    assert sorted(order) == ["attention_mask", "input_ids", "token_type_ids"]


def test_device_script_pushes_each_variant_and_runs_every_thread_and_length():
    models = shared_models()
    script = device_commands_script([("fp32", models["fp32"]), ("int8", models["int8"])], [1, 4], [32, 128],
                                    batch=1, warmup=20, runs=200)
    assert script.startswith("#!/bin/sh")
    assert script.count("adb push") == 3   # the benchmark binary and two models
    assert script.count("--graph=/data/local/tmp/albert_edge/int8.tflite") == 4
    assert '"$LOGS/fp32_t4_s128.log"' in script
    assert "--import-device-log" in script


def test_input_shapes_that_are_not_batch_and_length_name_the_log_and_the_line():
    """A garbage ``Input shapes`` line was refused later as ``report: results[1]: seq_len None`` (issue #37)."""
    import re

    broken = re.sub(r"Input shapes: \[[^\]]*\]", "Input shapes: [a,b:c]", PLAIN_LOG)
    assert broken != PLAIN_LOG
    with pytest.raises(DataError, match=r"phone\.log.*Input shapes \[a,b:c\]"):
        parse_benchmark_log(broken, "phone.log")
