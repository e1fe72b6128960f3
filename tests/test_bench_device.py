"""benchmark_model commands for a phone, and parsing its output into report results.

The log texts follow the real tool's output (tensorflow/lite/tools/benchmark: BenchmarkModel's
"Inference timings in us" line, Stat/StatWithPercentiles lines, the memory footprint line and the
op-profiling tables of a 2.x build with --enable_op_profiling=true).
"""

from __future__ import annotations

import json

import pytest
from test_bench_support import shared_models

from albert_edge.bench_latency.device import (
    benchmark_command,
    device_commands_script,
    device_result,
    parse_benchmark_log,
    tflite_input_order,
)
from albert_edge.errors import DataError

PROFILED_LOG = """\
INFO: STARTING!
INFO: Log parameter values verbosely: [0]
INFO: Min num runs: [200]
INFO: Num threads: [4]
INFO: Min warmup runs: [20]
INFO: Graph: [/data/local/tmp/albert_edge/int8_dynamic.tflite]
INFO: Enable op profiling: [1]
INFO: Input layers: [attention_mask,input_ids,token_type_ids]
INFO: Input shapes: [1,128:1,128:1,128]
INFO: Input value ranges: [attention_mask,1,1:input_ids,1,99:token_type_ids,0,0]
INFO: Report the peak memory footprint: [1]
INFO: #threads used for CPU inference: [4]
INFO: Use xnnpack: [1]
INFO: Loaded model /data/local/tmp/albert_edge/int8_dynamic.tflite
INFO: Initialized TensorFlow Lite runtime.
INFO: Created TensorFlow Lite XNNPACK delegate for CPU.
INFO: XNNPACK delegate created.
INFO: Explicitly applied XNNPACK delegate, and the model graph will be partially executed by the delegate w/ 9 delegate kernels.
INFO: The input model file size (MB): 4.21133
INFO: Initialized session in 38.412ms.
INFO: Running benchmark for at least 20 iterations and at least 0.5 seconds but terminate if exceeding 150 seconds.
INFO: count=20 first=61234 curr=24310 min=23877 max=61234 avg=26101.6 std=8102 p5=23877 median=24205 p95=61234

INFO: Running benchmark for at least 200 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
INFO: count=200 first=24501 curr=23988 min=23102 max=31877 avg=24190.4 std=913 p5=23311 median=24022 p95=25730

INFO: Inference timings in us: Init: 38412, First inference: 61234, Warmup (avg): 26101.6, Inference (avg): 24190.4
INFO: Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to the actual memory footprint of the model at runtime. Take the information at your discretion.
INFO: Peak memory footprint (MB): init=9.26953 overall=21.8594
INFO: Profiling Info for Benchmark Initialization:
============================== Run Order ==============================
\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t[times called]\t[Name]
\t ModifyGraphWithDelegate\t            0.000\t   21.406\t   21.406\t 86.120%\t 86.120%\t  6120.000\t        1\tModifyGraphWithDelegate/0
\t         AllocateTensors\t           21.410\t    3.449\t    3.449\t 13.880%\t100.000%\t     0.000\t        1\tAllocateTensors/0

============================== Summary by node type ==============================
\t             [Node type]\t  [count]\t  [avg ms]\t    [avg %]\t    [cdf %]\t  [mem KB]\t[times called]
\t ModifyGraphWithDelegate\t        1\t    21.406\t    86.120%\t    86.120%\t  6120.000\t        1
\t         AllocateTensors\t        1\t     3.449\t    13.880%\t   100.000%\t     0.000\t        1

Timings (microseconds): count=1 curr=24855
Memory (bytes): count=0
2 nodes observed



Operator-wise Profiling Info for Regular Benchmark Runs:
============================== Run Order ==============================
\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t[times called]\t[Name]
\t                  GATHER\t            0.011\t    0.052\t    0.049\t  0.204%\t  0.204%\t     0.000\t        1\t[model/embeddings/word/GatherV2]:0
\t       TfLiteXNNPackDelegate\t            0.062\t   18.301\t   17.944\t 74.703%\t 74.907%\t     0.000\t        4\t[model/encoder/layer/attention]:12
\t         FULLY_CONNECTED\t           18.010\t    5.511\t    5.402\t 22.489%\t 97.396%\t     0.000\t        8\t[model/encoder/layer/ffn/dense]:13
\t                 SOFTMAX\t           23.420\t    0.640\t    0.625\t  2.604%\t100.000%\t     0.000\t        4\t[model/encoder/layer/attention/Softmax]:14

============================== Top by Computation Time ==============================
\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t  [mem KB]\t[times called]\t[Name]
\t       TfLiteXNNPackDelegate\t            0.062\t   18.301\t   17.944\t 74.703%\t 74.703%\t     0.000\t        4\t[model/encoder/layer/attention]:12
\t         FULLY_CONNECTED\t           18.010\t    5.511\t    5.402\t 22.489%\t 97.192%\t     0.000\t        8\t[model/encoder/layer/ffn/dense]:13

Number of nodes executed: 4
============================== Summary by node type ==============================
\t             [Node type]\t  [count]\t  [avg ms]\t    [avg %]\t    [cdf %]\t  [mem KB]\t[times called]
\t   TfLiteXNNPackDelegate\t        1\t    17.944\t    74.704%\t    74.704%\t     0.000\t        4
\t         FULLY_CONNECTED\t        1\t     5.402\t    22.489%\t    97.193%\t     0.000\t        8
\t                 SOFTMAX\t        1\t     0.625\t     2.602%\t    99.795%\t     0.000\t        4
\t                  GATHER\t        1\t     0.049\t     0.204%\t   100.000%\t     0.000\t        1

Timings (microseconds): count=200 first=24490 curr=23977 min=23090 max=31860 avg=24180.1 std=912
Memory (bytes): count=0
4 nodes observed
"""

# An older build: no percentiles on the stat line, the "memory footprint delta" wording, no profiling.
PLAIN_LOG = """\
STARTING!
Num runs: [50]
Num threads: [1]
Graph: [/data/local/tmp/albert_edge/fp32.tflite]
Input layers: [input_ids,attention_mask,token_type_ids]
Input shapes: [1,64:1,64:1,64]
Use xnnpack: [0]
Loaded model /data/local/tmp/albert_edge/fp32.tflite
The input model file size (MB): 16.5241
Initialized session in 4.802ms.
Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if exceeding 150 seconds.
count=9 first=80211 curr=57102 min=56890 max=80211 avg=59803.2 std=7301

Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
count=50 first=57330 curr=57012 min=56433 max=61109 avg=57420.8 std=802

Inference timings in us: Init: 4802, First inference: 80211, Warmup (avg): 59803.2, Inference (avg): 57420.8
Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to the actual memory footprint of the model at runtime. Take the information at your discretion.
Memory footprint delta from the start of the tool (MB): init=18.6133 overall=27.0391
"""


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
