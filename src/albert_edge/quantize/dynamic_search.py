"""The auto search's dynamic-int8 branch: per-column tables first, then the most harmful FCs float.

``dynamic_int8_col`` (``column_tables``) is a candidate of every auto run. When it misses the
budget, its FULLY_CONNECTED weights are ranked by what keeping each float buys on calibration
text (``float_ops.rank_float_gains``), and ``dynamic_int8_col_fb<k>`` keeps the best k float,
k = 1, 2, 4, ... until one fits. Each step is kept in the results, so the report shows the
trade-off, and the usual choice (fastest within budget, timed interleaved) decides.

Measured on all-MiniLM-L6-v2 (48 English sentences, cosine to fp32): dynamic_int8 0.99824 mean;
dynamic_int8_col 0.99893; with one float FC (layer 4's attention value projection, ranked first)
0.99917; two 0.99933; four 0.99953.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from albert_edge.errors import AlbertEdgeError
from albert_edge.quantize.auto import Budget, budget_failures, fallback_steps

#: Calibration texts the ranking runs on: each candidate weight costs one run over them.
RANKING_TEXTS = 32
BASE_VARIANT = "dynamic_int8_col"


def dynamic_fallback_search(results: Sequence[Any], calibration: Any, budget: Budget, max_steps: int,
                            task: Any, num_threads: int, judge: Callable[[Any], None],
                            make_result: Callable[..., Any]) -> list[Any]:
    """New VariantResults ``dynamic_int8_col_fb<k>``, judged by ``judge(result)``; [] when the base fits.

    ``results`` holds fp32 first and the judged ``dynamic_int8_col``; ``make_result(name, format,
    float_fallback=...)`` builds a VariantResult (passed in so this module does not import the pipeline).
    """
    from albert_edge.quantize.census import census_tflite_variant
    from albert_edge.quantize.float_ops import keep_float, rank_float_gains
    from albert_edge.quantize.measure import variant_values

    base = next((r for r in results if r.format == "tflite" and r.name == BASE_VARIANT), None)
    if base is None or base.error or not budget_failures(base, budget):
        return []
    fp32 = results[0].data
    samples = list(calibration.samples[:RANKING_TEXTS])
    reference = variant_values(fp32, samples, task, num_threads)
    ranking = [g for g in rank_float_gains(base.data, fp32, lambda m: variant_values(m, samples, task, num_threads),
                                           reference) if g.gain > 0]
    added = []
    for k in fallback_steps(len(ranking), max_steps):
        r = make_result(f"{BASE_VARIANT}_fb{k}", "tflite", float_fallback=[g.describe() for g in ranking[:k]])
        try:
            r.data = keep_float(base.data, fp32, [g.weight for g in ranking[:k]])
            r.census = census_tflite_variant(r.data).to_dict()
        except AlbertEdgeError as exc:
            r.error = str(exc)
        r.size_bytes = len(r.data)
        judge(r)
        added.append(r)
        if not r.error and not budget_failures(r, budget):
            break
    return added

