"""The one fallback loop of ``--mode auto``: more of a variant's worst ops back to float, step by step.

A quantized variant that misses the budget is rebuilt with its k worst-ranked ops float, k = 1, 2,
4, ... (``fallback_steps``), each step a new variant ``<name>_fb<k>`` judged like any other, until
one fits. What differs between searches is passed in: the ranking (the error table's local SNR in
``pipeline._fallback_search``; the measured gain of each float FC in ``dynamic_search``) and the
rebuild (a flatbuffer edit of one FC use, of every use of a weight, or a re-conversion with the ops
denylisted). Every search writes the same report entry: ranking, method, each step, ``recovered_by``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from albert_edge.errors import AlbertEdgeError
from albert_edge.quantize.auto import Budget, budget_failures, fallback_steps

#: Ranked ops the report lists per searched variant.
REPORTED_RANKS = 16


@dataclass(frozen=True)
class Candidate:
    """One op (or weight) a search can put back to float, in ranking order."""

    #: What the rebuild takes: a tensor name (hybrid edit, denylist) or a weight name (every use).
    key: str
    #: One line for the variant's ``float_fallback`` list.
    describe: str
    #: The report's ranking row.
    record: dict[str, Any]


def new_entry(base: Any, ranked_by: str) -> dict[str, Any]:
    """The report's ``fallback`` entry of one searched variant, before its method and steps are known."""
    return {"variant": base.key, "ranked_by": ranked_by, "steps": [], "recovered_by": None}


def step_search(base: Any, ranking: Sequence[Candidate], rebuild: Callable[[list[str]], bytes], entry: dict[str, Any],
                budget: Budget, max_steps: int, judge: Callable[[Any], None], make_result: Callable[..., Any],
                say: Callable[[str], None], fmt: str = "tflite", suffix: str = "fb") -> list[Any]:
    """The variants ``<base>_fb<k>`` built with ``ranking[:k]`` float, judged, up to the first that fits.

    ``rebuild(keys)`` returns the model bytes; ``judge(result)`` fills its drift; ``make_result(name,
    format, fallback_of=..., float_fallback=...)`` makes a VariantResult (passed in so this module does
    not import the pipeline). A step whose rebuild fails is kept with its error and the search goes on.
    ``fmt`` is the variants' format ("tflite", or "onnx" for ``onnx_search``); ``suffix`` names the steps
    (``size_search`` keeps ops int8 rather than float: ``<base>_i8<k>``).
    """
    from albert_edge.quantize.census import census_onnx_variant, census_tflite_variant

    entry["ranking"] = [c.record for c in ranking[:REPORTED_RANKS]]
    added = []
    for k in fallback_steps(len(ranking), max_steps):
        chosen = list(ranking[:k])
        say(f"  {base.key}: {k} worst op(s) {'float' if suffix == 'fb' else 'at higher precision'}")
        r = make_result(f"{base.name}_{suffix}{k}", fmt, fallback_of=base.key, float_fallback=[c.describe for c in chosen])
        try:
            r.data = rebuild([c.key for c in chosen])
            r.census = census_tflite_variant(r.data).to_dict() if fmt == "tflite" else census_onnx_variant(r.data)
        except AlbertEdgeError as exc:
            r.error = str(exc)
        r.size_bytes = len(r.data)
        judge(r)
        added.append(r)
        fits = not r.error and not budget_failures(r, budget)
        entry["steps"].append({"variant": r.key, "float_ops": k, "meets_budget": fits,
                               "drift": None if r.drift is None else r.drift.summary(), "error": r.error})
        if fits:
            entry["recovered_by"] = r.key
            break
    return added
