"""Soft targets from a teacher model, for distillation in ``albert-edge finetune --teacher``.

A teacher's probabilities on the *training* rows only carry information if the teacher
did not see those rows (a model scored on its own training data is nearly one-hot), so
the producer is expected to write out-of-fold predictions. The file is tied to one
training set: its first line records the ``data_hash`` of the TSV it was made for, the
second names the labels in column order, then one row of probabilities per example, in
the TSV's order. A file made for other data, other labels or another row count is refused
by name instead of silently pairing texts with someone else's targets.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from albert_edge.outputs.atomic import write_text_atomic
from albert_edge.inputs.data import MAX_DATA_BYTES
from albert_edge.errors import DataError
from albert_edge.inputs.userfile import read_user_bytes

_HEADER = re.compile(r"^# albert-edge soft targets; train data_hash ([0-9a-f]{32})$")
#: How far a row may sum from 1 (the producer rounds to 6 decimals).
SUM_TOLERANCE = 1e-3


def write_soft_targets(path: str | Path, probabilities: np.ndarray, labels: Sequence[str], train_hash: str) -> Path:
    """Write ``[N, C]`` probabilities for the training set whose ``data_hash`` is ``train_hash``."""
    probs = np.asarray(probabilities, dtype=np.float64)
    if probs.ndim != 2 or probs.shape[1] != len(labels):
        raise DataError(f"{path}: soft targets must be [examples, {len(labels)}], got {list(probs.shape)}")
    lines = [f"# albert-edge soft targets; train data_hash {train_hash}", "\t".join(labels)]
    lines += ["\t".join(f"{p:.6f}" for p in row) for row in probs]
    return write_text_atomic(path, "\n".join(lines) + "\n")


def read_soft_targets(path: str | Path, labels: Sequence[str], train_hash: str, examples: int) -> np.ndarray:
    """``[examples, len(labels)]`` float32 probabilities, checked against the training set they belong to."""
    path = Path(path)
    try:
        # utf-8-sig: an editor's BOM must not make the header line unrecognisable (the TSV reader drops it too).
        lines = read_user_bytes(path, MAX_DATA_BYTES, DataError, "teacher file").decode("utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: cannot read the teacher file ({exc})") from None
    match = _HEADER.match(lines[0]) if lines else None
    if match is None:
        raise DataError(f"{path}: not an albert-edge soft-target file (first line must be "
                        "'# albert-edge soft targets; train data_hash <md5>')")
    if match.group(1) != train_hash:
        raise DataError(f"{path}: made for training data with hash {match.group(1)}, but --train has {train_hash}")
    if len(lines) < 2 or tuple(lines[1].split("\t")) != tuple(labels):
        got = lines[1].split("\t") if len(lines) > 1 else []
        raise DataError(f"{path}: label columns {got} differ from the run's labels {list(labels)}")
    # (file line number, cells) of every non-blank row, so errors point at the real line.
    rows = [(number, line.split("\t")) for number, line in enumerate(lines[2:], start=3) if line]
    if len(rows) != examples:
        raise DataError(f"{path}: {len(rows)} rows of soft targets for {examples} training examples")
    short = next(((number, cells) for number, cells in rows if len(cells) != len(labels)), None)
    if short is not None:
        raise DataError(f"{path}: line {short[0]} holds {len(short[1])} columns, expected {len(labels)} probabilities")
    try:
        probs = np.array([[float(x) for x in cells] for _, cells in rows], dtype=np.float64)
    except ValueError:
        raise DataError(f"{path}: soft targets must be numbers") from None
    # NaN fails every comparison, so "not (ok)" is tested, never "bad": a nan/inf row is refused too.
    ok = np.isfinite(probs).all(axis=1) & (probs >= 0).all(axis=1) & (np.abs(probs.sum(axis=1) - 1.0) <= SUM_TOLERANCE)
    bad = np.flatnonzero(~ok)
    if bad.size:
        raise DataError(f"{path}: line {rows[bad[0]][0]} is not a probability distribution "
                        "(not a finite number, negative, or not summing to 1)")
    return (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
