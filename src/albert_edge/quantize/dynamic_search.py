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

from albert_edge.quantize.auto import Budget, budget_failures, misses_only_size

#: Calibration texts the ranking runs on: each candidate weight costs one run over them.
RANKING_TEXTS = 32
BASE_VARIANT = "dynamic_int8_col"
#: Auto's candidate for embedding, QA and NER models (``fc_smoothing``): when it fits, no search is needed.
SMOOTHED_VARIANT = "dynamic_int8_col_sq"


def dynamic_fallback_search(results: Sequence[Any], calibration: Any, budget: Budget, max_steps: int,
                            task: Any, num_threads: int, judge: Callable[[Any], None],
                            make_result: Callable[..., Any], log: list[dict[str, Any]] | None = None,
                            say: Callable[[str], None] = lambda _line: None) -> list[Any]:
    """New VariantResults ``dynamic_int8_col_fb<k>``, judged by ``judge(result)``; [] when the base fits.

    ``results`` holds fp32 first and the judged ``dynamic_int8_col``; ``make_result`` builds a
    VariantResult (``step_search``); ``log`` receives the report's fallback entry of the search.
    """
    from albert_edge.quantize.float_ops import keep_float, rank_float_gains
    from albert_edge.quantize.measure import variant_values
    from albert_edge.quantize.step_search import Candidate, new_entry, step_search

    smoothed = next((r for r in results if r.format == "tflite" and r.name == SMOOTHED_VARIANT), None)
    if smoothed is not None and not budget_failures(smoothed, budget):
        return []  # the smoothed file fits with every FC int8: floating FCs of the plain one cannot beat it
    base = next((r for r in results if r.format == "tflite" and r.name == BASE_VARIANT), None)
    if base is None or base.error or not budget_failures(base, budget) or misses_only_size(budget_failures(base, budget)):
        return []  # fits, or misses only the size limit: float FCs would only grow it
    fp32 = results[0].data
    samples = list(calibration.samples[:RANKING_TEXTS])
    reference = variant_values(fp32, samples, task, num_threads)
    ranking = [g for g in rank_float_gains(base.data, fp32, lambda m: variant_values(m, samples, task, num_threads),
                                           reference) if g.gain > 0]
    entry = new_entry(base, f"error drop on {len(samples)} calibration texts when each FC weight is float, "
                            "largest first")
    entry["method"] = "every use of the weight pointed at float32 (flatbuffer edit)"
    if log is not None:
        log.append(entry)
    candidates = [Candidate(g.weight, g.describe(), {"weight": g.weight, "error_int8": g.error_int8,
                                                      "error_float": g.error_float}) for g in ranking]
    return step_search(base, candidates, lambda weights: keep_float(base.data, fp32, weights), entry, budget,
                       max_steps, judge, make_result, say)
