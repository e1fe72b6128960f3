"""The auto search's size branch: int4 and mixed 4/8 candidates when ``--max-size-mb`` is under int8's file.

Why: int4 weights halve the file (the shipped sample: 2.46 MB against dynamic int8's 4.38 MB) but
drift more, so they are worth building only when the size budget rules int8 out, and then they are
judged like every variant (``budget_failures``: the task's metric, agreement, size). Three recipes,
smallest drift first:

* ``dynamic_int4_table``: an int4 word table (per-row scales), FC weights int8. The word table is
  most of a small model's file, and a lookup's int4 rounding touches each token once, at the input.
* ``dynamic_int4``: the FC weights int4 too (per output channel).
* ``dynamic_int4_i8<k>``: ``dynamic_int4`` with the k FC weights that cost most at int4 kept int8,
  k = 1, 2, 4, ... (``step_search``) until one fits. Ranked by the error drop on calibration text
  when each weight alone is int8, per extra byte (``by_gain_per_byte``), and a weight whose int8
  bytes would break the size budget together with the better-ranked ones is left out of the ranking.

The ranking and the rebuild run on calibration text; the choice is made on the judge set (``--eval``),
so an int4 file is never chosen on the rows it was tuned on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from albert_edge.errors import AlbertEdgeError
from albert_edge.quantize.auto import Budget, budget_failures, misses_only_size

#: Calibration texts the ranking runs on: each FC weight costs one run over them.
RANKING_TEXTS = 32
#: Built in this order; the step search starts from the last.
RECIPES = ("dynamic_int4_table", "dynamic_int4")


def size_search(results: Sequence[Any], calibration: Any, budget: Budget, max_steps: int, task: Any,
                num_threads: int, judge: Callable[[Any], None], make_result: Callable[..., Any],
                build: Callable[[str], bytes], pack_bytes: int, log: list[dict[str, Any]] | None = None,
                say: Callable[[str], None] = lambda _line: None) -> list[Any]:
    """New judged TFLite VariantResults (the recipes, then ``dynamic_int4_i8<k>``); [] when no size
    budget is set or the TFLite ``dynamic_int8`` file (graph + ``pack_bytes``) already fits it.

    ``build(name)`` returns a recipe's flatbuffer (``tflite_variant``); ``pack_bytes`` is what the
    pack adds to a file, so the steps stop at the first file that fits once packed.
    """
    from albert_edge.quantize.census import census_tflite_variant
    from albert_edge.quantize.step_search import new_entry, step_search
    from albert_edge.quantize.tflite_int4 import int4_weights

    int8 = next((r for r in results if r.format == "tflite" and r.name == "dynamic_int8" and not r.error), None)
    limit = budget.max_size_bytes
    if int8 is None or limit is None or len(int8.data) + pack_bytes <= limit:
        return []
    say(f"size search: dynamic_int8 is {(len(int8.data) + pack_bytes) / 1e6:.2f} MB > {limit / 1e6:.2f} MB, "
        "trying int4 and mixed 4/8")
    have = {r.name for r in results if r.format == "tflite"}
    added = []
    for name in RECIPES:
        if name in have:
            continue
        r = make_result(name, "tflite")
        added.append(r)
        try:
            r.data = build(name)
        except (AlbertEdgeError, RuntimeError, ValueError) as exc:
            # A model int4 cannot take (e.g. nothing quantized to convert) is a row of the report, not the run's end.
            r.error = f"cannot build: {' '.join(str(exc).split())[:200]}"
            continue
        r.census = census_tflite_variant(r.data).to_dict()
        r.size_bytes = len(r.data)
        judge(r)
    base = next(r for r in [*results, *added] if r.format == "tflite" and r.name == "dynamic_int4")
    packed_budget = replace(budget, max_size_bytes=limit - pack_bytes)
    failures = budget_failures(base, packed_budget)
    if base.error or not failures or misses_only_size(failures):
        return added  # fits already, or too large even all int4: int8 weights only add bytes
    fp32 = results[0].data
    ranking = _ranking(int8.data, fp32, calibration, task, num_threads, limit - pack_bytes - len(base.data))
    entry = new_entry(base, f"error drop on {min(RANKING_TEXTS, len(calibration.samples))} calibration texts when "
                            "each FC weight is int8 instead of int4, per extra byte, largest first, within the size budget")
    entry["method"] = "int4 flatbuffer edit with the chosen FC weights left int8"
    if log is not None:
        log.append(entry)

    def rebuild(keys: list[str]) -> bytes:
        return int4_weights(int8.data, fp32, keep_int8=keys)[0]

    return added + step_search(base, ranking, rebuild, entry, packed_budget, max_steps, judge, make_result, say,
                               suffix="i8")


def by_gain_per_byte(rows: Sequence[tuple[float, int, str, float]]) -> list[tuple[float, int, str, float]]:
    """(error drop, extra bytes, name, error) rows that lower the error, the largest drop per extra byte first.

    Why per byte: the budget is bytes, and an FFN weight costs four attention weights. Ranked by the drop
    alone, the sample's second step kept both FFN weights int8 (2.85 MB packed, not passing on dev.tsv) and
    the search went on to 3.00 MB; per byte, FFN-in then an attention weight is 2.71 MB (record 0202).
    """
    return sorted((r for r in rows if r[0] > 0), key=lambda r: -r[0] / max(r[1], 1))


def _ranking(int8: bytes, fp32: bytes, calibration: Any, task: Any, num_threads: int, headroom: int) -> list[Any]:
    """Candidates (FC weights to keep int8), the largest error drop first, each prefix within ``headroom`` bytes."""
    from albert_edge.quantize.float_ops import relative_error
    from albert_edge.quantize.measure import variant_values
    from albert_edge.quantize.step_search import Candidate
    from albert_edge.quantize.tflite_int4 import int4_fc_weight_names, int4_weights

    samples = list(calibration.samples[:RANKING_TEXTS])
    reference = variant_values(fp32, samples, task, num_threads)
    all_int4 = int4_weights(int8, fp32)[0]
    error_int4 = relative_error(variant_values(all_int4, samples, task, num_threads), reference)
    rows = []
    for name in int4_fc_weight_names(int8):
        model = int4_weights(int8, fp32, keep_int8=[name])[0]
        error = relative_error(variant_values(model, samples, task, num_threads), reference)
        rows.append((error_int4 - error, len(model) - len(all_int4), name, error))
    ranking, spent = [], 0
    for gain, extra, name, error in by_gain_per_byte(rows):
        if spent + extra > headroom:
            continue
        spent += extra
        ranking.append(Candidate(name, f"FULLY_CONNECTED weight {name} int8 (relative error {error_int4:.2e} -> "
                                       f"{error:.2e}, +{extra / 1e3:.0f} KB)",
                                 {"weight": name, "error_int4": error_int4, "error_int8": error, "extra_bytes": extra}))
    return ranking
