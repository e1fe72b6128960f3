"""The auto search's ONNX branch: ORT dynamic int8 with the MatMul weights that gain most kept float.

Why: ORT's DynamicQuantizeMatMul quantizes each activation tensor with one scale (TFLite's hybrid FC
uses one per row), so ``onnx_dynamic_int8`` drifts more than TFLite's dynamic int8 on pretrained BERTs
(all-MiniLM-L6-v2: min cosine 0.992 against 0.997, benchmarks/README.md, issue #28). Like the TFLite
``dynamic_int8_col`` search (``dynamic_search``), each MatMul weight is ranked by what keeping it float
buys on calibration text (every MatMul reading it left out via ``nodes_to_exclude``: ALBERT's shared
weights are one initializer), and ``dynamic_int8_fb<k>`` keeps the best k float, k = 1, 2, 4, ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from albert_edge.quantize.auto import Budget, budget_failures

#: Calibration texts the ranking runs on: each candidate weight costs one build and run over them.
RANKING_TEXTS = 32
BASE_VARIANT = "dynamic_int8"


def matmul_weights(fp32_model: bytes) -> dict[str, list[str]]:
    """Constant MatMul weight name -> the names of the MatMul nodes reading it, in graph order."""
    import onnx

    graph = onnx.load_from_string(fp32_model).graph
    inits = {i.name for i in graph.initializer}
    out: dict[str, list[str]] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in inits:
            out.setdefault(node.input[1], []).append(node.name)
    return out


def onnx_fallback_search(results: Sequence[Any], calibration: Any, budget: Budget, max_steps: int, task: Any,
                         num_threads: int, judge: Callable[[Any], None], make_result: Callable[..., Any],
                         log: list[dict[str, Any]] | None = None,
                         say: Callable[[str], None] = lambda _line: None) -> list[Any]:
    """New ONNX VariantResults ``dynamic_int8_fb<k>``, judged by ``judge(result)``; [] when the base fits
    (or no ONNX dynamic_int8 was built). ``results`` holds the ONNX fp32 and the judged base."""
    from albert_edge.quantize.float_ops import relative_error
    from albert_edge.quantize.measure import variant_values
    from albert_edge.quantize.onnx_quant import onnx_variant
    from albert_edge.quantize.step_search import Candidate, new_entry, step_search

    base = next((r for r in results if r.format == "onnx" and r.name == BASE_VARIANT), None)
    fp32 = next((r for r in results if r.format == "onnx" and r.name == "fp32"), None)
    if base is None or fp32 is None or base.error:
        return []
    failures = budget_failures(base, budget)
    if not failures:
        return []
    if all(reason.startswith("size ") for reason in failures):
        # Float weights only make the file larger: no step of this search can meet a size budget.
        say(f"  ONNX {BASE_VARIANT} misses only the size budget ({failures[0]}); float fallbacks would grow it: "
            "not searched")
        return []
    samples = list(calibration.samples[:RANKING_TEXTS])
    reference = variant_values(fp32.data, samples, task, num_threads)
    weights = matmul_weights(fp32.data)
    error_int8 = relative_error(variant_values(base.data, samples, task, num_threads), reference)
    say(f"  ranking {len(weights)} ONNX MatMul weights by the error drop when float")
    rows = []
    for weight, nodes in weights.items():
        model = onnx_variant(fp32.data, "onnx_" + BASE_VARIANT, exclude_nodes=nodes)
        rows.append((error_int8 - relative_error(variant_values(model, samples, task, num_threads), reference),
                     weight, nodes))
    ranking = sorted((r for r in rows if r[0] > 0), key=lambda r: -r[0])
    entry = new_entry(base, f"error drop on {len(samples)} calibration texts when each MatMul weight is float, "
                            "largest first")
    entry["method"] = "onnxruntime quantize_dynamic with every MatMul of the weight in nodes_to_exclude"
    if log is not None:
        log.append(entry)
    candidates = [Candidate(weight, f"MatMul {weight} ({len(nodes)} node(s), relative error {error_int8:.2e} -> "
                                    f"{error_int8 - gain:.2e} when float)",
                            {"weight": weight, "nodes": nodes, "error_int8": error_int8, "error_float": error_int8 - gain})
                  for gain, weight, nodes in ranking]

    def rebuild(chosen: list[str]) -> bytes:
        return onnx_variant(fp32.data, "onnx_" + BASE_VARIANT, exclude_nodes=[n for w in chosen for n in weights[w]])

    return step_search(base, candidates, rebuild, entry, budget, max_steps, judge, make_result, say, fmt="onnx")
