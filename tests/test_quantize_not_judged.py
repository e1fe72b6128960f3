"""``quantize``: both formats by default, ``--calib`` only where calibration is used, "not judged" (#30).

- ``--formats`` defaults to TFLite and ONNX, as ``convert``'s does.
- ``--mode dynamic`` and ``fp16`` calibrate nothing: they run without ``--calib``; int8, int16x8,
  auto (and a ``--variants`` list naming a calibrated recipe) refuse in one line naming what needs it.
- A variant judged on too few rows to show ``--min-agreement`` (and with no measured failure) is
  "not judged", not "rejected", in the table, the decision log and the report, and is never chosen.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.quantize.auto import Budget, choose, not_judged
from albert_edge.quantize.pipeline import QuantizeOptions, calibration_uses
from albert_edge.quantize.report import VariantResult, relax_sentence
from albert_edge.tasks import get_task
from albert_edge.tasks.metrics import f1_and_agreement_unjudged, min_judge_rows
from albert_edge.tasks.sequence_classification import classification_drift

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]
COMMON = ["--rounds", "1", "--threads", "1", "--max-seq-len", "16", "--labels", "neg,pos", "--no-progress"]


@pytest.fixture()
def checkpoint(tmp_path):
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return ckpt


def _calib(tmp_path, n):
    path = tmp_path / "calib.txt"
    rng = np.random.default_rng(3)
    path.write_text("\n".join("".join(rng.choice(VOCAB[5:], size=int(rng.integers(2, 9)))) for _ in range(n)) + "\n",
                    encoding="utf-8")
    return path


def test_dynamic_runs_without_calib_writes_both_formats_and_says_not_judged(checkpoint, tmp_path, capsys):
    out = tmp_path / "q"
    assert main(["quantize", str(checkpoint), "--mode", "dynamic", "--out", str(out), *COMMON]) == 0
    printed = capsys.readouterr().out
    written = sorted(p.name for p in (out / "variants").iterdir())
    assert written == ["dynamic_int8.tflite", "dynamic_int8_block.onnx", "fp32.onnx", "fp32.tflite"]
    assert not list(out.glob("model.*"))  # nothing judged, nothing shipped under the one name
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["calibration"]["data"] is None and report["calibration"]["used_by"] == []
    assert report["judge"]["examples"] == 0 and report["chosen"] is None
    for v in report["variants"]:
        if v["name"] == "fp32":
            assert v["not_judged"] is None
        else:
            assert v["not_judged"].startswith("no rows to judge on") and v["meets_budget"] is False
    details = (out / "quantize_report.md").read_text(encoding="utf-8")
    rows = [line for line in details.splitlines() if line.split()[:2] in (["tflite", "dynamic_int8"],
                                                                          ["onnx", "dynamic_int8_block"])]
    assert len(rows) == 2 and all(row.endswith("not judged") for row in rows), details
    assert "ship      nothing: no variant was judged: no rows to judge on" in printed and "rejected" not in printed


def test_fp16_runs_without_calib(checkpoint, tmp_path, capsys):
    out = tmp_path / "q"
    assert main(["quantize", str(checkpoint), "--mode", "fp16", "--formats", "tflite", "--out", str(out), *COMMON]) == 0
    assert (out / "variants" / "fp16.tflite").is_file() and not list(out.glob("**/*.onnx"))


@pytest.mark.parametrize("argv,needs", [
    (["--mode", "int8"], "int8_fc, int8_full, onnx_qdq_int8"),
    (["--mode", "int16x8", "--formats", "tflite"], "int16x8"),
    (["--mode", "auto"], "the fallback searches"),
    ([], "the fallback searches"),  # auto is the default mode
    (["--mode", "dynamic", "--variants", "dynamic_int8,int8_fc"], "int8_fc"),
])
def test_modes_that_calibrate_name_what_needs_calib_in_one_line(checkpoint, tmp_path, capsys, argv, needs):
    out = tmp_path / "q"
    code = main(["quantize", str(checkpoint), *argv, "--out", str(out), *COMMON])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "needs --calib FILE" in err[0] and needs in err[0] and "--mode dynamic and --mode fp16 need none" in err[0]
    assert not out.exists()


def test_calibration_uses_per_mode():
    assert calibration_uses(QuantizeOptions(mode="dynamic")) == []
    assert calibration_uses(QuantizeOptions(mode="fp16")) == []
    assert calibration_uses(QuantizeOptions(mode="int8", formats="tflite")) == ["int8_fc", "int8_full"]
    assert calibration_uses(QuantizeOptions(mode="dynamic", variants=["dynamic_int8_col_smooth"])) == [
        "dynamic_int8_col_smooth"]
    assert QuantizeOptions().format_list == ("tflite", "onnx")


def test_dynamic_with_calib_and_no_eval_judges_every_text_and_too_few_is_not_judged(checkpoint, tmp_path, capsys):
    out = tmp_path / "q"
    calib = _calib(tmp_path, 20)
    assert main(["quantize", str(checkpoint), "--mode", "dynamic", "--calib", str(calib), "--formats", "tflite",
                 "--out", str(out), *COMMON]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["judge"]["examples"] == 20 and "all texts" in report["judge"]["data"]
    [int8] = [v for v in report["variants"] if v["name"] == "dynamic_int8"]
    need = min_judge_rows(0.99, 0.95)
    assert int8["drift"]["agreement"] == 1.0  # what dynamic int8 of this tiny model does on these 20 texts (seeded)
    assert int8["not_judged"] == f"20 rows cannot show 99% agreement at 95% confidence (need {need}; measured 100.00%)"
    assert "ship      nothing: no variant was judged: 20 rows cannot show 99% agreement" in printed
    details = (out / "quantize_report.md").read_text(encoding="utf-8")
    assert "not judged (never chosen): 20 rows" in details and "rejected" not in printed + details
    assert report["chosen"] is None and int8["meets_budget"] is False


def test_without_eval_a_labelled_dev_split_beside_the_checkpoint_is_the_judge(checkpoint, tmp_path, capsys):
    rng = np.random.default_rng(5)
    rows = [f"{('neg', 'pos')[i % 2]}\t{''.join(rng.choice(VOCAB[5:], size=6))}" for i in range(300)]
    (checkpoint / "dev.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "q"
    assert main(["quantize", str(checkpoint), "--mode", "dynamic", "--formats", "tflite", "--out", str(out),
                 *COMMON]) == 0
    report = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["judge"]["data"] == str(checkpoint / "dev.tsv") and report["judge"]["examples"] == 300
    assert report["judge"]["default"].startswith("the labelled split beside the checkpoint")
    [int8] = [v for v in report["variants"] if v["name"] == "dynamic_int8"]
    assert int8["not_judged"] is None and int8["drift"]["accuracy"] is not None  # judged in the task's metric
    # --eval still wins over the split beside the checkpoint.
    mine = tmp_path / "mine.tsv"
    mine.write_text("\n".join(rows[:20]) + "\n", encoding="utf-8")
    assert main(["quantize", str(checkpoint), "--mode", "dynamic", "--formats", "tflite", "--eval", str(mine),
                 "--out", str(tmp_path / "q2"), *COMMON]) == 0
    report = json.loads((tmp_path / "q2" / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["judge"]["data"] == str(mine) and "default" not in report["judge"]


# --- the rule, without a model -------------------------------------------------------------------

def _variant(name, drift, ratio, size=1000):
    return VariantResult(name, "tflite", size_bytes=size, drift=drift, ratio_vs_fp32=ratio, latency={"median_ms": 1.0})


def _logits(n, flips=0, seed=0):
    rng = np.random.default_rng(seed)
    reference = rng.normal(size=(n, 2)) * 3
    variant = reference.copy()
    variant[:flips] = variant[:flips, ::-1]  # swap the two logits: the prediction changes
    return variant, reference


def test_too_few_rows_is_not_judged_but_a_visible_miss_is_rejected():
    budget = Budget()
    perfect = classification_drift(*_logits(50))
    assert "50 rows cannot show 99% agreement" in perfect.unjudged(budget)
    assert perfect.budget_failures(budget)  # it still misses the budget: it cannot be accepted
    enough = classification_drift(*_logits(400))
    assert enough.unjudged(budget) is None and not enough.budget_failures(budget)
    bad = classification_drift(*_logits(50, flips=20))
    assert bad.unjudged(budget) is None and bad.budget_failures(budget)  # the few rows show it misses
    labelled = classification_drift(*_logits(50, flips=1), labels=np.zeros(50, dtype=int))
    assert labelled.unjudged(Budget(max_drop=100.0)) is not None
    # F1-and-agreement tasks (QA spans, NER entities, regression scores): a measured F1 loss is judged.
    assert f1_and_agreement_unjudged(budget, 0.0, 1.0, 30, "span").startswith("30 spans cannot show")
    assert f1_and_agreement_unjudged(budget, 3.0, 1.0, 30, "span") is None
    assert f1_and_agreement_unjudged(budget, None, 1.0, 400, "span") is None


def test_auto_never_chooses_an_unjudged_variant_and_says_so():
    budget = Budget()
    fast = _variant("dynamic_int8", classification_drift(*_logits(50)), 0.5)
    slow = _variant("int8_fc", classification_drift(*_logits(50, flips=20)), 0.7)
    big = _variant("int8_full", classification_drift(*_logits(50)), 0.6, size=10**9)
    chosen, log = choose([_variant("fp32", None, 1.0), fast, slow, big], Budget(max_size_bytes=10**6))
    assert chosen is None
    assert any(line.startswith("tflite dynamic_int8") and "not judged (never chosen): 50 rows" in line for line in log)
    assert any(line.startswith("tflite int8_fc") and "rejected" in line for line in log)
    assert any(line.startswith("tflite int8_full") and "rejected" in line and "size" in line for line in log)
    assert not_judged(fast, budget) and not_judged(_variant("fp32", None, 1.0), budget) is None
    fast.not_judged = not_judged(fast, budget)
    sentence = relax_sentence(fast, budget, get_task("sequence_classification"))
    assert sentence.startswith("no quantized variant could be judged: 50 rows") and "--eval" in sentence


def test_a_rerun_removes_the_previous_runs_variants_and_shipped_file_but_never_converts_files(tmp_path):
    # quantize writes through OutputSet(writer="quantize"), whose next run replaces exactly its previous set
    # (the manifest, outputs/claim.py): what it does not write again goes, convert's files stay.
    from albert_edge.outputs.output_set import OutputSet

    with OutputSet(tmp_path, writer="convert") as staged:
        staged.write_bytes("model_fp32.tflite", b"convert")
    with OutputSet(tmp_path, writer="quantize") as staged:
        for name in ("variants/fp32.tflite", "variants/int8_fc.tflite", "model.tflite", "model.onnx"):
            staged.write_bytes(name, b"first")
    with OutputSet(tmp_path, writer="quantize") as staged:
        for name in ("variants/fp32.tflite", "variants/dynamic_int8.tflite", "model.tflite"):
            staged.write_bytes(name, b"second")
    assert not (tmp_path / "variants" / "int8_fc.tflite").exists() and not (tmp_path / "model.onnx").exists()
    assert (tmp_path / "model_fp32.tflite").read_bytes() == b"convert"
    assert sorted(p.name for p in (tmp_path / "variants").iterdir()) == ["dynamic_int8.tflite", "fp32.tflite"]
