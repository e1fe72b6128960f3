"""End to end: a small ALBERT with a head trained on generated sentiment text, quantized with --mode auto.

The encoder is random (same shapes as ALBERT-Tiny, narrower), the classifier is fitted by
logistic regression on its pooled outputs, so its logits carry real, input-dependent decisions
for the drift judge; the checkpoint is written in Hugging Face format and read back like a user's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights, reference_forward
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.outputs.claim import MANIFEST

POS = "好棒赞爱喜乐美优"
NEG = "坏差烂恨悲苦丑劣"
FILLER = "的了是在我有他这中大来上国个到说们为子和你地出道也时年"

pytestmark = pytest.mark.slow  # converts and auto-quantizes a trained model end to end (a minute or more)


def _vocab() -> list[str]:
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *POS, *NEG, *FILLER]


def _texts(n: int, seed: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = "pos" if rng.random() < 0.5 else "neg"
        strong = POS if label == "pos" else NEG
        chars = list(rng.choice(list(FILLER), size=rng.integers(6, 20))) + list(rng.choice(list(strong), size=rng.integers(3, 6)))
        rng.shuffle(chars)
        rows.append((label, "".join(chars)))
    return rows


def _encode(text: str, vocab: list[str]) -> list[int]:
    index = {t: i for i, t in enumerate(vocab)}
    return [2, *(index[c] for c in text), 3]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(checkpoint dir, calib.txt, eval.tsv) of a model whose head is fit on generated data."""
    from sklearn.linear_model import LogisticRegression

    vocab = _vocab()
    config = AlbertConfig(vocab_size=len(vocab), embedding_size=32, hidden_size=64, num_hidden_layers=4,
                          num_attention_heads=4, intermediate_size=256, max_position_embeddings=64,
                          hidden_act="gelu_tanh", embedding_order="add_then_project")
    weights = random_weights(config, num_labels=2, seed=3)
    # Sentiment characters get embeddings far apart along one direction, as fine-tuning would make
    # them, so the classes are separated with margins well above rounding noise.
    rng = np.random.default_rng(0)
    direction = rng.standard_normal(32).astype(np.float32)
    word = weights.tensors["embeddings.word"]
    word[5:5 + len(POS)] += 1.5 * direction
    word[5 + len(POS):5 + len(POS) + len(NEG)] -= 1.5 * direction
    train = _texts(300, seed=1)
    pooled = []
    for _, text in train:
        ids = np.asarray([_encode(text, vocab)])
        pooled.append(reference_forward(weights, ids).pooled_output[0])
    y = np.asarray([1 if label == "pos" else 0 for label, _ in train])
    head = LogisticRegression(C=1.0, max_iter=2000).fit(np.asarray(pooled), y)
    # Two logits whose difference is the fitted decision function: [0, w.x + b].
    kernel = np.stack([np.zeros(64), head.coef_[0]], axis=1).astype(np.float32)
    weights.tensors["classifier.kernel"] = kernel
    weights.tensors["classifier.bias"] = np.asarray([0.0, head.intercept_[0]], np.float32)
    root = tmp_path_factory.mktemp("trained")
    ckpt = write_hf_checkpoint(weights, root / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    calib = root / "calib.txt"
    calib.write_text("\n".join(text for _, text in _texts(64, seed=2)) + "\n", encoding="utf-8")
    evaluation = root / "eval.tsv"
    evaluation.write_text("\n".join(f"{label}\t{text}" for label, text in _texts(200, seed=4)) + "\n", encoding="utf-8")
    return ckpt, calib, evaluation


@pytest.fixture(scope="module")
def auto_run(trained, tmp_path_factory):
    """The report of one ``quantize --mode auto`` run and its output dir."""
    from albert_edge.quantize import quantize_checkpoint

    ckpt, calib, evaluation = trained
    out = tmp_path_factory.mktemp("auto_out")
    lines: list[str] = []
    report = quantize_checkpoint(ckpt, out, calib, mode="auto", max_drop=1.0, eval_tsv=evaluation, formats="tflite",
                                 rounds=5, min_agreement=0.97, max_seq_len=32, seq_len=32, progress=lines.append)
    report.progress_lines = lines
    return report, out


def test_progress_names_every_stage_and_every_judged_variant(auto_run):
    report, _ = auto_run
    lines = report.progress_lines
    assert lines[0].startswith("building variants (auto") and lines[-1].startswith("timing ")
    judged = {line.split()[1] for line in lines if line.startswith("judging ")}
    assert {v.key for v in report.variants if not v.error} >= judged >= {"tflite:fp32", "tflite:dynamic_int8"}
    assert any(line.startswith("fallback search") for line in lines)


def test_auto_chooses_a_quantized_variant_within_the_budget(auto_run):
    report, _ = auto_run
    chosen = next(v for v in report.variants if v.key == report.chosen)
    assert chosen.name != "fp32"
    assert chosen.drift.accuracy_drop <= 1.0 and chosen.drift.agreement >= 0.97


def test_auto_chosen_variant_is_the_fastest_within_budget(auto_run):
    report, _ = auto_run
    within = [v for v in report.variants if v.meets_budget and v.ratio_vs_fp32 is not None]
    chosen = next(v for v in report.variants if v.key == report.chosen)
    assert chosen.ratio_vs_fp32 == min(v.ratio_vs_fp32 for v in within)


def test_report_json_has_every_variant_with_size_latency_drift_and_census(auto_run):
    report, out = auto_run
    data = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    names = {v["name"] for v in data["variants"]}
    assert {"fp32", "dynamic_int8", "int8_fc"} <= names and "int8_full" not in names  # auto skips it (record 0190)
    for v in data["variants"]:
        if v["error"] is None:
            assert v["size_bytes"] > 0 and v["latency"]["median_ms"] > 0 and v["drift"] is not None
            assert "delegated_nodes" in v["census"]
    assert data["chosen"] and data["decision_log"]


def test_int8_fc_keeps_attention_layernorm_and_classifier_float_and_other_fully_connected_int8(auto_run):
    report, _ = auto_run
    fc = next(v for v in report.variants if v.name == "int8_fc")
    ops = fc.census["ops"]
    assert ops.get("FULLY_CONNECTED:i8", 0) >= 6 and ops.get("FULLY_CONNECTED:f32") == 1
    assert "BATCH_MATMUL:i8" not in ops and "SOFTMAX:i8" not in ops and ops.get("SOFTMAX:f32", 0) == 4
    assert fc.census["not_delegated"].get("BATCH_MATMUL", 0) == 0


def test_full_int8_leaves_int8_attention_ops_outside_xnnpack(auto_run, trained):
    """Why auto does not build int8_full (record 0190): its int8 attention ops leave XNNPACK. Built here by
    name, as ``--mode int8`` and ``--variants int8_full`` still do."""
    from albert_edge.convert.source import ModelSource
    from albert_edge.quantize.calibration import encode_calibration, read_calibration_texts
    from albert_edge.quantize.census import census_tflite_variant
    from albert_edge.quantize.tflite_quant import tflite_variant
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    report, _ = auto_run
    ckpt, calib, _ = trained
    source = ModelSource.load(ckpt)
    asset = source.tokenizer_asset()
    preprocessor = Preprocessor(load_tokenizer(asset.kind, asset.data, asset.do_lower_case, str(asset.path)), 32)
    calibration = encode_calibration(read_calibration_texts(calib), preprocessor, str(calib))
    full = census_tflite_variant(tflite_variant(source.weights, "int8_full", calibration)).to_dict()
    assert full["not_delegated"].get("BATCH_MATMUL", 0) > 0
    assert full["partitions"] > next(v for v in report.variants if v.name == "int8_fc").census["partitions"]


def test_written_variants_carry_the_pack_and_predict_like_fp32(auto_run, trained):
    from albert_edge.runtime.classifier import TextClassifier

    report, out = auto_run
    chosen = next(v for v in report.variants if v.key == report.chosen)
    fp32 = TextClassifier.from_file(out / "variants" / "fp32.tflite")
    quant = TextClassifier.from_file(out / chosen.file)
    text = "好棒的了是爱在我"
    assert quant.predict(text).label == fp32.predict(text).label == "pos"


def test_the_chosen_variant_is_shipped_as_model_tflite_and_the_report_says_which_it_is(auto_run):
    from albert_edge.runtime.classifier import TextClassifier
    from albert_edge.runtime.pack import read_pack_bytes

    report, out = auto_run
    data = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    shipped = data["shipped"]["model.tflite"]
    chosen = next(v for v in report.variants if v.format == "tflite" and v.name == shipped["variant"])
    assert (out / "model.tflite").read_bytes() == (out / shipped["copy_of"]).read_bytes()
    assert shipped["copy_of"] == f"variants/{chosen.name}.tflite" and shipped["size_bytes"] == chosen.size_bytes
    assert shipped["ratio_vs_fp32"] == chosen.ratio_vs_fp32 and shipped["drift"] == chosen.drift.summary()
    # The pack inside still names the recipe, whatever the file is called.
    assert read_pack_bytes((out / "model.tflite").read_bytes()).variant == chosen.name
    assert TextClassifier.from_file(out / "model.tflite").predict("好棒的了是爱在我").label == "pos"


def test_quantized_files_are_much_smaller_than_fp32(auto_run):
    report, _ = auto_run
    sizes = {v.name: v.size_bytes for v in report.variants if v.format == "tflite"}
    # This model is small enough that graph structure and the pack are a third of the fp32 file.
    assert sizes["dynamic_int8"] < 0.6 * sizes["fp32"] and sizes["int8_fc"] < 0.6 * sizes["fp32"]


@pytest.fixture(scope="module")
def strict_run(trained, tmp_path_factory):
    """(report, out dir, raised) of an auto run whose budget no variant can meet (a 10 kB size limit), so the
    search runs every fallback step it is allowed."""
    from albert_edge.errors import QuantizationError
    from albert_edge.quantize import quantize_checkpoint

    ckpt, calib, evaluation = trained
    out = tmp_path_factory.mktemp("strict_out")
    try:
        report = quantize_checkpoint(ckpt, out, calib, mode="auto", max_drop=0.0, min_agreement=0.98, max_size_mb=0.01,
                                     eval_tsv=evaluation, formats="tflite", rounds=3, max_seq_len=32, seq_len=32, max_fallback_steps=2)
        return report, out, False
    except QuantizationError as exc:
        return exc.report, out, True


def test_strict_budget_falls_back_the_worst_ranked_ops_to_float_step_by_step(strict_run):
    """Every variant that missed the budget on accuracy gets fallback steps, each keeping the previous step's
    float ops and adding the next worst ranked (int8_fc, since it calibrates on padded texts, no longer misses
    here: record 0291; its selective route is tested in test_batch_one_default.py)."""
    report, _, _ = strict_run
    families: dict[str, list] = {}
    for v in report.variants:
        if "_fb" in v.name:
            families.setdefault(v.name.rsplit("_fb", 1)[0], []).append(v)
    assert families, "variants missed a zero-drop budget, so the search must have tried fallbacks"
    for steps in families.values():
        assert [len(v.float_fallback) for v in steps] == sorted(len(v.float_fallback) for v in steps)
        assert all(v.float_fallback[: len(steps[0].float_fallback)] == steps[0].float_fallback for v in steps)
        fc_float = [v.census["ops"].get("FULLY_CONNECTED:f32", 0) for v in steps if not v.error]
        assert fc_float == sorted(fc_float) and len(set(fc_float)) == len(fc_float), fc_float


def test_budget_nobody_meets_still_writes_the_report_and_the_best_effort_marked_over_budget(strict_run):
    report, out, raised = strict_run
    assert (report.chosen is None) == raised
    if raised:  # written apart, so that a previous run's shippable files stay as they were
        out = out / "over_budget"
    data = json.loads((out / "quantize_report.json").read_text(encoding="utf-8"))
    written = sorted(p.name for p in out.glob("*model_*"))
    if raised:
        assert data["status"] == "over_budget" and data["best_effort"] == report.best_effort
        best = next(v for v in report.variants if v.key == report.best_effort)
        assert written == sorted(["model_fp32.tflite", f"over_budget_model_{best.name}.tflite"])
        assert "relax" in data["relax"] and data["error_tables"]
    else:
        assert data["status"] == "chosen" and not any(n.startswith("over_budget_") for n in written)


def test_cli_exits_3_and_says_what_to_relax_when_nothing_fits(trained, tmp_path, capsys):
    ckpt, calib, evaluation = trained
    out = tmp_path / "q"
    code = main(["quantize", str(ckpt), "--calib", str(calib), "--mode", "auto", "--eval", str(evaluation),
                 "--formats", "tflite", "--out", str(out), "--rounds", "2", "--max-seq-len", "32", "--max-drop", "0", "--min-agreement", "1",
                 "--max-fallback-steps", "1"])
    err = capsys.readouterr().err
    assert code == 3
    assert "relax" in err and "over_budget_model_" in err and "worst ops" in err
    assert (out / "over_budget" / "quantize_report.json").is_file()


def test_cli_dynamic_mode_writes_fp32_and_dynamic_files_and_prints_the_table(trained, tmp_path, capsys):
    ckpt, calib, evaluation = trained
    code = main(["quantize", str(ckpt), "--calib", str(calib), "--mode", "dynamic", "--eval", str(evaluation),
                 "--formats", "tflite", "--out", str(tmp_path / "q"), "--rounds", "2", "--max-seq-len", "32",
                 "--min-agreement", "0.97"])  # 200 eval rows can show 97 %, not the default 99 %
    printed = capsys.readouterr().out
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "q").iterdir()) == [
        MANIFEST, "model.tflite", "quantize_report.json", "quantize_report.md", "variants"]
    assert sorted(p.name for p in (tmp_path / "q" / "variants").iterdir()) == ["dynamic_int8.tflite", "fp32.tflite"]
    # The console is the verdict block and the report's path; the table is in quantize_report.md.
    assert f"ship      {tmp_path / 'q' / 'model.tflite'} (dynamic_int8)" in printed
    assert "x fp32" not in printed and len(printed.strip().splitlines()) <= 16
    details = (tmp_path / "q" / "quantize_report.md").read_text(encoding="utf-8")
    assert "x fp32" in details and "`model.tflite` is `variants/dynamic_int8.tflite`" in details


def test_cli_attention_head_groups_writes_every_tflite_variant_grouped_with_the_same_answers(trained, tmp_path, capsys):
    """``quantize --attention-head-groups 2`` (issue #39, record 0307): fp32 and the int8 files are the grouped graph
    (one SOFTMAX more per layer than the default: the 4 heads run 2 by 2), the report says so, and the shipped file
    answers as the ungrouped run's does (grouping reorders no arithmetic within a head)."""
    from albert_edge.quantize.census import census_tflite_variant
    from albert_edge.runtime import TextClassifier

    ckpt, calib, evaluation = trained
    outs = {}
    for groups in (1, 2):
        outs[groups] = tmp_path / f"g{groups}"
        code = main(["quantize", str(ckpt), "--calib", str(calib), "--mode", "dynamic", "--eval", str(evaluation),
                     "--formats", "tflite", "--out", str(outs[groups]), "--rounds", "2", "--max-seq-len", "32",
                     "--min-agreement", "0.97", "--attention-head-groups", str(groups)])
        assert code == 0
    capsys.readouterr()
    report = json.loads((outs[2] / "quantize_report.json").read_text(encoding="utf-8"))
    assert report["graph"] == {"tflite": {"attention_head_groups": 2}}
    for name in ("fp32", "dynamic_int8"):
        softmax = [census_tflite_variant((outs[g] / "variants" / f"{name}.tflite").read_bytes()).ops["SOFTMAX:f32"]
                   for g in (1, 2)]
        assert softmax[1] - softmax[0] == 4, name   # 4 layers; the probabilities' SOFTMAX is one in both
    texts = [text for _, text in _texts(12, seed=9)]
    answers = {g: [TextClassifier.from_file(outs[g] / "model.tflite").predict(t).logits for t in texts]
               for g in (1, 2)}
    np.testing.assert_allclose(np.asarray(answers[2]), np.asarray(answers[1]), atol=1e-5)


def test_a_variant_that_left_the_timing_rotation_is_paired_with_the_baseline_rounds_it_shared():
    # quantize's timing lets variants outside the budget leave after 5 rounds while fp32 goes on: their
    # interval pairs their 5 rounds with fp32's first 5 (a crash of the demo: shapes (5,) and (20,)).
    from albert_edge.quantize.measure import ratio_interval

    baseline = [10.0] * 5 + [20.0] * 15
    left_early = ratio_interval([5.0, 5.0, 5.0, 5.0, 5.0], baseline)
    assert left_early["rounds"] == 5 and left_early["ratio"] == pytest.approx(0.5)
    assert left_early["low"] == pytest.approx(0.5) and left_early["high"] == pytest.approx(0.5)
