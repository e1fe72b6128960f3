"""Outlier fixes for int8 (issue #17): per-column lookup tables, float fallback of single FCs in a
dynamic-int8 file ranked by measured gain, and SmoothQuant-style smoothing proven exact in float.

A small random encoder with pretrained BERT's failure built in: one embedding column (like MiniLM's
column 99) twenty times larger than the others. Real weights: tests/test_minilm_real_weights.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.errors import QuantizationError
from albert_edge.model import AlbertConfig, random_weights, reference_forward
from albert_edge.tasks import FeatureExtraction

OUTLIER_COLUMN = 3
TASK = FeatureExtraction("mean", True, True)


def _config(ln_type: str = "postln") -> AlbertConfig:
    return AlbertConfig(vocab_size=640, embedding_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=512, hidden_act="gelu_exact",
                        embedding_order="no_projection", ln_type=ln_type)


def _outlier_weights(ln_type: str = "postln"):
    weights = random_weights(_config(ln_type), num_labels=None, seed=7, pooler=False)
    for table in ("embeddings.word", "embeddings.position"):
        weights.tensors[table][:, OUTLIER_COLUMN] *= 20.0
    return weights


def _inputs(n: int = 12, seed: int = 1) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        length = int(rng.integers(8, 40))
        ids = rng.integers(5, 640, size=(1, length)).astype(np.int32)
        out.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    return out


@pytest.fixture(scope="module")
def built():
    """(weights, {variant: flatbuffer}) for fp32, dynamic_int8 and dynamic_int8_col of the outlier model."""
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights = _outlier_weights()
    fp32 = tflite_variant(weights, "fp32", task=TASK)
    models = {"fp32": fp32}
    for name in ("dynamic_int8", "dynamic_int8_col"):
        models[name] = tflite_variant(weights, name, float_model=fp32, task=TASK)
    return weights, models


def _values(model: bytes, samples) -> np.ndarray:
    from albert_edge.quantize.measure import variant_values

    return variant_values(model, samples, TASK, 1)


def _tables(model: bytes) -> dict[str, object]:
    from ai_edge_litert import schema_py_generated as schema

    root = schema.ModelT.InitFromPackedBuf(bytearray(model), 0)
    graph = root.subgraphs[0]
    return {t.name.decode(): (t, root.buffers[t.buffer]) for t in graph.tensors
            if t.type == schema.TensorType.INT8 and t.shape is not None and len(t.shape) == 2 and t.shape[0] in (640, 512)}


def test_column_tables_store_one_scale_per_embedding_column_within_half_a_step(built):
    weights, models = built
    tables = _tables(models["dynamic_int8_col"])
    assert len(tables) == 2, "the GATHERed word table and the DEQUANTIZEd position table"
    for tensor, buffer in tables.values():
        scales = np.asarray(tensor.quantization.scale, np.float32)
        assert tensor.quantization.quantizedDimension == 1 and scales.size == 32
        values = np.frombuffer(bytes(np.asarray(buffer.data, np.uint8)), np.int8).reshape(tuple(tensor.shape)) * scales
        want = weights.tensors["embeddings.word" if tensor.shape[0] == 640 else "embeddings.position"]
        assert np.all(np.abs(values - want) <= 0.5 * scales + 1e-7)
        # The outlier column no longer sets the step of the others.
        assert scales[OUTLIER_COLUMN] > 10 * np.median(scales)


def test_column_tables_bring_embeddings_closer_to_fp32_than_one_scale_per_table(built):
    from albert_edge.quantize.float_ops import relative_error

    _, models = built
    samples = _inputs()
    reference = _values(models["fp32"], samples)
    per_tensor = relative_error(_values(models["dynamic_int8"], samples), reference)
    per_column = relative_error(_values(models["dynamic_int8_col"], samples), reference)
    assert per_column < 0.5 * per_tensor


def test_keep_float_turns_only_the_named_fully_connected_weights_float(built):
    from albert_edge.quantize.census import tflite_op_dtypes
    from albert_edge.quantize.float_ops import int8_fc_weights, keep_float

    _, models = built
    col = models["dynamic_int8_col"]
    uses = int8_fc_weights(col)
    names = list(uses)
    # Q, K, V, O, FFN in, FFN out of the one shared layer, each used by both layers.
    assert len(names) == 6 and all(len(outputs) == 2 for outputs in uses.values())
    edited = keep_float(col, models["fp32"], names[:3])
    assert list(int8_fc_weights(edited)) == names[3:]
    assert tflite_op_dtypes(edited).get("FULLY_CONNECTED:f32", 0) == tflite_op_dtypes(col).get("FULLY_CONNECTED:f32", 0) + 6
    from ai_edge_litert import schema_py_generated as schema

    root = schema.ModelT.InitFromPackedBuf(bytearray(edited), 0)
    assert root.metadata and all(root.buffers[m.buffer].data is not None for m in root.metadata), \
        "the converter's metadata (min_runtime_version) must survive the edit"
    all_float = keep_float(col, models["fp32"], names)
    samples = _inputs(4)
    # Every FC float leaves only the int8 tables: close to fp32, closer than with the FCs int8.
    reference = _values(models["fp32"], samples)
    assert np.abs(_values(all_float, samples) - reference).max() < np.abs(_values(col, samples) - reference).max()


def test_keep_float_refuses_a_name_that_is_not_an_int8_fc_weight_or_another_graph(built):
    from albert_edge.quantize.float_ops import int8_fc_weights, keep_float
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights, models = built
    with pytest.raises(QuantizationError, match="no_such_weight"):
        keep_float(models["dynamic_int8_col"], models["fp32"], ["no_such_weight"])
    other = random_weights(weights.config, num_labels=None, seed=99, pooler=False)
    with pytest.raises(QuantizationError, match="not a rounding"):
        keep_float(models["dynamic_int8_col"], tflite_variant(other, "fp32", task=TASK),
                   list(int8_fc_weights(models["dynamic_int8_col"]))[:1])


def test_ranking_puts_the_largest_measured_gain_first_and_reproduces_it(built):
    from albert_edge.quantize.float_ops import keep_float, rank_float_gains, relative_error

    _, models = built
    samples = _inputs(6)
    reference = _values(models["fp32"], samples)
    ranking = rank_float_gains(models["dynamic_int8_col"], models["fp32"], lambda m: _values(m, samples), reference)
    gains = [g.gain for g in ranking]
    assert gains == sorted(gains, reverse=True) and gains[0] > 0
    top = ranking[0]
    again = relative_error(_values(keep_float(models["dynamic_int8_col"], models["fp32"], [top.weight]), samples), reference)
    assert again == pytest.approx(top.error_float, rel=1e-9)


@pytest.mark.parametrize("ln_type, folds_per_block", [("postln", 1), ("preln", 3)])
def test_smoothing_is_exact_in_float_and_moves_the_weights(ln_type, folds_per_block):
    """The float64 reference computes the same function, and so does the fp32 TFLite graph (to rounding)."""
    from albert_edge.quantize.smoothing import smooth_weights, smoothing_folds
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights = _outlier_weights(ln_type)
    folds = smoothing_folds(weights)
    assert len(folds) == folds_per_block  # one shared block (ALBERT), used by both layers
    rng = np.random.default_rng(0)
    # Statistics with outlier channels, as calibration would measure them.
    stats = {f.stats_of: np.abs(rng.standard_normal(weights.tensors[f.stats_of].shape[0])) * 5 + 0.1 for f in folds}
    smoothed, done = smooth_weights(weights, stats, alpha=0.5)
    assert sorted(done) == sorted(stats)
    moved = max(float(np.max(np.abs(smoothed.tensors[f.consumers[0]] - weights.tensors[f.consumers[0]])
                             / (np.abs(weights.tensors[f.consumers[0]]) + 1e-6))) for f in folds)
    assert moved > 0.5, "smoothing must actually rescale the consumer kernels"
    ids = rng.integers(5, 640, size=(2, 24))
    mask = np.ones_like(ids)
    before = reference_forward(weights, ids, mask).last_hidden_state
    after = reference_forward(smoothed, ids, mask).last_hidden_state
    assert np.abs(after - before).max() <= 1e-5 * np.abs(before).max()
    samples = _inputs(4)
    fp32_before = _values(tflite_variant(weights, "fp32", task=TASK), samples)
    fp32_after = _values(tflite_variant(smoothed, "fp32", task=TASK), samples)
    assert np.abs(fp32_after - fp32_before).max() <= 1e-5


def test_smoothing_statistics_come_from_the_fcs_of_the_fp32_graph(built):
    from albert_edge.quantize.smoothing import fc_input_absmax, smoothing_folds

    weights, models = built
    stats = fc_input_absmax(weights, models["fp32"], _inputs(3))
    # Every kernel the folds need, in either architecture; Q is stored pre-scaled by 1/sqrt(head size).
    wanted = {name for name in weights.tensors if name.endswith(".kernel") and ".query." not in name}
    assert set(stats) >= wanted >= {f.stats_of for f in smoothing_folds(_outlier_weights("preln"))}
    for name, absmax in stats.items():
        assert absmax.shape == (weights.tensors[name].shape[0],) and np.all(absmax >= 0)


def test_smoothing_alpha_outside_0_1_is_an_error():
    from albert_edge.quantize.smoothing import smooth_weights

    with pytest.raises(QuantizationError, match="alpha"):
        smooth_weights(_outlier_weights(), {}, alpha=1.5)


def test_column_tables_reuse_a_built_dynamic_int8_file_without_converting_again(built, monkeypatch):
    """dynamic_int8_col is dynamic_int8's converter output with its tables re-scaled: given that file
    (``built``, as auto has it), no second conversion of the same graph runs (record 0190)."""
    import albert_edge.convert.tflite_export as export
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights, models = built

    def no_conversion(*_args, **_kwargs):
        raise AssertionError("converted the graph again")

    monkeypatch.setattr(export, "convert_to_tflite_bytes", no_conversion)
    reused = tflite_variant(weights, "dynamic_int8_col", float_model=models["fp32"], task=TASK,
                            built={"dynamic_int8": models["dynamic_int8"]})
    assert reused == models["dynamic_int8_col"]


def test_smoothed_variant_starts_from_a_built_column_file_without_converting_again(built, monkeypatch):
    """dynamic_int8_col_sq is dynamic_int8_col's file with SmoothQuant MULs: given that file, the same bytes
    come out with no conversion (auto builds both; before, the smoothed one converted dynamic_int8 again)."""
    import albert_edge.convert.tflite_export as export
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights, models = built
    converted = tflite_variant(weights, "dynamic_int8_col_sq", float_model=models["fp32"], task=TASK)

    def no_conversion(*_args, **_kwargs):
        raise AssertionError("converted the graph again")

    monkeypatch.setattr(export, "convert_to_tflite_bytes", no_conversion)
    reused = tflite_variant(weights, "dynamic_int8_col_sq", float_model=models["fp32"], task=TASK,
                            built={"dynamic_int8_col": models["dynamic_int8_col"]})
    assert reused == converted


@pytest.mark.parametrize("variant", ["dynamic_int4", "dynamic_int4_table"])
def test_int4_recipes_start_from_a_built_dynamic_int8_file_without_converting_again(built, monkeypatch, variant):
    """The int4 recipes rewrite dynamic_int8's file: auto's size search hands it over (``built``) and the same
    bytes come out with no conversion (before, each recipe converted dynamic_int8 again)."""
    import albert_edge.convert.tflite_export as export
    from albert_edge.quantize.tflite_quant import tflite_variant

    weights, models = built
    converted = tflite_variant(weights, variant, float_model=models["fp32"], task=TASK)

    def no_conversion(*_args, **_kwargs):
        raise AssertionError("converted the graph again")

    monkeypatch.setattr(export, "convert_to_tflite_bytes", no_conversion)
    reused = tflite_variant(weights, variant, float_model=models["fp32"], task=TASK,
                            built={"dynamic_int8": models["dynamic_int8"]})
    assert reused == converted
