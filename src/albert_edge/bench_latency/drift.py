"""What each variant costs in accuracy, in its task's own metric, against the baseline.

The baseline's pack names the task and ``bench_drift_of`` says how it is measured: the tasks with
a runtime of their own are judged on what that runtime returns (a classifier's accuracy and
agreement, entities, answers, embeddings: ``task_drift.RUNTIME_DRIFT``); any other task is judged
here as quantize judges it (``measure_judged_drift``), in the table the task declares. Every
variant must be a model of the same task. Not timed: this runs in the parent process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.bench_latency.task_drift import RUNTIME_DRIFT, BenchDrift, drift_markdown
from albert_edge.errors import ModelFileError
from albert_edge.tasks import TASK_NAMES, Task, task_class


def measure_drift(variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
                  reference: str | os.PathLike[str] | None = None, threads: int | None = None) -> list[dict]:
    """One report.json ``accuracy`` entry per variant, in ``variants`` order.

    ``reference`` is a checkpoint (anything ``load_checkpoint`` reads); tasks that compare with its
    numpy float64 forward pass (classification, embeddings) report that too.
    """
    from albert_edge.runtime.pack import read_pack

    tasks = {name: read_pack(path).task_object(str(path)) for name, path in variants}
    task = tasks[baseline]
    for name, path in variants:
        if tasks[name].name != task.name:
            raise ModelFileError(f"{path}: pack task is {tasks[name].name}, the baseline's is {task.name}")
    entries = bench_drift_of(task.name).measure(task, variants, baseline, eval_path, reference, threads)
    for entry in entries:
        entry.setdefault("task", task.name)
    return entries


def bench_drift_of(name: str) -> BenchDrift:
    """How the bench measures and shows the drift of task ``name``: its runtime's measure and table,
    else quantize's judgement (``measure_judged_drift``) in the table the task class declares. A
    name this version does not know (a report from a newer one) gets every number of its entries."""
    if name in RUNTIME_DRIFT:
        return RUNTIME_DRIFT[name]
    cls = task_class(name) if name in TASK_NAMES else Task
    return BenchDrift(_judged, cls.drift_title, cls.drift_columns)


def drift_section(name: str, entries: Sequence[dict]) -> list[str]:
    """The bench report's drift section of task ``name`` for ``entries`` (its ``measure_drift`` output)."""
    spec = bench_drift_of(name)
    return drift_markdown(spec.title, spec.columns, entries)


def _judged(task: Any, variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
            reference: Any = None, threads: int | None = None) -> list[dict]:
    """``measure_judged_drift`` as a bench measure: no numpy-reference comparison (``reference`` is ignored)."""
    return measure_judged_drift(task, variants, baseline, eval_path, threads)


def eval_samples(task: Any, eval_path: str | os.PathLike[str], tokenizer: Any, max_seq_len: int,
                 min_texts: int = 2) -> tuple[list[dict[str, np.ndarray]], np.ndarray | None]:
    """(batch-1 samples, gold or None) of an eval file, as the model runs it: the task's own labelled
    format when the task's ``eval_format`` says so (a classifier's TSV rows and pairs, a NER ``.jsonl``'s
    texts, every question/context window of a QA ``.jsonl``), else one text per line at its real length.
    Bench drift judges on these samples and ``--seq-len real`` times their lengths."""
    from albert_edge.errors import DataError
    from albert_edge.quantize.calibration import encode_calibration, read_calibration_texts
    from albert_edge.tokenizer import Preprocessor

    if task.eval_format.reads_labelled(eval_path):
        own = task.eval_format.labelled_samples(eval_path, tokenizer, max_seq_len, task.labels)
        if own is None:
            raise DataError(f"{eval_path}: task {task.name} has no labelled eval format; give one text per line")
        return own
    texts = read_calibration_texts(eval_path, min_texts=min_texts)
    return list(encode_calibration(texts, Preprocessor(tokenizer, max_seq_len), str(eval_path),
                                   max_texts=len(texts)).samples), None


def measure_judged_drift(task: Any, variants: Sequence[tuple[str, Path]], baseline: str,
                         eval_path: str | os.PathLike[str], threads: int | None = None) -> list[dict]:
    """Drift the way quantize judges it, for any task: ``Task.drift`` of each file's ``judged_values``
    on ``eval_samples`` (gold values reach the drift when the file is labelled), encoded with the
    baseline pack's tokenizer. Entries hold the drift's ``to_dict`` plus ``variant``, ``task`` and the
    keys report.md's main table reads (``accuracy``, ``agreement``: None unless the drift has them).
    """
    from albert_edge.runtime.task_model import TaskModel

    # Each file opened once, with the pack-vs-graph check before any run.
    models = {name: TaskModel.from_file(path, num_threads=threads) for name, path in variants}
    base = models[baseline]
    task = task.bind_labels(base.labels)
    samples, gold = eval_samples(task, eval_path, base.tokenizer, base.pack.max_seq_len)
    values = {name: np.concatenate([task.judged_values(model.run(s), s["attention_mask"]) for s in samples])
              for name, model in models.items()}
    entries = []
    for name, _ in variants:
        drift = task.drift(values[name], values[baseline], gold).to_dict()
        # The keys every report.json accuracy entry carries (schema.ACCURACY_KEYS), None where the
        # task's drift has no such number (a regressor has no logits to diff): their absence
        # failed the report check for every task without a runtime of its own.
        entries.append({"variant": name, "task": task.name, "examples": len(samples), "accuracy": None,
                        "agreement": None, "max_abs_logit_diff": None, "mean_abs_logit_diff": None,
                        "labels": list(base.labels) if base.labels is not None else None, "reference": None,
                        **{k: (float(v) if isinstance(v, np.floating) else v) for k, v in drift.items()}})
    return entries
