"""Real-length inference vs fixed pad-to-128, on real Chinese review sentences. Prints JSON.

Builds an ALBERT-Tiny-shaped model (albert_tiny_zh_config: V=21128 E=128 H=312 L=4, random
weights -- latency does not depend on the weight values), exports it to TFLite (and ONNX) with
the bert-base-chinese vocab packed in, and times on the same machine, in one run:

* single texts: each fed at its own token length ([1, L]) vs padded to [1, 128];
* a corpus in batches of 32: length-bucketed (runtime default) vs input order at real
  length vs every row padded to 128;
* 1 vs 2 interpreter threads (the thread count must change latency).

Usage: python -m benchmarks.records.runtime_real_length [--n 256] [--sentences /work/notes/assets]
Run by hand; never timed in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = Path(__file__).resolve().parents[2]
VOCAB = REPO / "examples" / "albert_tiny_zh_sentiment" / "vocab.txt"
PAD_TO = 128


def load_sentences(directory: Path, n: int, seed: int) -> list[str]:
    lines = []
    for name in ("pos.txt", "neg.txt"):
        lines += [s.strip() for s in (directory / name).read_text(encoding="utf-8", errors="replace").splitlines() if s.strip()]
    random.Random(seed).shuffle(lines)
    return lines[:n]


def build_models(out: Path) -> dict[str, Path]:
    from albert_edge.convert import onnx_model_bytes, tflite_model_bytes
    from albert_edge.model import albert_tiny_zh_config, random_weights
    from albert_edge.runtime.pack import ModelPack

    weights = random_weights(albert_tiny_zh_config(), num_labels=2, seed=0)
    pack = ModelPack("wordpiece", VOCAB.read_bytes(), do_lower_case=True, max_seq_len=PAD_TO, labels=("neg", "pos"),
                     source={"scheme": "random", "config": "albert_tiny_zh"})
    paths = {"tflite": out / "albert_tiny_fp32.tflite", "onnx": out / "albert_tiny_fp32.onnx"}
    paths["tflite"].write_bytes(tflite_model_bytes(weights, pack))
    paths["onnx"].write_bytes(onnx_model_bytes(weights, pack))
    return paths


def timed(fn, repeats: int) -> list[float]:
    fn()  # warm-up: allocation, delegate preparation
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def single_text(clf, encs, repeats: int) -> dict[str, float]:
    """Median per-text latency (ms) at real length vs padded to PAD_TO, interleaved per text."""
    real, padded = [], []
    for e in encs:
        inputs_real = clf._batch_inputs([e], e.length)
        inputs_pad = clf._batch_inputs([e], PAD_TO)
        real.append(statistics.median(timed(lambda x=inputs_real: clf.run_inputs(x), repeats)))
        padded.append(statistics.median(timed(lambda x=inputs_pad: clf.run_inputs(x), repeats)))
    return {
        "real_length_ms_mean": 1e3 * statistics.mean(real),
        "pad128_ms_mean": 1e3 * statistics.mean(padded),
        "speedup": statistics.mean(padded) / statistics.mean(real),
    }


def corpus(clf, encs, batch_size: int, repeats: int) -> dict[str, float]:
    """Seconds to run the whole corpus three ways, best of ``repeats`` each, interleaved."""
    from albert_edge.runtime.classifier import length_buckets, padding_waste

    lengths = [e.length for e in encs]
    bucketed = [(g, clf._batch_inputs([encs[i] for i in g], max(lengths[i] for i in g))) for g in length_buckets(lengths, batch_size)]
    plain_groups = [list(range(i, min(i + batch_size, len(encs)))) for i in range(0, len(encs), batch_size)]
    plain = [(g, clf._batch_inputs([encs[i] for i in g], max(lengths[i] for i in g))) for g in plain_groups]
    padded = [(g, clf._batch_inputs([encs[i] for i in g], PAD_TO)) for g in plain_groups]
    variants = {"bucketed": bucketed, "input_order_real_length": plain, "pad128": padded}
    best = {k: float("inf") for k in variants}
    for _ in range(repeats):
        for name, batches in variants.items():
            t = time.perf_counter()
            for _, inputs in batches:
                clf.run_inputs(inputs)
            best[name] = min(best[name], time.perf_counter() - t)
    n = len(encs)
    return {
        **{f"{k}_s": v for k, v in best.items()},
        **{f"{k}_texts_per_s": n / v for k, v in best.items()},
        "speedup_bucketed_vs_pad128": best["pad128"] / best["bucketed"],
        "speedup_bucketed_vs_input_order": best["input_order_real_length"] / best["bucketed"],
        "padding_waste_bucketed": padding_waste(lengths, length_buckets(lengths, batch_size)),
        "padding_waste_input_order": padding_waste(lengths, plain_groups),
        "padding_waste_pad128": 1.0 - sum(lengths) / (n * PAD_TO),
    }


def thread_scaling(cls, path: Path, texts: list[str], rounds: int) -> dict[str, float]:
    """Latency of one [8, 128] batch at 1 and 2 threads, alternated so load drift hits both.

    Also the process CPU time per wall second during each invoke: above 1 means the
    interpreter really ran kernels on more than one thread, which holds even when a busy
    machine hides the latency gain.
    """
    def os_threads() -> int:
        return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1

    clfs, added = {}, {}
    for n in (1, 2):
        before = os_threads()
        clfs[n] = cls.from_file(path, num_threads=n)
        encs = clfs[n].encode_all(texts[:8])
        inputs = clfs[n]._batch_inputs(encs, PAD_TO)
        clfs[n].run_inputs(inputs)
        added[n] = os_threads() - before
    wall: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(rounds):
        for n, clf in clfs.items():
            c, t = time.process_time(), time.perf_counter()
            clf.run_inputs(inputs)
            wall[n].append(time.perf_counter() - t)
            cpu[n].append(time.process_time() - c)
    one, two = statistics.median(wall[1]), statistics.median(wall[2])
    return {
        "batch8x128_ms_1_thread": 1e3 * one, "batch8x128_ms_2_threads": 1e3 * two, "speedup_2_vs_1": one / two,
        "min_ms_1_thread": 1e3 * min(wall[1]), "min_ms_2_threads": 1e3 * min(wall[2]),
        "cpu_per_wall_1_thread": sum(cpu[1]) / sum(wall[1]), "cpu_per_wall_2_threads": sum(cpu[2]) / sum(wall[2]),
        "os_threads_added_1_thread": added[1], "os_threads_added_2_threads": added[2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=Path, default=Path("/work/notes/assets"))
    parser.add_argument("--n", type=int, default=256, help="corpus size (texts)")
    parser.add_argument("--single", type=int, default=48, help="texts timed one by one")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--formats", default="tflite,onnx")
    parser.add_argument("--rounds", type=int, default=15, help="alternations in the thread-scaling check")
    parser.add_argument("--threads-only", action="store_true", help="run only the 1-vs-2-thread check")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()

    from albert_edge.runtime import TextClassifier

    texts = load_sentences(args.sentences, args.n, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        paths = build_models(Path(tmp))
        result: dict = {
            "benchmark": "runtime_real_length",
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "loadavg_at_start": os.getloadavg()},
            "model": "albert_tiny_zh shape (V=21128 E=128 H=312 L=4 I=1248), fp32, random weights",
            "corpus": {"source": str(args.sentences), "texts": len(texts), "batch_size": args.batch_size},
            "results": {},
        }
        for fmt in [] if args.threads_only else args.formats.split(","):
            for threads in (1, 2):
                clf = TextClassifier.from_file(paths[fmt], num_threads=threads)
                encs = clf.encode_all(texts)
                lengths = [e.length for e in encs]
                result["corpus"]["token_length"] = {
                    "mean": statistics.mean(lengths), "median": statistics.median(lengths),
                    "p90": float(np.percentile(lengths, 90)), "max": max(lengths),
                    "truncated": sum(e.truncated for e in encs),
                }
                result["results"][f"{fmt}/{clf.backend_name}/threads={threads}"] = {
                    "single_text": single_text(clf, encs[: args.single], args.repeats),
                    "corpus": corpus(clf, encs, args.batch_size, max(2, args.repeats // 2)),
                }
        for fmt in args.formats.split(","):
            result.setdefault("thread_scaling", {})[fmt] = thread_scaling(TextClassifier, paths[fmt], texts, args.rounds)
        result["machine"]["loadavg_at_end"] = os.getloadavg()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
