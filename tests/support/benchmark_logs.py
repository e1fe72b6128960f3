"""Two real-format benchmark_model logs (a profiled 2.x build and an older plain one): the bench
device tests parse them, and the bench CLI and peers-report tests import them as device results."""

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
