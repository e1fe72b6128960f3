"""Latency summaries: the same six numbers for host runs and phone logs.

Percentiles use numpy's linear interpolation on the raw samples, so the p99 of 200 runs is an
honest interpolation between the two slowest-but-one samples rather than the single maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from albert_edge.errors import DataError


@dataclass(frozen=True)
class LatencySummary:
    """Milliseconds over ``count`` timed runs. ``p90``/``p99`` are None when the source gives none."""

    count: int
    min: float
    median: float
    mean: float
    p90: float | None
    p99: float | None
    std: float
    max: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> LatencySummary:
        return cls(**{k: data[k] for k in ("count", "min", "median", "mean", "p90", "p99", "std", "max")})


def summarize(samples_ms: Sequence[float]) -> LatencySummary:
    """Summarize raw per-run latencies ``[runs]`` in milliseconds."""
    values = np.asarray(samples_ms, dtype=np.float64)
    if values.size == 0:
        raise DataError("latency samples: expected at least one timed run, got none")
    return LatencySummary(
        count=int(values.size),
        min=float(values.min()),
        median=float(np.median(values)),
        mean=float(values.mean()),
        p90=float(np.percentile(values, 90)),
        p99=float(np.percentile(values, 99)),
        std=float(values.std()),
        max=float(values.max()),
    )
