"""How the cost of each command grows with the model: wall, CPU and peak RSS per stage. Prints JSON.

Run by hand (never timed in CI; issue #39 item 4):

    python -m benchmarks.suites.cost_growth                                  # sample, albert-base, bert-base
    python -m benchmarks.suites.cost_growth --shapes sample,bert-base --stages convert,quantize-dynamic
    python -m benchmarks.suites.cost_growth --timeout 1800 --out /tmp/cost_growth.json

Shapes: ``sample`` is the trained ALBERT-Tiny in examples/; ``albert-base`` (hidden 768, 12 layers
sharing one layer, embedding 128) and ``bert-base`` (hidden 768, 12 layers of their own, embedding
768, no projection) get random weights, written by the suite as real Hugging Face checkpoints
(config.json + model.safetensors + the sample's vocab.txt), so every stage reads them the way it
reads a user's model. Random weights are fine for time and memory, not for accuracy: their
quantized variants may miss the budget (auto then exits 3 after the same work).

Stages, each one ``albert-edge`` process as a user runs it, with the sample's data:
``convert`` (TFLite + ONNX fp32), ``quantize-dynamic`` (``--eval dev.tsv``), ``quantize-auto``
(``--calib calib.txt --eval dev.tsv``) and ``bench`` (the files quantize-dynamic wrote, 2 threads,
real lengths of test.tsv). Each stage's wall seconds, CPU seconds (user + system of the process
and its children), peak RSS (the largest process's high-water mark, ``wait4``) and the process
tree's summed peak RSS (sampled: quantize converts in a child beside the judging parent) are
recorded with the load average before and after, the stage's last stderr line and its progress
step lines (each says its seconds and when it ended). A stage over ``--timeout``
is killed and recorded as such; the next stages still run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "albert_tiny_zh_sentiment"
SHAPES = ("sample", "albert-base", "bert-base")
STAGES = ("convert", "quantize-dynamic", "quantize-auto", "bench")
#: The random-weight shapes: (config fields, model type). The vocabulary is the sample's (21,128 ids).
BASE_SHAPES: dict[str, dict[str, Any]] = {
    "albert-base": dict(embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, num_hidden_groups=1, embedding_order="add_then_project",
                        model_type="albert", hidden_act="gelu_tanh"),
    "bert-base": dict(embedding_size=768, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, num_hidden_groups=12, embedding_order="no_projection",
                      model_type="bert", hidden_act="gelu_exact"),
}


def write_shape(name: str, directory: Path) -> tuple[Path, int]:
    """A random-weight checkpoint of shape ``name`` in ``directory`` (HF layout + vocab.txt); (dir, parameters)."""
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.model.hf import write_hf_checkpoint

    vocab_size = json.loads((SAMPLE / "albert_config.json").read_text(encoding="utf-8"))["vocab_size"]
    config = AlbertConfig(vocab_size=vocab_size, max_position_embeddings=512, **BASE_SHAPES[name])
    weights = random_weights(config, num_labels=2, seed=0)
    write_hf_checkpoint(weights, directory)
    shutil.copy(SAMPLE / "vocab.txt", directory / "vocab.txt")
    return directory, sum(int(a.size) for a in weights.tensors.values())


def sample_parameters() -> int:
    """Parameters of the trained sample (read as ``albert-edge`` reads it)."""
    from albert_edge.convert.source import ModelSource

    return sum(int(a.size) for a in ModelSource.load(SAMPLE).weights.tensors.values())


def run_stage(argv: list[str], timeout: float) -> dict[str, Any]:
    """One ``albert-edge`` process: wall and CPU seconds, peak RSS (MB), exit code, last stderr line."""
    record = run_command([sys.executable, "-m", "albert_edge", *argv], timeout)
    record["argv"] = ["albert-edge", *argv]
    return record


class TreeSampler:
    """The summed RSS of a process and all its descendants, sampled every ``every`` seconds in a thread.

    Why: ``wait4``'s peak is the largest single process, but quantize converts in a child process while the
    parent judges (``convert/child_process.py``): the machine must hold both at once, so #39's 4 GB is the
    tree's sum. Sampling can miss a peak shorter than ``every``; the record says the period.
    """

    def __init__(self, pid: int, every: float = 0.25) -> None:
        import threading

        self.pid, self.every, self.peak, self.at, self.began = pid, every, 0, 0.0, time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self._stop.is_set():
            try:
                family = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            total = 0
            for proc in family:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    continue
            if total > self.peak:
                self.peak, self.at = total, time.perf_counter() - self.began
            self._stop.wait(self.every)

    def stop(self) -> dict[str, Any]:
        """Stop sampling; the tree's peak (MB), when it was reached (s) and the sampling period (s)."""
        self._stop.set()
        self._thread.join()
        return {"tree_peak_rss_mb": round(self.peak / 2**20, 1), "tree_peak_at_s": round(self.at, 1),
                "tree_sampled_every_s": self.every}


def run_command(cmd: list[str], timeout: float) -> dict[str, Any]:
    """One process (and its children): wall and CPU seconds, the largest process's peak RSS and the tree's
    summed peak (MB), exit code, the last stderr line and every progress step line (heartbeats left out).

    wait4's peak is only the command's when this process is small: Linux keeps the spawning process's RSS
    high-water mark in the child's figure across exec (the suite runs as its own small process)."""
    load = os.getloadavg()
    err = tempfile.TemporaryFile()
    began = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    sampler = TreeSampler(proc.pid)
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - began > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            timed_out = True
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.2)
    wall = time.perf_counter() - began
    tree = sampler.stop()
    err.seek(0)
    lines = [line for line in err.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return {"argv": cmd, "wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), **tree, "exit": os.waitstatus_to_exitcode(status),
            "timed_out": timed_out, "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()], "last_line": lines[-1][:300] if lines else "",
            "steps": [line[:300] for line in lines if " s so far, at " not in line]}


def stage_argv(stage: str, checkpoint: Path, work: Path) -> list[str] | None:
    """The command line of ``stage`` on ``checkpoint``; None when what it needs (quantize's files) is missing."""
    data = ["--eval", str(SAMPLE / "dev.tsv")]
    if stage == "convert":
        return ["convert", str(checkpoint), "--out", str(work / "convert"), "--labels", "neg,pos"]
    if stage == "quantize-dynamic":
        return ["quantize", str(checkpoint), "--mode", "dynamic", *data, "--labels", "neg,pos",
                "--out", str(work / "dynamic")]
    if stage == "quantize-auto":
        return ["quantize", str(checkpoint), "--mode", "auto", "--calib", str(SAMPLE / "calib.txt"), *data,
                "--labels", "neg,pos", "--out", str(work / "auto")]
    # quantize writes each candidate under variants/ and the chosen one again as model.tflite: bench each once.
    found = sorted((work / "dynamic").rglob("*.tflite"))
    models = [str(p) for p in found if p.parent.name == "variants"] or [str(p) for p in found]
    if not models:
        return None
    return ["bench", *models, "--threads", "2", "--seq-len", "real", "--eval", str(SAMPLE / "test.tsv"),
            "--out", str(work / "bench")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma list of {', '.join(SHAPES)}")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma list of {', '.join(STAGES)}")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one stage may run (default 3600)")
    parser.add_argument("--work", help="folder for checkpoints and outputs (default: a temporary one, removed)")
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    stages = [s for s in args.stages.split(",") if s]
    unknown = sorted(set(shapes) - set(SHAPES)) + sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown shape or stage: {', '.join(unknown)}")
    root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="cost_growth_"))
    result: dict[str, Any] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "shapes": {}}
    try:
        for shape in shapes:
            work = root / shape
            work.mkdir(parents=True, exist_ok=True)
            if shape == "sample":
                checkpoint, params = SAMPLE, sample_parameters()
            else:
                checkpoint, params = write_shape(shape, work / "checkpoint")
            entry: dict[str, Any] = {"parameters": params, "stages": {}}
            result["shapes"][shape] = entry
            for stage in stages:
                line = stage_argv(stage, checkpoint, work)
                entry["stages"][stage] = run_stage(line, args.timeout) if line else {"skipped": "no quantized files"}
                print(f"{shape} {stage}: {json.dumps(entry['stages'][stage])}", file=sys.stderr, flush=True)
    finally:
        if not args.work:
            shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
