"""``BenchOptions``: what ``run_benchmark`` measures, as one object instead of a row of keywords.

The sweep grew to eighteen keyword arguments; callers (CLI, demo, tests, benchmarks/) built the
same row by hand and a new setting meant touching all of them. The options say *what* to measure
and judge by; where the report goes and how progress is shown stay plain arguments of
``run_benchmark`` (they are plumbing of one call, not part of the measurement). Validation lives
here so that a bad setting fails before any model is opened.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from albert_edge.inputs import option_ranges as ranges
from albert_edge.errors import DataError

DEFAULT_SEQ_LENS: tuple[int, ...] = (16, 32, 64, 128)


@dataclass(frozen=True)
class BenchOptions:
    """The sweep and its judge.

    threads: thread counts (None: 1, 2, 4, ... up to the host's physical cores).
    seq_lens: ints and/or ``"real"`` (batch widths drawn from ``eval_path``'s tokenized lengths).
    batch, runs, warmup, rounds: texts per call; timed calls per configuration over the first
        ``rounds`` paired rounds (each round times a burst of ceil(runs / rounds) calls of every
        configuration); untimed calls per worker process first; the rounds always run.
    target_precision, max_seconds: with ``max_seconds`` set, rounds continue after ``rounds``
        until every paired ratio's bootstrap interval is within ±``target_precision`` (0.03:
        ±3 %), or the verdict is settled (the ratios the recommendation reads are decided or
        within that), or ``max_seconds`` (over the whole sweep) are spent; without it exactly ``rounds``
        rounds run, and intervals wider than the target are reported as unstable.
    eval_path: labelled TSV for accuracy drift and real lengths; ``drift=False`` uses it for
        real lengths only. reference: a checkpoint whose numpy forward pass is a second judge.
    backends: interpreter names (None: litert for .tflite, onnxruntime for .onnx).
    pin: pin an N-thread worker to the first N CPUs. max_drop: accuracy budget (points) of the
        recommendation. baseline: the variant the others are compared with (None: fp32). seed:
        random inputs and real-length draws.
    """

    threads: Sequence[int] | None = None
    seq_lens: Sequence[int | str] = DEFAULT_SEQ_LENS
    batch: int = 1
    runs: int = 200
    warmup: int = 20
    rounds: int = 20
    eval_path: str | os.PathLike[str] | None = None
    reference: str | os.PathLike[str] | None = None
    backends: Sequence[str] | None = None
    pin: bool = False
    max_drop: float = 0.5
    baseline: str | None = None
    seed: int = 0
    drift: bool = True
    target_precision: float = 0.03
    max_seconds: float | None = None

    def __post_init__(self) -> None:
        # Tuples, so that options compare equal however they were built and cannot change mid-run.
        object.__setattr__(self, "seq_lens", tuple(self.seq_lens))
        if self.threads is not None:
            object.__setattr__(self, "threads", tuple(self.threads))
        if self.backends is not None:
            object.__setattr__(self, "backends", tuple(self.backends))
        if (min(self.threads or (1,)) < 1 or self.batch < 1 or self.runs < 1 or self.warmup < 0
                or self.rounds < 1):
            raise DataError("bench: threads, batch, runs and rounds must be >= 1 and warmup >= 0")
        if not 0 < self.target_precision < 1 or (self.max_seconds is not None and self.max_seconds <= 0):
            raise DataError("bench: --target-precision must be in (0, 1) and --max-seconds > 0")
        for s in self.seq_lens:
            if s != "real" and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
                raise DataError(f"--seq-len {s!r}: expected a positive int or 'real'")
        for flag, value, allowed in (
                ("--batch", self.batch, ranges.BATCH_SIZE), ("--runs", self.runs, ranges.COUNT),
                ("--warmup", self.warmup, ranges.COUNT_OR_ZERO), ("--rounds", self.rounds, ranges.COUNT),
                ("--max-drop", self.max_drop, ranges.ACCURACY_POINTS), ("--seed", self.seed, ranges.SEED),
                ("--target-precision", self.target_precision, ranges.OPEN_SHARE),
                ("--max-seconds", self.max_seconds, ranges.SECONDS),
                *(("--threads", n, ranges.THREADS) for n in self.threads or ()),
                *(("--seq-len", n, ranges.SEQ_LEN) for n in self.seq_lens if n != "real")):
            ranges.check_optional(flag, value, allowed, DataError)  # the ranges the CLI checks too
        if "real" in self.seq_lens and self.eval_path is None:
            raise DataError("--seq-len real needs --eval data.tsv to draw token lengths from")
