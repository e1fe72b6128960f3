"""Does XNNPACK's weight cache change a sequence classifier's answers? Prints JSON.

ALBERT's shared layer is packed by XNNPACK once per use under LiteRT's ``Interpreter`` (record 0160: 4.6 instead
of 1.25 MiB for the sample's int8 file). The only way LiteRT 2.3 offers to pack each weight once is
``CompiledModel`` with ``CpuOptions.xnnpack_weight_cache_path``, which 0160 saw move the sample's probabilities
(0.8589 -> 0.8525 on one text). This suite judges that in the task's own metric over a labelled TSV: every row
at its real length through

* ``interpreter``     -- the runtime's own path (``TextClassifier.from_file``: LiteRT ``Interpreter`` + XNNPACK),
* ``interpreter_padded`` -- the same, every row padded to the graph's fixed length (CompiledModel resizes only
                         dynamic dims, so a fixed [1, 128] graph runs there at 128: this way separates padding),
* ``compiled``        -- ``CompiledModel`` without a cache (what the switch of API alone changes),
* ``compiled_cache``  -- ``CompiledModel`` with the weight cache (what the cache changes on top),

and reports each way's accuracy, its label agreement with ``interpreter_padded`` and with the fp32 file's
``interpreter`` (``--reference``), and the largest and mean |delta probability| from ``interpreter_padded``;
plus the RSS over the import baseline after each way's first call (fresh processes, one per way).

Usage: python -m benchmarks.suites.compiled_cache_drift MODEL.tflite --eval dev.tsv [--reference fp32.tflite]
       [--threads 2] [--limit N]
Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

WAYS = ("interpreter", "interpreter_padded", "compiled", "compiled_cache")


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024


def fixed_len(model: str) -> int | None:
    """N when the graph's ``input_ids`` is a fixed [1, N]."""
    from albert_edge.runtime.flatbuffer import read_tflite_graph
    from albert_edge.runtime.pack import read_model_bytes, tflite_flatbuffer_view

    graph = read_tflite_graph(tflite_flatbuffer_view(read_model_bytes(model)), model)
    shape = graph.tensors[graph.signature_inputs["input_ids"]].shape
    return shape[1] if len(shape) == 2 and shape[1] > 0 else None


def _compiled_runner(model: str, threads: int, cache: str):
    """run(encoding) -> logits through CompiledModel (resized to each row's length)."""
    import numpy as np
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.cpu_options import CpuOptions
    from ai_edge_litert.options import Options

    compiled = CompiledModel.from_file(model, options=Options(cpu_options=CpuOptions(
        num_threads=threads, xnnpack_weight_cache_path=cache)))
    index = compiled.get_signature_index("serving_default")
    fixed = fixed_len(model)
    signature = compiled.get_signature_list()["serving_default"]
    inputs, at = signature["inputs"], signature["outputs"].index("logits")   # outputs are not in a fixed order

    def run(feeds: dict) -> np.ndarray:
        if fixed is None:
            for i, name in enumerate(inputs):
                compiled.resize_input_tensor(i, list(feeds[name].shape), index)
        in_buffers, out_buffers = compiled.create_input_buffers(index), compiled.create_output_buffers(index)
        for name, buffer in zip(inputs, in_buffers):
            buffer.write(np.ascontiguousarray(feeds[name], np.int32))
        compiled.run_by_index(index, in_buffers, out_buffers)
        return out_buffers[at].read(2, np.float32).reshape(1, 2)

    return run


def child(way: str, model: str, eval_path: str, threads: int, limit: int, cache: str) -> dict:
    """One way over the rows in this (fresh) process: probabilities per row and RSS after the first call."""
    import numpy as np

    from albert_edge.inputs.data import read_tsv
    from albert_edge.runtime import TextClassifier
    from albert_edge.runtime.classifier import softmax
    from albert_edge.tokenizer import batch_one

    clf = TextClassifier.from_file(model, num_threads=threads)   # the pack's tokenizer and labels
    examples = read_tsv(eval_path, clf.labels)[:limit]
    import ai_edge_litert.compiled_model  # noqa: F401 - imported before the baseline
    base = _rss_mib()
    if way.startswith("interpreter"):   # the runtime's backend, built after the baseline like the others
        from albert_edge.runtime.backends import open_backend
        from albert_edge.runtime.pack import map_model_file

        backend = open_backend(map_model_file(model), model, "litert", threads)
        run = lambda feeds: backend.run(feeds)[clf.pack.outputs[0]]  # noqa: E731
    else:
        run = _compiled_runner(model, threads, cache if way == "compiled_cache" else "")
    fixed = fixed_len(model) if way != "interpreter" else None
    probs, first = [], None
    for example in examples:
        feeds = batch_one(clf.preprocessor.encode(example.text_a, example.text_b))
        if fixed:   # zero ids and mask after the text: what the padded batches of the runtime feed
            feeds = {k: np.pad(v, ((0, 0), (0, fixed - v.shape[1]))) for k, v in feeds.items()}
        logits = run(feeds)
        probs.append(softmax(np.asarray(logits, np.float64))[0].tolist())
        first = first if first is not None else _rss_mib() - base
    labels = [clf.labels.index(e.label) for e in examples]
    return {"way": way, "probs": probs, "labels": labels, "rss_after_first_mib": first}


def _spawn(way: str, model: str, args: argparse.Namespace, cache: str) -> dict:
    argv = [sys.executable, __file__, "--child", way, model, "--eval", args.eval, "--threads", str(args.threads),
            "--limit", str(args.limit), "--cache", cache]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def compare(runs: dict[str, dict], reference: dict | None) -> dict:
    """Accuracy, agreement and probability deltas of every way against ``interpreter_padded``."""
    import numpy as np

    base = np.asarray(runs["interpreter_padded"]["probs"])
    labels = np.asarray(runs["interpreter_padded"]["labels"])
    ref = np.asarray(reference["probs"]).argmax(1) if reference else None
    out = {}
    for way, run in runs.items():
        p = np.asarray(run["probs"])
        delta = np.abs(p - base).max(1)
        out[way] = {"rows": len(p), "accuracy": float((p.argmax(1) == labels).mean()),
                    "agreement_with_interpreter_padded": float((p.argmax(1) == base.argmax(1)).mean()),
                    "agreement_with_fp32": None if ref is None else float((p.argmax(1) == ref).mean()),
                    "max_abs_delta_prob": float(delta.max()), "mean_abs_delta_prob": float(delta.mean()),
                    "rss_after_first_mib": run["rss_after_first_mib"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--eval", required=True)
    parser.add_argument("--reference", help="the fp32 .tflite of the same checkpoint")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=10**9)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.model, args.eval, args.threads, args.limit, args.cache)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "weights.xnnpack_cache")
        _spawn("compiled_cache", args.model, args, cache)   # writes the cache; the measured process reads it
        runs = {way: _spawn(way, args.model, args, cache) for way in WAYS}
        cache_bytes = os.path.getsize(cache) if os.path.exists(cache) else 0
    reference = _spawn("interpreter", args.reference, args, "") if args.reference else None
    print(json.dumps({"benchmark": "compiled_cache_drift", "model": args.model, "eval": args.eval,
                      "threads": args.threads, "cache_bytes": cache_bytes, "load_average": os.getloadavg(),
                      "ways": compare(runs, reference)}, indent=1))


if __name__ == "__main__":
    main()
