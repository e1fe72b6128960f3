"""The numbers every task's drift is judged by: the quantize budget and the agreement statistics.

``Budget`` is what ``albert-edge quantize`` accepts (``--max-drop``, ``--min-agreement``, ...);
each ``TaskDrift`` reads the fields that apply to its metrics (``budget_failures``), so the type
lives with the tasks, below quantize, which builds it from the command line. The statistics
(Wilson lower bound of an agreement, the normal quantile it needs, the fewest rows that can show
an agreement) and the failure text of the F1-and-agreement tasks (QA spans, NER tokens, regression
scores) are shared by several tasks' drifts and belong to none of them, as are the shortfall
(distance to passing) of those tasks and the near-tie accounting of changed predictions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Budget:
    """``max_drop``: accuracy points a variant may lose vs fp32 (or, unlabelled, its disagreement
    in points); ``min_agreement``: share of predictions equal to fp32's, required of the one-sided
    ``confidence`` lower bound of the measured agreement (so that 800/800 on the choice set is not
    taken for 100 % on new data); ``max_size_bytes``: optional. Embedding tasks are judged on
    ``min_cosine`` (the worst text's cosine to fp32) and ``min_mean_cosine`` instead.
    ``tie_margin``: a classifier's flips of rows whose fp32 top-1 minus top-2 logit is below it are
    near ties, excused by the agreement gate's second rule (``ClassificationDrift.agreement_verdict``);
    0 turns the rule off. 0.1 logit is a top-1 probability under 52.5 % in a two-class model."""

    max_drop: float = 0.5
    min_agreement: float = 0.99
    max_size_bytes: int | None = None
    confidence: float = 0.95
    min_cosine: float = 0.995
    min_mean_cosine: float = 0.999
    tie_margin: float = 0.1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The strictest budget: every point kept, every prediction equal to fp32's, judged on the raw
#: figures (confidence 0.5 makes the Wilson bound the measured share). A drift's ``shortfall``
#: against it is its distance to fp32 itself: the accuracy ``choose`` breaks speed ties with.
PERFECT = Budget(max_drop=0.0, min_agreement=1.0, confidence=0.5, min_cosine=1.0, min_mean_cosine=1.0,
                 tie_margin=0.0)

#: fp32 margin (top-1 minus top-2 logit; for QA best minus second-best span logit) under which a
#: changed prediction counts as a near tie in the reports; the default of ``Budget.tie_margin``.
NEAR_TIE_MARGIN = Budget.tie_margin


def near_tie_accounting(flip_margins: list[float], margins: list[float],
                        threshold: float = NEAR_TIE_MARGIN) -> dict[str, Any]:
    """How many changed predictions were near ties, and the agreement on the confident rest.

    ``flip_margins``: fp32's margin of every prediction the variant changed; ``margins``: fp32's
    margin of every judged prediction. A flip of a prediction fp32 itself barely made is rounding
    noise; ``confident_agreement`` (predictions with margin >= ``threshold``) says whether the
    variant also changes the answers fp32 is sure of, which a raw agreement mixes in with them.
    """
    confident = sum(1 for m in margins if m >= threshold)
    confident_flips = sum(1 for m in flip_margins if m >= threshold)
    return {"near_tie_margin": threshold, "changed": len(flip_margins),
            "near_tie_changes": len(flip_margins) - confident_flips, "confident": confident,
            "confident_agreement": (confident - confident_flips) / confident if confident else 1.0}


def top2_margins(logits: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 logit of each row of ``logits`` [N, C] (0 with one class): how sure the row is."""
    if logits.shape[-1] < 2 or not len(logits):
        return np.zeros(len(logits))
    top2 = np.sort(logits, axis=-1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def _wilson_bound(agreement: float, n: int, confidence: float, side: int) -> float:
    """One side (``-1`` lower, ``+1`` upper) of the Wilson score interval of ``agreement`` over ``n``."""
    z = normal_quantile(confidence)
    centre = agreement + z * z / (2 * n)
    spread = z * math.sqrt(agreement * (1 - agreement) / n + z * z / (4 * n * n))
    return (centre + side * spread) / (1 + z * z / n)


def agreement_lower_bound(agreement: float, n: int, confidence: float = 0.95) -> float:
    """One-sided Wilson score lower bound of a proportion measured as ``agreement`` over ``n`` examples."""
    if n <= 0:
        return 0.0
    if confidence <= 0.5:
        return agreement
    return _wilson_bound(agreement, n, confidence, -1)


def agreement_upper_bound(agreement: float, n: int, confidence: float = 0.95) -> float:
    """One-sided Wilson score upper bound of a proportion measured as ``agreement`` over ``n`` examples."""
    if n <= 0:
        return 1.0
    if confidence <= 0.5:
        return agreement
    return _wilson_bound(agreement, n, confidence, +1)


def plural(noun: str, n: int) -> str:
    """``noun`` for one, else its English plural ("entity" -> "entities", "row" -> "rows")."""
    if n == 1:
        return noun
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"


def too_few_rows(budget: Budget, agreement: float, n: int, unit: str = "row") -> str | None:
    """Why ``n`` judged units cannot decide the agreement gate, or None when they can.

    Fewer than ``min_judge_rows`` units cannot show ``min_agreement`` at ``confidence`` even with
    no change at all, so failing the gate there says nothing about the variant: it is not judged.
    Unless the few units already show the variant misses (the agreement's upper bound is below
    ``min_agreement``): then it is judged, and rejected.
    """
    need = min_judge_rows(budget.min_agreement, budget.confidence)
    if n >= need or agreement_upper_bound(agreement, n, budget.confidence) < budget.min_agreement - 1e-9:
        return None
    return (f"{n} {plural(unit, n)} cannot show {100 * budget.min_agreement:g}% agreement at {100 * budget.confidence:g}% "
            f"confidence (need {need}; measured {100 * agreement:.2f}%)")


def normal_quantile(p: float) -> float:
    """z with P(Z < z) = p for a standard normal Z."""
    # Bisection on the normal CDF: exact enough for a confidence level, no scipy needed.
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def min_judge_rows(min_agreement: float, confidence: float = 0.95) -> int:
    """Fewest rows on which a perfect agreement's lower bound reaches ``min_agreement`` (268 for 99% at 95%)."""
    if min_agreement <= 0 or confidence <= 0.5:
        return 1
    if min_agreement >= 1:
        return 10 ** 9
    n = max(1, math.floor(normal_quantile(confidence) ** 2 * min_agreement / (1 - min_agreement)))
    while agreement_lower_bound(1.0, n, confidence) < min_agreement - 1e-12:
        n += 1
    return n


def f1_and_agreement_failures(budget: Budget, f1_drop: float | None, f1_name: str, agreement: float, n: int,
                              unit: str) -> list[str]:
    """Budget failures of a task judged by an F1 drop and a per-``unit`` agreement (QA spans, NER tokens).

    ``f1_drop`` None (no gold labels) skips the drop check; the agreement is judged by its Wilson
    lower bound, as for sentence classification, so a small eval set cannot pass by luck.
    """
    reasons = []
    if f1_drop is not None and f1_drop > budget.max_drop + 1e-9:
        reasons.append(f"{f1_name} F1 drop {f1_drop:.2f} pt > {budget.max_drop:g}")
    bound = agreement_lower_bound(agreement, n, budget.confidence)
    if bound < budget.min_agreement - 1e-9:
        reasons.append(f"{unit} agreement {100 * agreement:.2f}% of {n} (lower bound "
                       f"{100 * bound:.2f}%) < {100 * budget.min_agreement:g}%")
    return reasons


def f1_and_agreement_unjudged(budget: Budget, f1_drop: float | None, agreement: float, n: int,
                              unit: str) -> str | None:
    """Why a drift judged by ``f1_and_agreement_failures`` is not judged: too few units for the agreement
    gate (``too_few_rows``) and no measured F1 drop beyond ``max_drop``; None when it is judged."""
    if f1_drop is not None and f1_drop > budget.max_drop + 1e-9:
        return None
    return too_few_rows(budget, agreement, n, unit)


def f1_and_agreement_shortfall(budget: Budget, f1_drop: float | None, agreement: float, n: int) -> float:
    """Distance to passing ``f1_and_agreement_failures``, in points: the drop beyond ``max_drop``
    plus the agreement points the Wilson lower bound misses; 0 exactly when both checks pass."""
    drop = f1_drop - budget.max_drop if f1_drop is not None and f1_drop > budget.max_drop + 1e-9 else 0.0
    bound = agreement_lower_bound(agreement, n, budget.confidence)
    missing = budget.min_agreement - bound
    return drop + (100.0 * missing if missing > 1e-9 else 0.0)


def f1_and_agreement_hints(budget: Budget, f1_drop: float | None, agreement: float, n: int) -> list[str]:
    """The budget flags that would accept a drift judged by ``f1_and_agreement_failures``."""
    what = []
    if f1_drop is not None and f1_drop > budget.max_drop + 1e-9:
        what.append(f"--max-drop {math.ceil(f1_drop * 100) / 100:g}")
    bound = agreement_lower_bound(agreement, n, budget.confidence)
    if bound < budget.min_agreement - 1e-9:
        what.append(f"--min-agreement {math.floor(bound * 1000) / 1000:g} (or judge on more --eval rows)")
    return what
