"""Latency and drift of model variants, measured the way an app runs them (runtime backends).

The machine is shared and noisy, so variants are timed interleaved (one run of each, in turn,
many rounds) and compared as ratios of medians taken in the same session.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from albert_edge.tasks.sequence_classification import ClassificationDrift, classification_drift


#: Classification drift lives with its task; the names are kept for existing callers.
Drift = ClassificationDrift
drift = classification_drift


def latency_inputs(seq_len: int = 128, vocab_size: int = 21128, seed: int = 0) -> dict[str, np.ndarray]:
    """A batch-1, full-length input: int32 ``[1, seq_len]`` each, no padding."""
    rng = np.random.default_rng(seed)
    # Skip the first ids (special tokens in BERT-style vocabs); the rest behave alike for timing.
    ids = rng.integers(min(1000, vocab_size // 2), vocab_size, size=(1, seq_len)).astype(np.int32)
    return {"input_ids": ids, "attention_mask": np.ones((1, seq_len), np.int32),
            "token_type_ids": np.zeros((1, seq_len), np.int32)}


@dataclass(frozen=True)
class StopRule:
    """When an interleaved timing run has said enough: each ``needed`` model's ratio to ``baseline``
    (the median of the per-round paired ratios) is known within ``band`` (the 95 % order-statistic
    interval of that median spans at most ``band`` of it), after at least ``min_rounds`` rounds.

    ``needed``: the models whose speed can change the verdict (the variants within budget: ``choose``
    compares them to each other within ``SPEED_TIE_BAND``); the others are timed for ``min_rounds``
    rounds only, for the report. Without any needed model the run stops after ``min_rounds``.
    """

    baseline: str
    needed: frozenset[str]
    band: float
    min_rounds: int = 5


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median of ``values`` (order statistics, normal approximation)."""
    from albert_edge.tasks.metrics import normal_quantile

    ordered = sorted(values)
    n = len(ordered)
    spread = normal_quantile(0.5 + confidence / 2) * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - spread)), min(n - 1, math.ceil(n / 2 + spread) - 1)
    return ordered[lo], ordered[max(lo, hi)]


def _settled(times: Mapping[str, list[float]], rule: StopRule) -> bool:
    """Whether every needed model's paired ratio to the baseline is known within ``rule.band``."""
    base = times[rule.baseline]
    for name in rule.needed:
        ratios = [t / b for t, b in zip(times[name], base)]
        lo, hi = median_interval(ratios)
        if hi - lo > rule.band * float(np.median(ratios)):
            return False
    return True


def interleaved_latency(models: Mapping[str, bytes], inputs: Mapping[str, np.ndarray], num_threads: int = 2,
                        rounds: int = 30, warmup: int = 3, burst: int = 3,
                        stop: StopRule | None = None) -> dict[str, dict[str, float]]:
    """name -> {median_ms, p10_ms, p90_ms, min_ms, rounds}; every round runs each model in turn.

    Each turn is a burst of ``burst`` runs of which the fastest counts: the first run after
    switching models pays for the previous model's thread pool still spinning and its weights
    leaving the cache, a cost an app running one model does not have. The median is over rounds.
    ``rounds`` is the most rounds; with ``stop`` the run ends as soon as the rule is met, and the
    models it does not need leave the rotation after its ``min_rounds``.
    """
    backends = {name: _timing_backend(data, name, num_threads) for name, data in models.items()}
    for backend in backends.values():
        for _ in range(warmup):
            backend.run(inputs)
    times: dict[str, list[float]] = {name: [] for name in backends}
    for done in range(1, rounds + 1):
        for name, backend in backends.items():
            if stop is not None and done > stop.min_rounds and name != stop.baseline and name not in stop.needed:
                continue
            best = float("inf")
            for _ in range(max(1, burst)):
                start = time.perf_counter()
                backend.run(inputs)
                best = min(best, (time.perf_counter() - start) * 1e3)
            times[name].append(best)
        if stop is not None and done >= stop.min_rounds and _settled(times, stop):
            break
    return {name: {"median_ms": float(np.median(t)), "p10_ms": float(np.percentile(t, 10)),
                   "p90_ms": float(np.percentile(t, 90)), "min_ms": float(np.min(t)), "rounds_ms": t,
                   "rounds": len(t)}
            for name, t in times.items()}


#: Resamples and seed of ``ratio_interval``: the bench's paired-ratio method (bench_latency.stats), so a
#: quantize verdict and a bench verdict on the same rounds would give the same interval.
_RESAMPLES, _SEED, _LEVEL = 2000, 20240601, 0.95


def ratio_interval(rounds_ms: Sequence[float], baseline_rounds_ms: Sequence[float]) -> dict[str, Any]:
    """Time over the baseline's, round by round (both timed in the same interleaved rounds): the median
    per-round ratio and the percentile-bootstrap 95 % interval of that median (None under 5 rounds).

    A model that left the rotation early (``StopRule``: not needed by the verdict) was timed in the
    first rounds only, so it is paired with the baseline's first rounds, never with rounds it sat out."""
    paired = min(len(rounds_ms), len(baseline_rounds_ms))
    ratios = (np.asarray(rounds_ms[:paired], dtype=np.float64)
              / np.asarray(baseline_rounds_ms[:paired], dtype=np.float64))
    low = high = None
    if ratios.size >= 5:
        picks = np.random.default_rng(_SEED).integers(0, ratios.size, size=(_RESAMPLES, ratios.size))
        tail = (1 - _LEVEL) / 2 * 100
        low, high = (float(x) for x in np.percentile(np.median(ratios[picks], axis=1), [tail, 100 - tail]))
    return {"ratio": float(np.median(ratios)), "low": low, "high": high, "rounds": int(ratios.size)}


class _QuietOnnx:
    """An ORT session whose idle threads sleep instead of spinning.

    ORT's intra-op threads spin after each run by default; in an interleaved run they steal the
    two cores from whichever TFLite model runs next, and the ratios would measure that instead.
    """

    def __init__(self, data: bytes, num_threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
        self._names = [i.name for i in self._session.get_inputs()]

    def run(self, inputs: Mapping[str, np.ndarray]) -> list:
        return self._session.run(None, {n: inputs[n] for n in self._names})


def _timing_backend(data: bytes, name: str, num_threads: int):
    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.pack import model_kind

    if model_kind(data) == "onnx":
        return _QuietOnnx(data, num_threads)
    return open_backend(data, source=name, num_threads=num_threads)


def variant_logits(model: bytes, samples: Sequence[Mapping[str, np.ndarray]], num_threads: int = 2) -> np.ndarray:
    """Logits ``[N, num_labels]`` of ``model`` on batch-1 ``samples`` (each at its real length)."""
    from albert_edge.tasks import SequenceClassification

    return variant_values(model, samples, SequenceClassification(), num_threads)


def variant_values(model: bytes, samples: Sequence[Mapping[str, np.ndarray]], task: Any,
                   num_threads: int = 2) -> np.ndarray:
    """``task.judged_values`` ``[N, D]`` of ``model`` on batch-1 ``samples`` (each at its real length):
    logits for a classifier, sentence embeddings for feature extraction."""
    from albert_edge.runtime.backends import open_backend

    backend = open_backend(model, source="<variant>", num_threads=num_threads)
    return np.concatenate([task.judged_values(backend.run(s), s["attention_mask"]) for s in samples])
