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


# ---- Paired ratios over rounds ---------------------------------------------------------------
#
# On a shared machine a neighbour's burst moves every latency measured at that moment, so two
# configurations timed minutes apart differ by the neighbours as much as by the models. Timed in
# the same round (seconds apart, in alternating order) they share the neighbours; the ratio of
# their round medians cancels most of it. One ratio per round, the median over rounds, and a
# percentile bootstrap over rounds for the interval (criterion's approach, resampling rounds
# rather than calls because calls within a round are not independent).

MIN_ROUNDS = 5            # fewer rounds than this give no interval: a bootstrap of 3 values is not one
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_LEVEL = 0.95
BOOTSTRAP_SEED = 20240601
# An int8 kernel does at most 4x the multiply-accumulates per instruction of fp32 (VNNI/dot-product
# over 4 bytes), so int8 cannot be more than ~4x faster than fp32 on the same backend.
MAX_INT8_SPEEDUP = 4.0


def coefficient_of_variation(values: Sequence[float] | np.ndarray) -> float | None:
    """Sample standard deviation over the mean (pyperf warns above 0.10); None under two values."""
    array = np.asarray(values, dtype=np.float64)
    if array.size < 2 or array.mean() == 0:
        return None
    return float(array.std(ddof=1) / abs(array.mean()))


def bootstrap_interval(values: Sequence[float] | np.ndarray, *, resamples: int = BOOTSTRAP_RESAMPLES,
                       level: float = BOOTSTRAP_LEVEL, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the median of ``values`` (resampled with replacement).

    A fixed seed makes the same rounds give the same interval in every report.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        raise DataError("bootstrap: expected at least one value")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, array.size, size=(resamples, array.size))
    medians = np.median(array[picks], axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(medians, [tail, 100.0 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedRatio:
    """Time of one configuration over another's, round by round, as one estimate with its interval.

    ``ratio`` is the median of the per-round ratios (below 1: the numerator is faster); ``low`` and
    ``high`` the bootstrap interval (None under MIN_ROUNDS rounds); ``cv`` the per-round ratios'
    coefficient of variation; ``round_ratios`` the ratios themselves, so a reader can see rounds
    that disagree.
    """

    ratio: float
    low: float | None
    high: float | None
    rounds: int
    cv: float | None
    round_ratios: tuple[float, ...]

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def relative_half_width(self) -> float | None:
        """Half the interval's width over the ratio: 0.03 means ±3 %."""
        if not self.has_interval or self.ratio == 0:
            return None
        return (self.high - self.low) / 2.0 / self.ratio  # type: ignore[operator]

    def below(self, value: float) -> bool:
        """The whole interval lies below ``value`` (decided: the numerator is faster)."""
        return self.has_interval and self.high < value  # type: ignore[operator]

    def above(self, value: float) -> bool:
        return self.has_interval and self.low > value  # type: ignore[operator]

    def text(self) -> str:
        """``0.42x [0.41–0.43], 40 rounds`` (or ``0.42x, 2 rounds (no interval)``)."""
        plural = "s" if self.rounds != 1 else ""
        if not self.has_interval:
            return f"{self.ratio:.3g}x, {self.rounds} round{plural} (no interval under {MIN_ROUNDS})"
        return f"{self.ratio:.3g}x [{self.low:.3g}–{self.high:.3g}], {self.rounds} round{plural}"

    def to_dict(self) -> dict:
        return {"ratio": self.ratio, "low": self.low, "high": self.high, "rounds": self.rounds, "cv": self.cv,
                "relative_half_width": self.relative_half_width, "round_ratios": list(self.round_ratios)}

    @classmethod
    def from_dict(cls, data: dict) -> PairedRatio:
        return cls(data["ratio"], data["low"], data["high"], data["rounds"], data["cv"],
                   tuple(data.get("round_ratios") or ()))


def paired_ratio(numerator_rounds: Sequence[float], denominator_rounds: Sequence[float], *,
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedRatio:
    """Per-round ``numerator / denominator`` (round medians of the same rounds) and its interval."""
    top = np.asarray(numerator_rounds, dtype=np.float64)
    bottom = np.asarray(denominator_rounds, dtype=np.float64)
    if top.size != bottom.size or top.size == 0:
        raise DataError(f"paired ratio: expected the same rounds on both sides, got {top.size} and {bottom.size}")
    ratios = top / bottom
    low = high = None
    if ratios.size >= MIN_ROUNDS:
        low, high = bootstrap_interval(ratios, resamples=resamples, seed=seed)
    return PairedRatio(float(np.median(ratios)), low, high, int(ratios.size), coefficient_of_variation(ratios),
                       tuple(float(r) for r in ratios))


def instability(estimate: PairedRatio, target: float) -> str | None:
    """Why ``estimate`` cannot be trusted as a number, or None when it can.

    Too few rounds for an interval is only a problem when the rounds already disagree by more
    than the target (a run of 1.03 and 0.26 pooled into 0.56 said nothing); with an interval,
    the estimate is unstable when the interval is wider than the target precision.
    """
    if not estimate.has_interval:
        if estimate.rounds >= 2:
            spread = max(estimate.round_ratios) / min(estimate.round_ratios) - 1.0
            if spread > 2 * target:
                return (f"its {estimate.rounds} rounds disagree ({min(estimate.round_ratios):.3g}x to "
                        f"{max(estimate.round_ratios):.3g}x) and {estimate.rounds} rounds give no interval")
        return None
    width = estimate.relative_half_width or 0.0
    if width > target:
        return f"interval ±{width * 100:.1f} % is wider than the ±{target * 100:g} % target"
    return None


def impossible_int8_speedup(estimate: PairedRatio) -> bool:
    """An int8/fp32 time ratio below 1/MAX_INT8_SPEEDUP: a speed-up the arithmetic cannot give."""
    return estimate.ratio < 1.0 / MAX_INT8_SPEEDUP


def unpaired_ratio(numerator_rounds: Sequence[float], denominator_rounds: Sequence[float], *,
                   resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedRatio:
    """Median of one side's round medians over the other's, for two sides NOT timed in the same rounds.

    The bench times each sequence length in rounds of its own (real lengths, then 128, ...), so
    their round medians do not pair up; each side is resampled on its own for the interval, which
    is therefore wider than a paired one and does not cancel a load that changed between the two.
    ``round_ratios`` is empty (there are none) and ``cv`` None; ``rounds`` is the smaller side's.
    """
    top = np.asarray(numerator_rounds, dtype=np.float64)
    bottom = np.asarray(denominator_rounds, dtype=np.float64)
    if top.size == 0 or bottom.size == 0:
        raise DataError("unpaired ratio: expected at least one round on each side")
    ratio = float(np.median(top) / np.median(bottom))
    low = high = None
    if min(top.size, bottom.size) >= MIN_ROUNDS:
        rng = np.random.default_rng(seed)
        tops = np.median(top[rng.integers(0, top.size, size=(resamples, top.size))], axis=1)
        bottoms = np.median(bottom[rng.integers(0, bottom.size, size=(resamples, bottom.size))], axis=1)
        tail = (1.0 - BOOTSTRAP_LEVEL) / 2.0 * 100.0
        low, high = (float(x) for x in np.percentile(tops / bottoms, [tail, 100.0 - tail]))
    return PairedRatio(ratio, low, high, int(min(top.size, bottom.size)), None, ())
