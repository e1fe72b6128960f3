"""What each variant costs in accuracy, in its task's own metric, against the baseline.

The baseline's pack names the task and the task object measures (``Task.bench_drift``): the
runtime tasks judge what their runtime returns (a classifier's accuracy and agreement, entities,
answers, embeddings); a task with no runtime of its own is judged here as quantize judges it
(``measure_judged_drift``). Every variant must be a model of the same task. Not timed: this runs
in the parent process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.errors import ModelFileError


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
    entries = task.bench_drift(variants, baseline, eval_path, reference, threads)
    for entry in entries:
        entry.setdefault("task", task.name)
    return entries


def eval_samples(task: Any, eval_path: str | os.PathLike[str], tokenizer: Any, max_seq_len: int,
                 min_texts: int = 2) -> tuple[list[dict[str, np.ndarray]], np.ndarray | None]:
    """(batch-1 samples, gold or None) of an eval file, as the model runs it: the task's own labelled
    format when ``Task.reads_labelled`` says so (a classifier's TSV rows and pairs, a NER ``.jsonl``'s
    texts, every question/context window of a QA ``.jsonl``), else one text per line at its real length.
    Bench drift judges on these samples and ``--seq-len real`` times their lengths."""
    from albert_edge.errors import DataError
    from albert_edge.quantize.calibration import encode_calibration, read_calibration_texts
    from albert_edge.tokenizer import Preprocessor

    if task.reads_labelled(eval_path):
        own = task.labelled_samples(eval_path, tokenizer, max_seq_len)
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
        entries.append({"variant": name, "task": task.name, "accuracy": None, "agreement": None,
                        "labels": list(base.labels) if base.labels is not None else None, "reference": None,
                        **{k: (float(v) if isinstance(v, np.floating) else v) for k, v in drift.items()}})
    return entries
