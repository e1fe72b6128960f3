"""Issue #28's done-when on NER and QA models built from real registry text (not the sample).

The models: all-MiniLM-L6-v2 (PyPI wheel) fine-tuned briefly on NYT editorial sentences (vaderSentiment's
sdist) by tests/support/realtext_models.py: token classification with gazetteer/capitalisation entities,
extractive cloze QA. Each is judged on 300-400 rows from editorials the training never saw.

- ``--mode auto`` (TFLite and ONNX) writes a variant within the default budget, or, when none fits, the
  variant closest by the task's own metric (entity F1 / span agreement vs fp32), with the near-tie table.
- TFLite and ONNX dynamic int8 reach >= 0.97 entity F1 / span agreement vs fp32, or the report names the
  ops that keep them from the budget (``held_back``, printed as "held back by: ...").
- int4 variants (``--variants dynamic_int4,onnx_int4``) appear with their drift in quantize_report.json
  and in a ``bench --eval`` run.

Latency is never asserted; benchmarks/records/quantize_real_text_tasks.py prints every figure.
"""

from __future__ import annotations

import json

import pytest

from tests.support.realtext_models import FetchError, build_realtext

pytestmark = pytest.mark.slow  # fine-tunes two models (once, cached), auto-quantizes and benches them

#: The dynamic int8 recipes the done-when names, per format, and the share vs fp32 they must reach.
DYNAMIC_INT8 = ("tflite:dynamic_int8", "onnx:dynamic_int8")
VS_FP32_FLOOR = 0.97
AUTO_VARIANTS = ("dynamic_int8", "dynamic_int8_col", "onnx_dynamic_int8")
INT4_VARIANTS = ("dynamic_int8", "dynamic_int4", "onnx_dynamic_int8", "onnx_int4")


def vs_fp32(drift: dict) -> float:
    """The task's own agreement with fp32: entity F1 vs fp32's entities (NER), span agreement (QA)."""
    if "entity_f1_vs_baseline" in drift:
        return drift["entity_f1_vs_baseline"]
    return drift["agreement"]


@pytest.fixture(scope="module", params=["ner", "qa"])
def model(request):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    try:
        return request.param, build_realtext(request.param)
    except FetchError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def auto_run(model, tmp_path_factory):
    """(report, quantize_report.json, printed table, out dir) of ``--mode auto`` over both formats (two
    fallback steps per search, 1 and 2 ops float: the record script runs three)."""
    from albert_edge.errors import BudgetNotMetError
    from albert_edge.quantize import quantize_checkpoint

    task, folder = model
    out = tmp_path_factory.mktemp(f"auto_{task}")
    try:
        report = quantize_checkpoint(folder, out, folder / "calib.txt", mode="auto", eval_tsv=folder / "dev.jsonl",
                                     formats="tflite,onnx", variants=AUTO_VARIANTS, rounds=2, seq_len=64,
                                     max_seq_len=128, max_fallback_steps=2)
    except BudgetNotMetError as exc:
        report = exc.report
    written = out / "over_budget" if report.status == "over_budget" else out
    return report, json.loads((written / "quantize_report.json").read_text()), report.table(), written


def test_the_models_learned_their_task_and_are_judged_on_enough_rows(model, auto_run):
    task, folder = model
    info = json.loads((folder / "finetune.json").read_text())
    assert info["last_loss"] < 0.6 * info["first_loss"], info
    _, data, _, _ = auto_run
    fp32 = next(v for v in data["variants"] if v["name"] == "fp32" and v["format"] == "tflite")
    assert data["judge"]["examples"] >= data["min_judge_rows"]
    assert data["variants"] and fp32["error"] is None
    d = next(v["drift"] for v in data["variants"] if v["format"] == "tflite" and v["name"] == "dynamic_int8")
    if task == "ner":
        # Weak on purpose (a quick fine-tune of an uncased encoder on a capitalisation rule): fp32's entity F1
        # vs gold measured 0.34; 0 would be a broken model, not a weak one.
        assert d["entities"] >= data["min_judge_rows"] and d["baseline_entity_f1"] > 0.2
    else:
        assert d["examples"] >= data["min_judge_rows"] and d["baseline_f1"] > 0.4  # vs gold answers


def test_auto_writes_a_variant_within_budget_or_the_closest_by_the_tasks_metric(auto_run):
    from albert_edge.quantize.auto import budget_failures

    report, data, table, written = auto_run
    quantized = [v for v in report.variants if v.name != "fp32" and not v.error and v.drift is not None]
    if report.chosen is not None:
        chosen = next(v for v in report.variants if v.key == report.chosen)
        assert not budget_failures(chosen, report.budget) and (written / chosen.file).is_file()
    else:
        closest = next(v for v in quantized if v.key == report.best_effort)
        nearest = min(v.drift.shortfall(report.budget) for v in quantized)
        assert closest.drift.shortfall(report.budget) == nearest, [(v.key, v.drift.shortfall(report.budget))
                                                                  for v in quantized]
        assert (written / closest.file).is_file() and closest.file.startswith("over_budget_")
        assert closest.key in report.relax
    # The near-tie table: every judged variant counts its changed predictions that were fp32 near ties.
    assert "near-tie flips" in table.splitlines()[0] and "sure agree %" in table.splitlines()[0]
    for v in data["variants"]:
        if v["drift"] is not None and v["name"] != "fp32":
            ties = v["drift"]["near_ties"]
            assert 0 <= ties["near_tie_changes"] <= ties["changed"] and "confident_agreement" in ties


def test_dynamic_int8_reaches_097_vs_fp32_or_the_report_names_the_ops_that_prevent_it(auto_run):
    _, data, table, _ = auto_run
    rows = {f"{v['format']}:{v['name']}": v for v in data["variants"]}
    held = {item["variant"]: item for item in data["held_back"]}
    for key in DYNAMIC_INT8:
        share = vs_fp32(rows[key]["drift"])
        if share >= VS_FP32_FLOOR:
            continue
        item = held.get(key)
        assert item is not None, f"{key}: {share:.3f} vs fp32 and the report does not say which ops prevent more"
        assert item["ops"] and item["failures"], item
        assert f"{key} held back by: " in table


def test_int4_variants_appear_with_their_drift_in_the_quantize_and_bench_reports(model, tmp_path_factory):
    from albert_edge.cli import main
    from albert_edge.quantize import quantize_checkpoint

    task, folder = model
    out = tmp_path_factory.mktemp(f"int4_{task}")
    quantize_checkpoint(folder, out, folder / "calib.txt", mode="dynamic", eval_tsv=folder / "dev.jsonl",
                        formats="tflite,onnx", variants=INT4_VARIANTS, rounds=2, seq_len=64, max_seq_len=128,
                        error_tables=False)
    data = json.loads((out / "quantize_report.json").read_text())
    rows = {f"{v['format']}:{v['name']}": v for v in data["variants"]}
    for key in ("tflite:dynamic_int4", "onnx:int4"):
        assert rows[key]["error"] is None and rows[key]["drift"] is not None, rows[key]
        assert "near_ties" in rows[key]["drift"] and rows[key]["size_bytes"] < rows[key.split(":")[0] + ":dynamic_int8"]["size_bytes"]
    files = [out / rows[k]["file"] for k in ("tflite:fp32", "tflite:dynamic_int4", "onnx:fp32", "onnx:int4")]
    bench = tmp_path_factory.mktemp(f"bench_{task}")
    code = main(["bench", *map(str, files), "--eval", str(folder / "dev.jsonl"), "--rounds", "1", "--runs", "2",
                 "--warmup", "0", "--threads", "1", "--seq-len", "32", "--out", str(bench), "--no-progress"])
    assert code == 0
    entries = {e["variant"]: e for e in json.loads((bench / "report.json").read_text())["accuracy"]}
    # bench names them by their pack's variant tag; its baseline is the TFLite fp32 (fp32-tflite).
    for name, key in (("dynamic_int4", "tflite:dynamic_int4"), ("int4", "onnx:int4")):
        entry = entries[name]
        assert entry["task"] == ("token_classification" if task == "ner" else "question_answering")
        assert abs(vs_fp32(entry) - vs_fp32(rows[key]["drift"])) <= 0.02, (entry, rows[key]["drift"])
        # the bench's near-tie accounting: int4 changes some predictions, and counts which were baseline near ties
        ties = entry["near_ties"]
        assert ties["changed"] > 0 and 0 <= ties["near_tie_changes"] <= ties["changed"], ties
        assert 0.0 < ties["confident_agreement"] <= 1.0, ties
