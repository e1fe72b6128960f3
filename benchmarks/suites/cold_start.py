"""Cold start of a .tflite file: model file to first answer, each in a fresh process. Prints JSON.

What an app pays before its first answer, interleaved round by round so a neighbour's burst hits
every way alike:

* ``app``             -- what an app waits for: the pack's task runtime (``TextClassifier``,
                         ``TextEmbedder``, ``TokenClassifier``, ``QuestionAnswerer``, else
                         ``TaskModel``) ``from_file`` and its first answer on a sample text
                         (``albert_edge.bench_latency.worker.open_task_runtime``, as the bench's
                         ``first_answer_ms``).
* ``steps``           -- the same path with each step timed: file read, pack (zip members and
                         settings), standard metadata, tokenizer, pack-vs-graph checks, interpreter
                         (LiteRT + XNNPACK), the rest of ``from_file``, first answer. The steps are
                         the runtime's own functions, wrapped by a timer in that process only.
* ``app_before``      -- ``app`` with another tree's albert_edge (``--before-src DIR``, e.g. /work/main/src):
                         before and after a change in the same interleaved rounds.
* ``albert_edge``     -- ``albert_edge.runtime.open_backend`` alone (what the bench worker's
                         ``init_ms`` times): read the file, validate the flatbuffer in Python, build
                         a LiteRT ``Interpreter``, apply XNNPACK; then one run on fixed ids.
* ``interpreter``     -- ai_edge_litert's ``Interpreter(model_path=...)`` alone (LiteRT mmaps the
                         file; no Python-side validation).
* ``compiled``        -- LiteRT 2.x ``CompiledModel.from_file`` (the newer API), no weight cache.
* ``compiled_cache``  -- the same with ``CpuOptions.xnnpack_weight_cache_path``: XNNPACK's packed
                         weights are written to that file by the first process and mmapped by
                         the next ones instead of being repacked. The Interpreter API of
                         ai-edge-litert 2.3 exposes no weight-cache option (its constructor takes
                         ``experimental_delegates``, ``experimental_default_delegate_latest_features``
                         and friends, none a cache path), so the cache is only reachable here.

``paired_cpu_ratios`` (and ``paired_wall_ratios``, the same for wall time: the goal's figure on an idle machine,
and the only one that shows work run side by side in two threads): each app way's CPU time over the
interpreter's and over ``app_before``'s, per round
(the ways of a round run back to back), as the median ratio with a 95 % bootstrap interval: the figure to
quote on a loaded machine, where the ways' own medians drift apart by more than a change is worth.

Every way reports CPU time beside wall time (``first_answer_cpu_ms``; the interpreter ways
``cold_start_cpu_ms``: the process's CPU, all its threads): on a loaded shared machine the wall
times of fresh processes scatter by 2x while their CPU times barely move, so CPU is the one to
compare there.

Imports happen before every clock starts (an app imports once; its users wait for the load).
Several model files (one per task) are measured in one run. Every child of the interpreter ways
prints its logits too, so the JSON shows whether a faster way computes the same numbers (the
weight-cache path can route dynamic-range int8 through different XNNPACK kernels).

The interpreter ways feed ids of the app's first question by default (``--seq-len app``: the token count
of the bench's sample text in that model's pack, question + context for QA), so the bare interpreter's
load + first call is the floor of the app's figure: what LiteRT itself costs for the same first answer.

Usage: python -m benchmarks.suites.cold_start MODEL.tflite [MODEL2.tflite ...] [--rounds 15] [--threads 2]
       [--seq-len app|N] [--modes app,steps,albert_edge,interpreter]
Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MODES = ("app", "steps", "app_before", "albert_edge", "interpreter", "compiled", "compiled_cache")
# Ways that time the app's path (file to first answer); ``app_before`` is ``app`` with --before-src's albert_edge.
APP_WAYS = ("app", "steps", "app_before")
DEFAULT_MODES = ("app", "steps", "albert_edge", "interpreter")
SIGNATURE = "serving_default"
NAMES = ("input_ids", "attention_mask", "token_type_ids")
# Runtime functions timed by the ``steps`` way, by the step they are: wrapped wherever a runtime module
# imported them, so the task runtimes call the timed versions.
STEP_FUNCTIONS = {"read_model_bytes": "read", "map_model_file": "read", "read_pack_bytes": "pack", "read_standard_metadata": "metadata",
                  "load_tokenizer": "tokenizer", "check_model_consistency": "checks", "open_backend": "interpreter"}
STEP_MODULES = ("albert_edge.runtime.pack", "albert_edge.runtime.classifier", "albert_edge.runtime.embedder",
                "albert_edge.runtime.token_classifier", "albert_edge.runtime.question_answerer",
                "albert_edge.runtime.task_model")


def _feeds(seq_len: int):
    import numpy as np

    ids = (np.arange(seq_len, dtype=np.int32) % 97 + 1).reshape(1, seq_len)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def _timed_steps() -> tuple[dict[str, float], list[tuple[float, float]]]:
    """Wrap the STEP_FUNCTIONS in every STEP_MODULES namespace; return the ms each step accumulates and
    the (start, end) of every timed call.

    ``STEP_cpu`` is the CPU time of the thread that ran the step: the step's cost without neighbours (the
    interpreter's kernel threads are not in it; LiteRT 2.3 packs XNNPACK's weights in the calling thread).
    Steps that ran side by side (none in today's runtime) would be counted once in the total, as ``overlap``.
    """
    import importlib

    spent: dict[str, float] = {step: 0.0 for step in STEP_FUNCTIONS.values()}
    spent.update({f"{step}_cpu": 0.0 for step in STEP_FUNCTIONS.values()})
    spans: list[tuple[float, float]] = []

    def timed(step: str, func: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            cpu, start = time.thread_time(), time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                end = time.perf_counter()
                spans.append((start, end))
                spent[step] += (end - start) * 1e3
                spent[f"{step}_cpu"] += (time.thread_time() - cpu) * 1e3
        return wrapper

    for module_name in STEP_MODULES:
        module = importlib.import_module(module_name)
        for name, step in STEP_FUNCTIONS.items():
            if hasattr(module, name):
                setattr(module, name, timed(step, getattr(module, name)))
    return spent, spans


def _covered_ms(spans: list[tuple[float, float]]) -> float:
    """Wall time covered by the union of ``spans`` (overlapping steps counted once), in ms."""
    covered, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered * 1e3


def app_child(mode: str, model: str, threads: int, task: str = "") -> dict:
    """From file to the task's first answer in this (fresh) process; ``steps`` adds each step's time.

    ``task``: the pack's task, read by the parent (an app knows its task). Without it the child reads the pack
    before its clock, which also runs the pack reader's first-use work there (record 0306: a fresh process's zip
    parse is the app's cost, not the suite's).
    """
    from albert_edge.bench_latency.memory import read_through
    from albert_edge.bench_latency.worker import (
        import_runtime,
        import_task_runtimes,
        open_task_runtime,
    )
    from albert_edge.runtime.pack import read_pack

    import_runtime("litert")
    import_task_runtimes()
    if task:
        read_through(model)   # in the page cache, as the other ways find it, nothing parsed
    else:
        task = read_pack(model).task
    # An older tree (app_before) reads the pack again inside open_task_runtime, as that tree's bench did.
    known_task = {"task": task} if "task" in inspect.signature(open_task_runtime).parameters else {}
    spent, spans = _timed_steps() if mode == "steps" else ({}, [])
    cpu_start, start = time.process_time(), time.perf_counter()
    call, _ = open_task_runtime(model, "litert", threads, **known_task)
    opened = time.perf_counter()
    call()
    done, cpu_done = time.perf_counter(), time.process_time()
    # CPU time of the process (all its threads): on a shared machine, what the wall time would be
    # without neighbours, give or take the interpreter's parallel kernels.
    result = {"mode": mode, "task": task, "open_ms": (opened - start) * 1e3, "first_call_ms": (done - opened) * 1e3,
              "first_answer_ms": (done - start) * 1e3, "first_answer_cpu_ms": (cpu_done - cpu_start) * 1e3}
    if spent:
        # The metadata is read inside the pack step: the pack's own share is the difference.
        spent["pack"] -= spent["metadata"]
        spent["pack_cpu"] -= spent["metadata_cpu"]
        # Nested calls (metadata inside pack) count once in the union; steps run side by side count once too,
        # their shared wall time being ``overlap``: steps - overlap + other == open.
        spent["overlap"] = sum(v for k, v in spent.items() if not k.endswith("_cpu")) - _covered_ms(spans)
        spent["other_from_file"] = result["open_ms"] - _covered_ms(spans)
        spent["first_call"] = result["first_call_ms"]
        result["steps_ms"] = spent
    return result


def child(mode: str, model: str, threads: int, seq_len: int, cache: str, task: str = "") -> dict:
    """One cold start in this (fresh) process; imports happen before the clock starts."""
    import numpy as np

    if mode in APP_WAYS:
        return app_child(mode, model, threads, task)
    fixed = fixed_len(model) if mode.startswith("compiled") else None
    # CompiledModel resizes only dynamic dims (a fixed [1, 128] graph refuses [1, 25]; its non-strict
    # resize ran but gave other logits than the Interpreter at 25): it runs a fixed graph at its own length.
    seq_len = fixed or seq_len
    feeds = _feeds(seq_len)
    if mode == "albert_edge":
        import ai_edge_litert.interpreter  # noqa: F401 - imported before the clock, as in the worker

        from albert_edge.runtime.backends import open_backend

        cpu_start, start = time.process_time(), time.perf_counter()
        with open(model, "rb") as handle:
            backend = open_backend(handle.read(), model, "litert", threads, True)
        loaded = time.perf_counter()
        logits = next(iter(backend.run(feeds).values()))   # "logits", or an embedding model's output
    elif mode == "interpreter":
        from ai_edge_litert.interpreter import Interpreter

        cpu_start, start = time.process_time(), time.perf_counter()
        interpreter = Interpreter(model_path=model, num_threads=threads)
        interpreter.allocate_tensors()
        runner = interpreter.get_signature_runner(SIGNATURE)
        loaded = time.perf_counter()
        logits = next(iter(runner(**feeds).values()))
    else:
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.cpu_options import CpuOptions
        from ai_edge_litert.options import Options

        cpu = CpuOptions(num_threads=threads, xnnpack_weight_cache_path=cache if mode == "compiled_cache" else "")
        cpu_start, start = time.process_time(), time.perf_counter()
        compiled = CompiledModel.from_file(model, options=Options(cpu_options=cpu))
        loaded = time.perf_counter()
        index = compiled.get_signature_index(SIGNATURE)
        inputs = compiled.get_signature_list()[SIGNATURE]["inputs"]
        outputs = compiled.get_signature_list()[SIGNATURE]["outputs"]   # not in a fixed order: probabilities first
        at = outputs.index("logits") if "logits" in outputs else 0
        for i, _ in enumerate(inputs):
            if fixed is None:
                compiled.resize_input_tensor(i, [1, seq_len], index)
        in_buffers = compiled.create_input_buffers(index)
        out_buffers = compiled.create_output_buffers(index)
        for name, buffer in zip(inputs, in_buffers):
            buffer.write(feeds[name])
        compiled.run_by_index(index, in_buffers, out_buffers)
        logits = out_buffers[at].read(2, np.float32)
    done, cpu_done = time.perf_counter(), time.process_time()
    return {"mode": mode, "load_ms": (loaded - start) * 1e3, "first_inference_ms": (done - loaded) * 1e3,
            "cold_start_ms": (done - start) * 1e3, "cold_start_cpu_ms": (cpu_done - cpu_start) * 1e3, "fed_len": seq_len, "logits": [float(x) for x in np.ravel(logits)[:2]]}


def fixed_len(model: str) -> int | None:
    """N when the graph's ``input_ids`` is a fixed [1, N] (a dynamic dim gives None)."""
    from albert_edge.runtime.flatbuffer import read_tflite_graph
    from albert_edge.runtime.pack import read_model_bytes, tflite_flatbuffer_view

    graph = read_tflite_graph(tflite_flatbuffer_view(read_model_bytes(model)), model)
    shape = graph.tensors[graph.signature_inputs["input_ids"]].shape
    return shape[1] if len(shape) == 2 and shape[1] > 0 else None


def app_seq_len(model: str, pack=None) -> int:
    """Positions the app's first call feeds for ``model``: the bench's sample text (QA: question + context)
    encoded by the pack's own tokenizer, as ``open_task_runtime``'s first call encodes it. ``pack``: the file's,
    when the caller has read it."""
    from albert_edge.bench_latency.worker import SAMPLE_QUESTION, SAMPLE_TEXT
    from albert_edge.runtime.pack import read_pack
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    pack = pack or read_pack(model)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, model)
    preprocessor = Preprocessor(tokenizer, pack.max_seq_len)
    pair = (SAMPLE_QUESTION, SAMPLE_TEXT) if pack.task == "question_answering" else (SAMPLE_TEXT, None)
    return preprocessor.encode(*pair).length


def run_child(mode: str, model: str, threads: int, seq_len: int, cache: str, before_src: str = "",
              task: str = "") -> dict:
    argv = [sys.executable, __file__, "--child", mode, model, "--threads", str(threads), "--seq-len", str(seq_len),
            "--cache", cache, *(["--task", task] if task and mode in APP_WAYS else [])]
    env = {**os.environ, "PYTHONPATH": before_src} if mode == "app_before" else None
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{mode}: child failed ({(proc.stderr.strip().splitlines() or ['?'])[-1]})")
    return json.loads(lines[-1])


def summarize(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
            "min": ordered[0], "n": len(ordered)}


def _way_summary(mode: str, raws: list[dict], base: float, first_mode: str) -> dict:
    """Medians and p90 of one way over its fresh processes (steps: of every step too)."""
    if mode in APP_WAYS:
        out = {"task": raws[0]["task"],
               **{key: summarize([x[key] for x in raws])
                  for key in ("open_ms", "first_call_ms", "first_answer_ms", "first_answer_cpu_ms")}}
        if mode == "steps":
            out["steps_ms"] = {step: summarize([x["steps_ms"][step] for x in raws]) for step in raws[0]["steps_ms"]}
        total = statistics.median(x["first_answer_ms"] for x in raws)
    else:
        out = {key: summarize([x[key] for x in raws])
               for key in ("load_ms", "first_inference_ms", "cold_start_ms", "cold_start_cpu_ms")}
        out["logits"] = raws[0]["logits"]
        total = statistics.median(x["cold_start_ms"] for x in raws)
    out["ratio_to_" + first_mode] = total / base if base else None
    return out


def round_orders(modes: list[str], rounds: int, seed: int = 39) -> list[list[str]]:
    """The order of the ways in each round: shuffled (seeded), so no way holds a place in the round.

    Why: alternating one order and its reverse kept ``app`` first or last and ``steps`` in the middle; idle,
    the two ways (the same code) read 1.06x and 0.94x of ``app_before`` in one run (record 0306), a position
    effect larger than the changes measured.
    """
    import random

    rng = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(modes)
        rng.shuffle(order)
        orders.append(order)
    return orders


def measure_model(model: str, modes: list[str], args: argparse.Namespace) -> dict:
    """Every way on one model file, ``args.rounds`` fresh processes each, interleaved round by round."""
    from albert_edge.runtime.pack import read_pack

    load_start = [round(x, 2) for x in os.getloadavg()]
    pack = read_pack(model) if args.seq_len == "app" or any(m in APP_WAYS for m in modes) else None
    seq_len = app_seq_len(model, pack) if args.seq_len == "app" else int(args.seq_len)
    # The pack's task, read here once so that the app ways' children start from the file (``app_child``).
    task = pack.task if pack is not None and any(m in APP_WAYS for m in modes) else ""
    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / (Path(model).stem + ".xnnpack_cache"))
        warm = run_child("compiled_cache", model, args.threads, seq_len, cache) \
            if "compiled_cache" in modes else None   # writes the cache; timed separately
        cache_bytes = os.path.getsize(cache) if os.path.exists(cache) else 0
        raws: dict[str, list[dict]] = {m: [] for m in modes}
        for r, order in enumerate(round_orders(modes, args.rounds)):
            print(f"{Path(model).name}: round {r + 1}/{args.rounds}", file=sys.stderr, flush=True)
            for mode in order:
                raws[mode].append(run_child(mode, model, args.threads, seq_len, cache, args.before_src, task))
    key = "first_answer_ms" if modes[0] in APP_WAYS else "cold_start_ms"
    base = statistics.median(x[key] for x in raws[modes[0]])
    logit_ways = [m for m in modes if "logits" in raws[m][0]]
    first = raws[logit_ways[0]][0] if logit_ways else None
    ways = {m: _way_summary(m, raws[m], base, modes[0]) for m in modes}
    for m in logit_ways:
        ways[m]["fed_len"] = raws[m][0]["fed_len"]
        # Logits of different lengths are different answers: compared only at the reference's length.
        ways[m]["max_abs_logit_diff_vs_" + logit_ways[0]] = max(
            abs(a - b) for a, b in zip(raws[m][0]["logits"], first["logits"])) \
            if raws[m][0]["fed_len"] == first["fed_len"] else None
    return {"model": model, "size_bytes": os.path.getsize(model), "seq_len": seq_len, "load_average_start": load_start,
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "weight_cache": {"bytes": cache_bytes, "first_process_cold_start_ms": warm["cold_start_ms"] if warm else None},
            "split": split(ways), "paired_cpu_ratios": paired_ratios(raws),
            "paired_wall_ratios": paired_ratios(raws, measure=_wall), "ways": ways}


def _cpu(raw: dict) -> float:
    return raw["first_answer_cpu_ms"] if "first_answer_cpu_ms" in raw else raw["cold_start_cpu_ms"]


def _wall(raw: dict) -> float:
    return raw["first_answer_ms"] if "first_answer_ms" in raw else raw["cold_start_ms"]


def paired_ratios(raws: dict[str, list[dict]], resamples: int = 2000, measure: Callable[[dict], float] = _cpu) -> dict[str, dict]:
    """CPU time (or ``measure``: ``_wall``) of each app way over the interpreter's and over ``app_before``'s, round by round.

    The processes of one round ran back to back, so a neighbour's burst inflates both sides of a round's ratio
    alike; on a loaded machine the medians of each way drift apart by more than a change is worth, while the
    median of the per-round ratios holds. ``interval``: 95 % bootstrap interval of that median (seeded).
    Wall time is the goal's figure on an idle machine (work run side by side in two threads saves wall time,
    not CPU time); CPU time the one that a loaded machine inflates least.
    """
    import random

    rng = random.Random(39)
    out = {}
    pairs = [(a, b) for a in ("app", "steps") for b in ("interpreter", "app_before") if a in raws and b in raws]
    for a, b in pairs:
        ratios = [measure(x) / measure(y) for x, y in zip(raws[a], raws[b])]
        medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
        out[f"{a}/{b}"] = {"median": statistics.median(ratios), "n": len(ratios),
                           "interval": [medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]]}
    return out


def split(ways: dict[str, dict]) -> dict | None:
    """The app's median split into LiteRT's own part (the bare interpreter way's load + first call, the
    floor with this runtime) and ours (the rest: file read, pack, metadata, tokenizer, checks, Python);
    None unless both an app way and the interpreter way ran."""
    app_way = next((m for m in ("app", "steps") if m in ways), None)
    if app_way is None or "interpreter" not in ways:
        return None
    app = ways[app_way]["first_answer_ms"]["median"]
    litert = ways["interpreter"]["cold_start_ms"]["median"]
    return {"app_ms": app, "litert_ms": litert, "ours_ms": app - litert, "app_over_litert": app / litert,
            "text": f"the app path is {app:.1f} ms (median), of which {litert:.1f} ms is LiteRT's own load + first "
                    f"call (bare Interpreter(model_path), the floor with this runtime); ours is {app - litert:.1f} ms"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", metavar="MODEL", help="packed .tflite files (one per task, say)")
    parser.add_argument("--rounds", type=int, default=15, help="fresh processes per way and model (default 15)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", default="app", help="ids fed by the interpreter-only ways: a number, or 'app' "
                        "(default): the length of the app's first question in that model")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--before-src", default="", metavar="DIR",
                        help="another tree's src/ (e.g. /work/main/src): adds the way app_before, the app's path with "
                             "that albert_edge, in the same interleaved rounds")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--cache", default="", help=argparse.SUPPRESS)
    parser.add_argument("--task", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        app_way = args.child in APP_WAYS
        seq_len = 0 if app_way else app_seq_len(args.models[0]) if args.seq_len == "app" else int(args.seq_len)
        print(json.dumps(child(args.child, args.models[0], args.threads, seq_len, args.cache, args.task)), flush=True)
        return

    from albert_edge.bench_latency.machine import describe_machine

    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if args.before_src and "app_before" not in modes:
        modes.append("app_before")
    if unknown or not modes or ("app_before" in modes and not Path(args.before_src, "albert_edge").is_dir()):
        parser.error(f"--modes: unknown way(s) {unknown}, or app_before without --before-src DIR/ holding albert_edge; "
                     f"choose from {', '.join(MODES)}")
    if args.seq_len != "app" and not (args.seq_len.isdigit() and 0 < int(args.seq_len) <= 8192):
        parser.error(f"--seq-len: {args.seq_len!r} is neither 'app' nor a length in 1..8192")
    started = time.time()
    machine = describe_machine()
    result = {
        "benchmark": "cold_start", "threads": args.threads, "seq_len": args.seq_len if args.seq_len == "app" else int(args.seq_len),
        "processes_per_way": args.rounds,
        "command": " ".join(["python", "-m", "benchmarks.suites.cold_start", *sys.argv[1:]]),
        "machine": machine, "models": [measure_model(model, modes, args) for model in args.models],
        "elapsed_s": round(time.time() - started, 1),
    }
    print(json.dumps(result, indent=1))
    for entry in result["models"]:
        if entry["split"]:
            print(f"{Path(entry['model']).name}: {entry['split']['text']}", file=sys.stderr)
        for what, key in (("CPU", "paired_cpu_ratios"), ("wall", "paired_wall_ratios")):
            for pair, ratio in entry[key].items():
                print(f"{Path(entry['model']).name}: {what} {pair} {ratio['median']:.2f}x "
                      f"[{ratio['interval'][0]:.2f}-{ratio['interval'][1]:.2f}] over {ratio['n']} rounds", file=sys.stderr)


if __name__ == "__main__":
    main()
