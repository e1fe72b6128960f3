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


def measure_judged_drift(task: Any, variants: Sequence[tuple[str, Path]], baseline: str,
                         eval_path: str | os.PathLike[str], threads: int | None = None) -> list[dict]:
    """Drift the way quantize judges it, for any task: ``Task.drift`` of each file's ``judged_values``.

    Samples: the task's ``labelled_samples`` of a ``.jsonl`` eval file (gold values then reach the
    drift), else one batch-1 sample per text of a .txt/.tsv file (``read_calibration_texts``),
    encoded with the baseline pack's tokenizer at its real length. Entries hold the drift's
    ``to_dict`` plus ``variant``, ``task`` and the keys report.md's main table reads (``accuracy``,
    ``agreement``: None unless the drift has them).
    """
    from albert_edge.quantize.calibration import encode_calibration, read_calibration_texts
    from albert_edge.runtime.pack import read_model_bytes, read_pack_bytes
    from albert_edge.runtime.task_model import TaskModel
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    base_path = dict(variants)[baseline]
    pack = read_pack_bytes(read_model_bytes(base_path), str(base_path))
    task = task.bind_labels(pack.labels)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, str(base_path))
    gold = None
    own = (task.labelled_samples(eval_path, tokenizer, pack.max_seq_len)
           if str(eval_path).lower().endswith(".jsonl") else None)
    if own is not None:
        samples, gold = own
    else:
        texts = read_calibration_texts(eval_path, min_texts=2)
        samples = list(encode_calibration(texts, Preprocessor(tokenizer, pack.max_seq_len), str(eval_path),
                                          max_texts=len(texts)).samples)
    values = {}
    for name, path in variants:
        model = TaskModel.from_file(path, num_threads=threads)  # the pack-vs-graph check before any run
        values[name] = np.concatenate([task.judged_values(model.run(s), s["attention_mask"]) for s in samples])
    entries = []
    for name, _ in variants:
        drift = task.drift(values[name], values[baseline], gold).to_dict()
        entries.append({"variant": name, "task": task.name, "accuracy": None, "agreement": None,
                        "labels": list(pack.labels) if pack.labels is not None else None, "reference": None,
                        **{k: (float(v) if isinstance(v, np.floating) else v) for k, v in drift.items()}})
    return entries
