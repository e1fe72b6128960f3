"""Every task judged in its own units: shortfall, entity- and span-level agreement, near ties, speed ties.

Synthetic logits only (no model), so each rule is checked in milliseconds.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

from albert_edge.quantize.auto import SPEED_TIE_BAND, Budget, best_effort, budget_failures, choose
from albert_edge.quantize.report import VariantResult
from albert_edge.tasks import task_classes
from albert_edge.tasks.base import TaskDrift
from albert_edge.tasks.metrics import PERFECT, agreement_lower_bound, near_tie_accounting

#: Strict enough that a variant changing 2 of 400 predictions still misses it.
STRICT = Budget(max_drop=0.0, min_agreement=0.999, min_cosine=0.9999, min_mean_cosine=0.9999)
ROWS = 400
NER_LABELS = ("O", "B-PER", "I-PER")


def _classification(task: Any, changed: int) -> TaskDrift:
    base = np.tile([[3.0, 0.0]], (ROWS, 1))
    got = base.copy()
    got[:changed] = [0.0, 3.0]
    return task.drift(got, base)


def _regression(task: Any, changed: int) -> TaskDrift:
    base = np.linspace(0.0, 5.0, ROWS)[:, None]
    got = base.copy()
    got[:changed] += 3.0
    return task.drift(got, base)


def _embeddings(task: Any, changed: int) -> TaskDrift:
    base = np.random.default_rng(0).normal(size=(ROWS, 16))
    got = base.copy()
    got[:changed] = -got[:changed]
    return task.drift(got, base)


def _token_rows(flip: bool) -> np.ndarray:
    """One text, [CLS] O B-PER I-PER O B-PER I-PER [SEP]: [position, logits...] per token."""
    tags = [0, 0, 1, 2, 0, 1, 2, 0]
    logits = np.full((len(tags), 3), -2.0)
    logits[np.arange(len(tags)), tags] = 2.0
    if flip:
        logits[3] = [2.0, -2.0, -2.0]  # the first entity's I-PER becomes O: the entity is cut short
    return np.concatenate([np.arange(len(tags))[:, None], logits], axis=1).astype(np.float64)


def _token_classification(task: Any, changed: int) -> TaskDrift:
    task = task.bind_labels(NER_LABELS)
    base = np.concatenate([_token_rows(False) for _ in range(ROWS)])
    got = np.concatenate([_token_rows(i < changed) for i in range(ROWS)])
    return task.drift(got, base)


def _qa_rows(start: int) -> np.ndarray:
    """One plain text of 10 tokens: [position, start logit, end logit], the answer tokens start..5."""
    s, e = np.zeros(10), np.zeros(10)
    s[start], e[5] = 4.0, 4.0
    return np.stack([np.arange(10.0), s, e], axis=1)


def _question_answering(task: Any, changed: int) -> TaskDrift:
    base = np.concatenate([_qa_rows(3) for _ in range(ROWS)])
    got = np.concatenate([_qa_rows(2 if i < changed else 3) for i in range(ROWS)])
    return task.drift(got, base)


#: Task name -> builder of a synthetic drift with ``changed`` of ``ROWS`` predictions moved. A new
#: task needs one here, and its drift its own ``shortfall``: the registry test fails otherwise.
BUILDERS: dict[str, Callable[[Any, int], TaskDrift]] = {
    "sequence_classification": _classification,
    "sequence_regression": _regression,
    "feature_extraction": _embeddings,
    "token_classification": _token_classification,
    "question_answering": _question_answering,
}


@pytest.mark.parametrize("cls", task_classes(), ids=lambda c: c.name)
def test_best_effort_of_every_task_is_the_variant_closest_to_budget_not_the_fastest(cls):
    assert cls.name in BUILDERS, f"task {cls.name}: add a synthetic drift builder to this test"
    close, far = BUILDERS[cls.name](cls(), 2), BUILDERS[cls.name](cls(), 100)
    assert budget_failures(VariantResult("x", "tflite", drift=close), STRICT), "the close drift must miss too"
    assert 0 < close.shortfall(STRICT) < far.shortfall(STRICT)
    results = [VariantResult("fp32", "tflite", ratio_vs_fp32=1.0, drift=BUILDERS[cls.name](cls(), 0)),
               VariantResult("far", "tflite", ratio_vs_fp32=0.3, drift=far),
               VariantResult("close", "tflite", ratio_vs_fp32=0.6, drift=close)]
    assert choose(results, STRICT)[0] is None
    assert best_effort(results, STRICT).name == "close"


@pytest.mark.parametrize("cls", task_classes(), ids=lambda c: c.name)
def test_every_task_shortfall_is_zero_exactly_when_its_budget_passes(cls):
    exact = BUILDERS[cls.name](cls(), 0)
    loose = Budget(max_drop=50.0, min_agreement=0.5, min_cosine=-1.0, min_mean_cosine=-1.0)
    assert exact.budget_failures(loose) == [] and exact.shortfall(loose) == 0.0
    far = BUILDERS[cls.name](cls(), 100)
    assert bool(far.budget_failures(STRICT)) == (far.shortfall(STRICT) > 0)


def test_a_drift_without_its_own_shortfall_fails_best_effort_instead_of_counting_as_zero():
    class Bare(TaskDrift):
        examples = 1

        def to_dict(self) -> dict[str, Any]:
            return {}

        def budget_failures(self, budget: Budget) -> list[str]:
            return ["always"]

        def summary(self) -> str:
            return "bare"

    with pytest.raises(NotImplementedError, match="Bare"):
        best_effort([VariantResult("int8", "tflite", ratio_vs_fp32=0.3, drift=Bare())], STRICT)


def _passing(name: str, ratio: float, changed: int) -> VariantResult:
    from albert_edge.tasks import SequenceClassification

    return VariantResult(name, "tflite", ratio_vs_fp32=ratio, drift=_classification(SequenceClassification(), changed))


def test_passing_variants_within_timing_noise_are_decided_by_accuracy_deterministically():
    loose = Budget(max_drop=5.0, min_agreement=0.9)
    fast_rough = _passing("dynamic_int8", 0.50, 6)
    slow_exact = _passing("dynamic_int8_col", 0.50 * (1 + SPEED_TIE_BAND / 2), 1)
    for order in ([fast_rough, slow_exact], [slow_exact, fast_rough]):
        chosen, log = choose(order, loose)
        assert chosen is slow_exact
        assert any("CHOSEN" in line and "timing noise" in line for line in log)
        assert any("less accurate than dynamic_int8_col" in line for line in log)


def test_a_passing_variant_faster_than_the_noise_band_still_wins():
    loose = Budget(max_drop=5.0, min_agreement=0.9)
    fast_rough = _passing("dynamic_int8", 0.50, 6)
    slow_exact = _passing("dynamic_int8_col", 0.50 * (1 + 2 * SPEED_TIE_BAND), 1)
    chosen, log = choose([slow_exact, fast_rough], loose)
    assert chosen is fast_rough and any("fastest within budget, CHOSEN" in line for line in log)
    assert fast_rough.drift.shortfall(PERFECT) > slow_exact.drift.shortfall(PERFECT)


def test_ner_gate_judges_entities_not_tags():
    from albert_edge.tasks import TokenClassification

    d = _token_classification(TokenClassification(), 40)
    # One tag of six changed in 40 of 400 texts: tags agree 98.3 %, entities only 90.5 %.
    assert d.agreement == pytest.approx(1 - 40 / (6 * ROWS))
    # Each cut entity is one fp32 entity missed and one new entity found: 40 matches lost of 800 + 40.
    assert d.entities == 2 * ROWS + 40 and d.entity_agreement == pytest.approx((2 * ROWS - 40) / (2 * ROWS + 40))
    assert d.entity_f1_vs_baseline == pytest.approx(2 * (2 * ROWS - 40) / (4 * ROWS))
    failures = d.budget_failures(Budget(max_drop=50.0, min_agreement=0.95))
    assert len(failures) == 1 and failures[0].startswith("entity agreement 90.48% of 840")
    bound = agreement_lower_bound(d.entity_agreement, d.entities, 0.95)
    assert d.budget_failures(Budget(max_drop=50.0, min_agreement=bound - 0.001)) == []
    # The tag agreement alone (98.3 % of 2400 tags) would have passed 95 %.
    assert agreement_lower_bound(d.agreement, d.tokens, 0.95) > 0.95


def test_ner_without_label_names_falls_back_to_tag_agreement():
    from albert_edge.tasks import TokenClassification

    d = TokenClassification().drift(np.concatenate([_token_rows(True), _token_rows(False)]),
                                    np.concatenate([_token_rows(False), _token_rows(False)]))
    assert d.entity_agreement is None and d.judged_agreement() == (d.agreement, d.tokens, "token")


def test_ner_counts_changed_tags_that_were_fp32_near_ties():
    from albert_edge.tasks import TokenClassification

    unsure = _token_rows(False)
    unsure[3, 1:] = [0.05, -2.0, 0.0]  # fp32 barely prefers O over I-PER... argmax is O: margin 0.05
    sure = _token_rows(False)
    flipped_unsure, flipped_sure = unsure.copy(), sure.copy()
    flipped_unsure[3, 1:] = [0.0, -2.0, 0.05]
    flipped_sure[4, 1:] = [-2.0, 2.0, -2.0]
    d = TokenClassification(NER_LABELS).drift(np.concatenate([flipped_unsure, flipped_sure]),
                                              np.concatenate([unsure, sure]))
    near = d.to_dict()["near_ties"]
    assert near["changed"] == 2 and near["near_tie_changes"] == 1
    assert near["confident"] == 11 and near["confident_agreement"] == pytest.approx(10 / 11)
    assert d.to_dict()["flips_by_margin"]["<0.1"] == 1 and "1 of 2 changed tags near ties" in d.summary()


def test_qa_span_margin_and_near_tie_flips():
    from albert_edge.tasks import QuestionAnswering
    from albert_edge.tasks.qa_spans import QAWindow, span_margin

    window = QAWindow(tuple(range(6)), (0,) * 6, 1, 0, 4, np.ones(4, dtype=bool))
    start, end = np.array([0, 1.0, 0.2, 0, 0, 0]), np.array([0, 0, 1.0, 0.1, 0, 0])
    # best span (1, 2): 1 + 1; second (2, 2): 0.2 + 1 (not (1, 3): 1 + 0.1) -> margin 0.8
    assert span_margin([(start, end)], [window]) == pytest.approx(0.8)
    assert math.isinf(span_margin([(start[:3], end[:3])], [QAWindow((0, 1, 2), (0,) * 3, 1, 0, 1, np.ones(1, bool))]))

    tie = _qa_rows(3)
    tie[2, 1] = 3.95  # fp32 starts at 3 by 0.05 logit over 2
    moved = tie.copy()
    moved[2, 1] = 4.05
    d = QuestionAnswering().drift(np.concatenate([moved, _qa_rows(2)]), np.concatenate([tie, _qa_rows(3)]))
    entry = d.to_dict()
    assert d.agreement == 0.0 and entry["near_ties"]["near_tie_changes"] == 1 and entry["near_ties"]["changed"] == 2
    assert entry["flip_margins"][0] == pytest.approx(0.05)
    assert d.exact_match_vs_baseline == 0.0 and 0 < d.f1_vs_baseline < 1


def test_near_tie_accounting_reports_confident_agreement_beside_the_raw_one():
    acc = near_tie_accounting([0.01, 0.02, 2.0], [0.01, 0.02, 2.0] + [3.0] * 7, 0.1)
    assert acc == {"near_tie_margin": 0.1, "changed": 3, "near_tie_changes": 2, "confident": 8,
                   "confident_agreement": 7 / 8}


def test_classification_shortfall_is_zero_when_the_near_tie_rule_passes_the_gate():
    from albert_edge.tasks.sequence_classification import classification_drift

    base = np.tile([[3.0, 0.0]], (2000, 1))
    base[:30] = [0.05, 0.0]
    got = base.copy()
    got[:30] = [0.0, 0.06]
    d = classification_drift(got, base)
    budget = Budget(max_drop=5.0, min_agreement=0.99, tie_margin=0.1)
    assert d.agreement_verdict(budget)[0] and d.shortfall(budget) == 0.0
    assert d.shortfall(Budget(max_drop=5.0, min_agreement=0.99, tie_margin=0.0)) > 0


def test_bench_classification_entries_count_near_ties_from_the_baseline_logits():
    from albert_edge.bench_latency.task_drift import classification_near_ties

    base = np.array([[0.05, 0.0], [3.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    got = np.array([[0.0, 0.05], [0.0, 3.0], [3.0, 0.0], [0.0, 3.0]])
    assert classification_near_ties(got, base) == {"near_tie_margin": 0.1, "changed": 2, "near_tie_changes": 1,
                                                   "confident": 3, "confident_agreement": 2 / 3}


def _searched(changed: int, float_ops: list[str]) -> list[VariantResult]:
    from albert_edge.tasks import TokenClassification

    task = TokenClassification()
    base = VariantResult("dynamic_int8", "onnx", ratio_vs_fp32=0.5, drift=_token_classification(task, changed))
    step = VariantResult("dynamic_int8_fb2", "onnx", ratio_vs_fp32=0.6, fallback_of=base.key,
                         drift=_token_classification(task, 0 if changed < 50 else changed // 2), float_fallback=float_ops)
    return [VariantResult("fp32", "onnx", ratio_vs_fp32=1.0, drift=_token_classification(task, 0)), base, step]


def test_held_back_names_the_ops_a_recovering_search_kept_float():
    from albert_edge.quantize.report import held_back, held_back_line

    ops = ["MatMul encoder.layer.5.output.dense.weight (2 node(s), relative error 1e-2 -> 5e-3 when float)",
           "MatMul classifier.weight (1 node(s), relative error 5e-3 -> 1e-3 when float)"]
    results = _searched(40, ops)
    entry = {"variant": "onnx:dynamic_int8", "ranked_by": "error drop", "recovered_by": "onnx:dynamic_int8_fb2",
             "steps": [{"variant": "onnx:dynamic_int8_fb2", "float_ops": 2, "meets_budget": True}]}
    [item] = held_back([entry], results, STRICT)
    assert item["recovered"] and item["ops"] == ops and item["failures"]
    line = held_back_line(item)
    assert line.startswith("onnx:dynamic_int8 held back by: MatMul encoder.layer.5.output.dense.weight, "
                           "MatMul classifier.weight (float, onnx:dynamic_int8_fb2 meets the budget)")


def test_held_back_says_when_the_ops_kept_float_were_not_enough_and_skips_other_recipes():
    from albert_edge.quantize.report import held_back, held_back_line

    results = _searched(200, [f"MatMul w{i} (1 node(s))" for i in range(8)])
    entry = {"variant": "onnx:dynamic_int8", "recovered_by": None,
             "steps": [{"variant": "onnx:dynamic_int8_fb2", "float_ops": 8, "meets_budget": False}]}
    other = {"variant": "tflite:int8_fc", "recovered_by": None, "steps": []}
    [item] = held_back([entry, other], results, STRICT)
    assert not item["recovered"] and len(item["ops"]) == 8
    line = held_back_line(item)
    assert "held back by: more than MatMul w0, MatMul w1" in line and "and 2 more" in line
    assert "with these 8 float it still misses" in line
    assert held_back([{"variant": "onnx:dynamic_int8", "skipped": "too few rows", "steps": []}], results,
                     STRICT)[0]["skipped"] == "too few rows"
