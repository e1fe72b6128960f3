"""SmoothQuant MULs in front of dynamic-range int8 FCs (``quantize/fc_smoothing.py``, variant ``dynamic_int8_col_sq``).

The model is a small random BERT given the kind of outlier channel pretrained BERTs carry: one LayerNorm
channel with a gamma far above the rest, so the FCs reading a LayerNorm output see one channel 10-40x the
median. What these tests hold is the edit's arithmetic (the MULs and the kernels' scales cancel, the outlier
channel is the one divided most) and that the file runs; whether smoothing pays is a property of real weights
(random ones carry no systematic outliers to move), judged on all-MiniLM-L6-v2 by
tests/test_minilm_real_weights.py (slow) and recorded in decision 0200.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.errors import QuantizationError

OUTLIER_CHANNEL = 7
OUTLIER_GAMMA = 10.0


@pytest.fixture(scope="module", params=[2, 1], ids=["bert", "albert-shared"])
def outlier_models(request):
    from dataclasses import replace

    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.quantize.tflite_quant import tflite_variant
    from albert_edge.tasks import get_task

    config = AlbertConfig(model_type="bert", vocab_size=300, embedding_size=64, hidden_size=64, num_hidden_layers=2,
                          num_hidden_groups=request.param, num_attention_heads=4, intermediate_size=256,
                          max_position_embeddings=64, embedding_order="no_projection", hidden_act="gelu_exact")
    weights = random_weights(config, num_labels=None, seed=3)
    tensors = dict(weights.tensors)
    for name in [n for n in tensors if n.endswith("layer_norm.gamma")]:
        gamma = tensors[name].copy()
        gamma[OUTLIER_CHANNEL] = OUTLIER_GAMMA
        tensors[name] = gamma
    weights = replace(weights, tensors=tensors)
    task = get_task("feature_extraction", weights)
    fp32 = tflite_variant(weights, "fp32", task=task)
    files = {name: tflite_variant(weights, name, float_model=fp32, task=task)
             for name in ("dynamic_int8_col", "dynamic_int8_col_sq")}
    return weights, task, fp32, files


def test_the_smoothed_file_runs_close_to_fp32(outlier_models):
    """A sanity bound, not the fidelity claim: a wrong axis or a lost MUL moves the output by far more."""
    from albert_edge.quantize.fc_smoothing import synthetic_samples
    from albert_edge.quantize.float_ops import relative_error
    from albert_edge.quantize.measure import variant_values

    weights, task, fp32, files = outlier_models
    samples = synthetic_samples(weights.config.vocab_size, 48, lengths=(9, 24, 48), seed=123)  # not the ranges' seed
    reference = variant_values(fp32, samples, task, 1)
    assert relative_error(variant_values(files["dynamic_int8_col_sq"], samples, task, 1), reference) < 1e-2


def test_one_mul_per_fc_input_and_the_kernels_carry_its_inverse(outlier_models):
    """Q, K and V share one MUL; each MUL's constant times the consumer kernel's scaled rows is the fp32 kernel
    (within the int8 rounding), so in real arithmetic the function is unchanged."""
    from albert_edge.quantize.float_ops import float_counterparts
    from albert_edge.quantize.tflite_edit import dequantize_int8, unpack_tflite

    _, _, fp32, files = outlier_models
    root, names, _ = unpack_tflite(files["dynamic_int8_col_sq"])
    graph = root.subgraphs[0]
    muls = {int(op.outputs[0]): op for op in graph.operators if names[op.opcodeIndex] == "MUL"
            and graph.tensors[int(op.outputs[0])].name.endswith(b"/smoothed")}
    fcs = [op for op in graph.operators if names[op.opcodeIndex] == "FULLY_CONNECTED"]
    smoothed = [op for op in fcs if int(op.inputs[0]) in muls]
    # Every int8 FC reads a smoothed input; per layer Q/K/V share one (4 MULs for 6 FCs), and the head's FC one.
    assert len(smoothed) == len(fcs) == 6 * 2 + 1 and len(muls) == 4 * 2 + 1
    floats = float_counterparts(files["dynamic_int8_col"], fp32)
    for op in smoothed:
        kernel = graph.tensors[int(op.inputs[1])]
        factor = np.frombuffer(bytes(np.asarray(root.buffers[graph.tensors[int(muls[int(op.inputs[0])].inputs[1])].buffer]
                                                .data, dtype=np.uint8)), dtype=np.float32)
        step = np.asarray(kernel.quantization.scale, np.float32)[:, None] * factor[None, :]
        want = floats[kernel.name.decode()]
        assert np.all(np.abs(dequantize_int8(root, kernel) * factor[None, :] - want) <= 0.51 * step + 1e-7)
        if sum(int(o.inputs[0]) == int(op.inputs[0]) for o in smoothed) == 3 or want.shape[0] == 256:
            # Q/K/V and the FFN's first FC read a LayerNorm output: its outlier channel is divided most.
            assert int(np.argmin(factor)) == OUTLIER_CHANNEL


def test_bad_arguments_are_one_quantization_error(outlier_models):
    from albert_edge.quantize.fc_smoothing import smooth_fc_inputs

    _, _, fp32, files = outlier_models
    with pytest.raises(QuantizationError, match="input ranges"):
        smooth_fc_inputs(files["dynamic_int8_col"], fp32, [np.ones(64)])
    with pytest.raises(QuantizationError, match="alpha"):
        smooth_fc_inputs(files["dynamic_int8_col"], fp32, [], alpha=1.5)


def test_the_error_table_measures_a_smoothed_fc_against_its_unsmoothed_input(outlier_models):
    """``op_errors``' local error applies the fp32 FC to the variant's own input: for a smoothed FC that is the
    MUL's input (x), not its output (x / s), else every smoothed FC reads as ruined (-3 dB measured)."""
    from albert_edge.quantize.fc_smoothing import synthetic_samples
    from albert_edge.quantize.op_errors import error_table

    weights, _, fp32, files = outlier_models
    samples = synthetic_samples(weights.config.vocab_size, 48, lengths=(9, 24), seed=5)
    for name in ("dynamic_int8_col", "dynamic_int8_col_sq"):
        rows = [r for r in error_table(name, files[name], fp32, samples, weights, 4).rows if r.op == "FULLY_CONNECTED"]
        assert len(rows) == 13 and all(r.local_snr_db is not None and r.local_snr_db > 20 for r in rows), \
            [(r.where, r.local_snr_db) for r in rows]


def test_auto_does_not_float_a_smoothed_fc_back_to_its_fp32_kernel(tmp_path):
    """Named in --mode auto and over budget, ``dynamic_int8_col_sq`` gets its error table but no float-fallback
    steps: pointing a smoothed FC (input x / s) at the fp32 kernel would compute another function."""
    from albert_edge.errors import BudgetNotMetError
    from albert_edge.quantize.pipeline import quantize_checkpoint
    from tests.support.st_folder import WORDS, write_st_folder

    ckpt, _ = write_st_folder(tmp_path / "st")
    rng = np.random.default_rng(0)
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(" ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))) for _ in range(40)) + "\n")
    with pytest.raises(BudgetNotMetError) as caught:  # no int8 file keeps a cosine of 1 - 1e-9
        quantize_checkpoint(ckpt, tmp_path / "q", calib, mode="auto", formats="tflite", variants=("dynamic_int8_col_sq",),
                            max_seq_len=32, seq_len=32, rounds=1, num_threads=1, min_cosine=1 - 1e-9,
                            min_mean_cosine=1 - 1e-9)
    report = caught.value.report
    assert "tflite:dynamic_int8_col_sq" in report.error_tables
    entry = next(e for e in report.fallback if e.get("variant") == "tflite:dynamic_int8_col_sq")
    assert "no way to rebuild" in entry["skipped"]
    assert [v.name for v in report.variants if v.format == "tflite"] == ["fp32", "dynamic_int8_col_sq"]


def test_auto_adds_the_smoothed_file_for_embedding_qa_and_ner_and_it_ends_the_float_search_when_it_fits():
    from types import SimpleNamespace

    from albert_edge.quantize.auto import Budget
    from albert_edge.quantize.dynamic_search import dynamic_fallback_search
    from albert_edge.quantize.pipeline import TFLITE_MODE_VARIANTS, variant_names

    for task in ("feature_extraction", "question_answering", "token_classification"):
        assert variant_names("auto", None, task)[0] == [*TFLITE_MODE_VARIANTS["auto"], "dynamic_int8_col_sq"]
        assert variant_names("dynamic", None, task)[0] == ["dynamic_int8_col_sq"]
    assert variant_names("auto", None, "sequence_classification")[0] == list(TFLITE_MODE_VARIANTS["auto"])
    assert variant_names("auto", ("dynamic_int8",), "feature_extraction")[0] == ["dynamic_int8"]

    def result(name: str, failures: list[str]):
        drift = SimpleNamespace(budget_failures=lambda _budget: list(failures))
        return SimpleNamespace(format="tflite", name=name, error=None, drift=drift, size_bytes=1, data=b"")

    def never(*_args, **_kwargs):
        raise AssertionError("the search ran")

    fits, misses = result("dynamic_int8_col_sq", []), result("dynamic_int8_col", ["mean cosine 0.9989 < 0.999"])
    assert dynamic_fallback_search([result("fp32", []), misses, fits], None, Budget(), 3, None, 1, never, never) == []

    class Calibration:  # the search's first read: it started
        @property
        def samples(self):
            raise AssertionError("the search ran")

    with pytest.raises(AssertionError, match="the search ran"):
        dynamic_fallback_search([result("fp32", []), misses, result("dynamic_int8_col_sq", ["x"])], Calibration(),
                                Budget(), 3, None, 1, never, never)
