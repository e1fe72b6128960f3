"""int4 weights (issue #28): ``quantize --variants dynamic_int4,onnx_int4`` builds TFLite ``dynamic_int4`` (int4 FC weights and
word table in a hybrid model) and ONNX ``int4`` (MatMulNBits + GatherBlockQuantized); both run, keep the
pack, hold their weights really as 4-bit values, and are judged in the report like every other variant."""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.quantize.onnx_int4 import pack_blocks
from albert_edge.quantize.options import INT4_VARIANTS, MODES
from albert_edge.quantize.pipeline import ONNX_MODE_VARIANTS, TFLITE_MODE_VARIANTS
from albert_edge.quantize.tflite_int4 import pack_int4, quantize_int4, unpack_int4

# 640 words x 32 columns = 20,480 table elements: above the size at which tables are re-stored.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(chr(0x4E00 + i) for i in range(635))]


def test_int4_packing_puts_the_first_value_in_the_low_nibble_and_round_trips():
    values = np.asarray([1, -2, 7, -7, 0, 3, -1], np.int8)
    packed = pack_int4(values)
    assert packed.tolist()[0] == (1 | (0xE << 4))  # -2 is 0xE in two's complement nibbles
    assert len(packed) == 4
    np.testing.assert_array_equal(unpack_int4(packed, values.size), values)


def test_int4_quantization_keeps_each_channel_within_half_a_step():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((6, 40)).astype(np.float32) * np.arange(1, 7, dtype=np.float32)[:, None]
    q, scales = quantize_int4(weight, axis=0)
    assert q.min() >= -7 and q.max() <= 7 and scales.shape == (6,)
    assert np.all(np.abs(q * scales[:, None] - weight) <= scales[:, None] / 2 + 1e-6)


def test_matmulnbits_blocks_pad_a_width_that_is_no_multiple_of_the_block():
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((3, 312)).astype(np.float32)  # ALBERT-Tiny's hidden width, block 64
    data, scales = pack_blocks(weight, 64)
    assert data.shape == (3, 5, 32) and scales.shape == (3, 5)
    low, high = (data & 0x0F).astype(np.int16) - 8, (data >> 4).astype(np.int16) - 8
    values = np.stack([low, high], axis=-1).reshape(3, 5 * 64)[:, :312] * np.repeat(scales, 64, axis=1)[:, :312]
    assert np.abs(values - weight).max() <= scales.max() / 2 + 1e-6


def test_int4_variants_are_built_when_asked_and_not_by_auto():
    from albert_edge.cli import build_parser

    for mode in MODES:
        assert "dynamic_int4" not in TFLITE_MODE_VARIANTS[mode] and "int4" not in ONNX_MODE_VARIANTS[mode]
    args = build_parser().parse_args(["quantize", "ckpt", "--calib", "c.txt", "--variants", "dynamic_int4, onnx_int4"])
    assert args.variants == "dynamic_int4, onnx_int4"


@pytest.fixture(scope="module")
def int4_run(tmp_path_factory):
    """The report and output dir of ``quantize --variants ... --formats tflite,onnx`` on a tiny classifier."""
    from albert_edge.quantize import quantize_checkpoint

    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
                          hidden_act="gelu_tanh", embedding_order="add_then_project")
    weights = random_weights(config, num_labels=2, seed=5)
    root = tmp_path_factory.mktemp("int4")
    ckpt = write_hf_checkpoint(weights, root / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    rng = np.random.default_rng(2)
    calib = root / "calib.txt"
    calib.write_text("\n".join("".join(rng.choice(VOCAB[5:], size=12)) for _ in range(24)) + "\n", encoding="utf-8")
    report = quantize_checkpoint(ckpt, root / "out", calib, mode="dynamic", formats="tflite,onnx", rounds=2,
                                 max_seq_len=32, seq_len=32, error_tables=False,
                                 variants=["dynamic_int8", *INT4_VARIANTS, "onnx_dynamic_int8", "onnx_dynamic_int8_col",
                                           "onnx_dynamic_int8_block"])
    return report, root / "out"


def _result(report, key):
    return next(r for r in report.variants if r.key == key)


@pytest.mark.slow  # the fixture converts and quantizes a checkpoint (about a minute)
def test_int4_variants_are_built_judged_timed_and_smaller_than_int8(int4_run):
    report, _ = int4_run
    for key, int8 in (("tflite:dynamic_int4", "tflite:dynamic_int8"), ("onnx:int4", "onnx:dynamic_int8")):
        r = _result(report, key)
        assert not r.error, r.error
        assert r.drift is not None and r.ratio_vs_fp32 is not None and r.file
        assert r.size_bytes < _result(report, int8).size_bytes


@pytest.mark.slow  # the fixture converts and quantizes a checkpoint (about a minute)
def test_int4_files_load_in_the_runtime_keep_the_pack_and_predict_like_fp32(int4_run):
    from albert_edge.runtime import TextClassifier

    report, out = int4_run
    texts = ["".join(VOCAB[5 + i:25 + i]) for i in range(0, 60, 6)]
    for fmt, key in (("tflite", "tflite:dynamic_int4"), ("onnx", "onnx:int4")):
        fp32 = TextClassifier.from_file(out / "variants" / f"fp32.{fmt}", num_threads=1)
        int4 = TextClassifier.from_file(out / _result(report, key).file, num_threads=1)
        assert int4.labels == fp32.labels and int4.pack.variant == key.split(":")[1]
        ref, got = fp32.logits_batch(texts)[0], int4.logits_batch(texts)[0]
        assert np.abs(np.asarray(got) - np.asarray(ref)).max() < 0.5


@pytest.mark.slow  # the fixture converts and quantizes a checkpoint (about a minute)
def test_tflite_int4_weights_and_word_table_are_int4_in_the_file(int4_run):
    from albert_edge.quantize.tflite_edit import unpack_tflite

    report, out = int4_run
    root, opcode_names, schema = unpack_tflite((out / _result(report, "tflite:dynamic_int4").file).read_bytes())
    graph = root.subgraphs[0]
    fc_weights = {int(op.inputs[1]) for op in graph.operators if opcode_names[op.opcodeIndex] == "FULLY_CONNECTED"}
    int4 = [graph.tensors[i] for i in fc_weights if graph.tensors[i].type == schema.TensorType.INT4]
    assert len(int4) >= 6  # projection, q, k, v, attention output, FFN in and out (shared across layers)
    for tensor in int4:
        count = int(np.prod(tensor.shape))
        assert len(root.buffers[tensor.buffer].data) == (count + 1) // 2  # two weights per byte
        assert len(tensor.quantization.scale) == int(tensor.shape[0])  # per output channel
    tables = [graph.tensors[int(op.inputs[0])] for op in graph.operators if opcode_names[op.opcodeIndex] == "GATHER"]
    word = [t for t in tables if t.type == schema.TensorType.INT4 and list(t.shape) == [len(VOCAB), 32]]
    assert len(word) == 1
    # The rows' scales are stored once, in the float table a second GATHER reads: the int4 table itself carries
    # one unit scale (per-row scales in its quantization params added 12 bytes a word and were never read).
    assert list(word[0].quantization.scale) == [1.0] and list(word[0].quantization.zeroPoint) == [0]
    row_scales = [t for t in tables if t.type == schema.TensorType.FLOAT32 and list(t.shape) == [len(VOCAB), 1]]
    assert len(row_scales) == 1 and len(root.buffers[row_scales[0].buffer].data) == 4 * len(VOCAB)
    assert _result(report, "tflite:dynamic_int4").census["ops"].get("FULLY_CONNECTED:f32+w_i4", 0) >= 6


@pytest.mark.slow  # the fixture converts and quantizes a checkpoint (about a minute)
def test_onnx_int4_uses_matmulnbits_and_a_block_quantized_word_table(int4_run):
    import onnx

    report, out = int4_run
    model = onnx.load(str(out / _result(report, "onnx:int4").file))
    kinds = [n.op_type for n in model.graph.node]
    assert kinds.count("MatMulNBits") >= 6 and "GatherBlockQuantized" in kinds
    assert "MatMul" in kinds  # attention's activation matmuls and the small classifier stay float
    inits = {i.name: i for i in model.graph.initializer}
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    assert all({a.name: a.i for a in n.attribute}["bits"] == 4 for n in nbits)
    assert all(inits[n.input[1]].data_type == onnx.TensorProto.UINT8 for n in nbits)
    assert not any(i.data_type == onnx.TensorProto.FLOAT and len(i.dims) == 2 and i.dims[1] >= 64 and i.dims[0] >= 64
                   for i in model.graph.initializer)  # no float weight matrix left but the classifier's


@pytest.mark.slow
def test_onnx_dynamic_int8_col_stores_the_word_table_int8_per_column(int4_run):
    import onnx
    from onnx import numpy_helper

    report, out = int4_run
    r = _result(report, "onnx:dynamic_int8_col")
    assert not r.error and r.drift is not None
    model = onnx.load(str(out / r.file))
    dequantize = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    inits = {i.name: i for i in model.graph.initializer}
    tables = {n.input[0] for n in dequantize}
    assert "embeddings.word_int8_rows" in tables  # gathered as int8, dequantized after the lookup
    assert numpy_helper.to_array(inits["embeddings.word_int8"]).dtype == np.int8
    assert numpy_helper.to_array(inits["embeddings.word_int8_scales"]).shape == (32,)  # one scale per column
    assert r.census["integer_matmuls"] >= 6  # the matmuls stay ORT's dynamic int8


@pytest.mark.slow  # converts, quantizes and runs the ONNX ranking (a minute or more)
def test_auto_searches_onnx_dynamic_int8_with_its_most_harmful_matmuls_float(tmp_path):
    from albert_edge.errors import BudgetNotMetError
    from albert_edge.quantize import quantize_checkpoint

    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
                          hidden_act="gelu_tanh", embedding_order="add_then_project")
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=5), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    rng = np.random.default_rng(3)
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join("".join(rng.choice(VOCAB[5:], size=12)) for _ in range(24)) + "\n", encoding="utf-8")
    # An agreement bound of 100 % cannot be shown on a few rows: every step is searched and none fits.
    with pytest.raises(BudgetNotMetError) as caught:
        quantize_checkpoint(ckpt, tmp_path / "out", calib, mode="auto", formats="tflite,onnx", rounds=2,
                            max_seq_len=32, seq_len=32, error_tables=False, variants=["dynamic_int8"],
                            min_agreement=1.0, max_fallback_steps=2)
    report = caught.value.report
    entry = next(e for e in report.fallback if e["variant"] == "onnx:dynamic_int8")
    assert entry["ranking"] and "nodes_to_exclude" in entry["method"]
    assert [s["variant"] for s in entry["steps"]] == ["onnx:dynamic_int8_fb1", "onnx:dynamic_int8_fb2"]
    base = _result(report, "onnx:dynamic_int8")
    steps = [_result(report, s["variant"]) for s in entry["steps"]]
    first = entry["ranking"][0]
    assert steps[0].float_fallback[0].startswith(f"MatMul {first['weight']}")
    # Each step leaves more MatMuls float (ALBERT's shared weights: every node reading the weight).
    counts = [r.census["integer_matmuls"] for r in (base, *steps)]
    assert counts[0] > counts[1] > counts[2]
    assert counts[0] - counts[1] == len(first["nodes"])
    assert all(r.drift is not None and r.ratio_vs_fp32 is not None for r in steps)


def test_the_onnx_search_skips_a_base_that_misses_only_the_size_budget() -> None:
    """Keeping MatMul weights float only grows the file: a size-only miss is not searched (it cost the demo
    a ranking run per weight and five rebuilds, all over budget)."""
    from albert_edge.quantize.onnx_search import onnx_fallback_search
    from albert_edge.quantize.report import VariantResult
    from albert_edge.tasks.metrics import Budget

    class _Passing:
        def budget_failures(self, budget):
            return []

    base = VariantResult("dynamic_int8", "onnx", size_bytes=5_000_000, drift=_Passing(), data=b"x")
    fp32 = VariantResult("fp32", "onnx", size_bytes=17_000_000, data=b"y")
    said: list[str] = []
    found = onnx_fallback_search([fp32, base], calibration=None, budget=Budget(max_size_bytes=4_500_000),
                                 max_steps=5, task=None, num_threads=1, judge=lambda r: None,
                                 make_result=VariantResult, say=said.append)
    assert found == [] and "misses only the size budget" in said[0]


@pytest.mark.slow
def test_onnx_dynamic_int8_block_has_int8_block_weights_and_predicts_like_fp32(int4_run):
    """Issue #41's ONNX dynamic default: MatMulNBits bits=8 (one scale per block of 64 rows of a column, zero
    point 128), per-column int8 tables; the runtime opens it with its pack and its logits follow fp32's."""
    import onnx
    from onnx import numpy_helper
    from albert_edge.quantize.pipeline import ONNX_MODE_VARIANTS
    from albert_edge.runtime import TextClassifier

    assert ONNX_MODE_VARIANTS["dynamic"] == ("dynamic_int8_block",) and "dynamic_int8" in ONNX_MODE_VARIANTS["auto"]
    report, out = int4_run
    r = _result(report, "onnx:dynamic_int8_block")
    assert not r.error and r.drift is not None and r.file == "variants/dynamic_int8_block.onnx"
    model = onnx.load(str(out / r.file))
    inits = {i.name: i for i in model.graph.initializer}
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) >= 6
    for node in nbits:
        attrs = {a.name: a.i for a in node.attribute}
        assert attrs["bits"] == 8 and attrs["block_size"] == 64 and attrs["accuracy_level"] == 4
        weight = numpy_helper.to_array(inits[node.input[1]])
        assert weight.dtype == np.uint8 and weight.shape == (attrs["N"], -(-attrs["K"] // 64), 64)
    assert numpy_helper.to_array(inits["embeddings.word_int8_scales"]).shape == (32,)
    texts = ["".join(VOCAB[5 + i:25 + i]) for i in range(0, 60, 6)]
    fp32 = TextClassifier.from_file(out / "variants" / "fp32.onnx", num_threads=1)
    int8 = TextClassifier.from_file(out / r.file, num_threads=1)
    assert int8.pack.variant == "dynamic_int8_block"
    ref, got = fp32.logits_batch(texts)[0], int8.logits_batch(texts)[0]
    assert np.abs(np.asarray(got) - np.asarray(ref)).max() < 0.05


def _tiny_checkpoint(root):
    """A tiny random ALBERT classifier with a 640-word vocab and 24 calibration texts (ckpt, calib path)."""
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=32, hidden_size=64, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=128, max_position_embeddings=64,
                          hidden_act="gelu_tanh", embedding_order="add_then_project")
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=5), root / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    rng = np.random.default_rng(2)
    calib = root / "calib.txt"
    calib.write_text("\n".join("".join(rng.choice(VOCAB[5:], size=12)) for _ in range(24)) + "\n", encoding="utf-8")
    return ckpt, calib


@pytest.mark.slow  # two auto runs of a tiny model (a few minutes on a loaded machine)
def test_auto_builds_int4_candidates_only_when_the_size_budget_rules_int8_out_and_prefer_size_takes_the_smallest(
        tmp_path):
    """Issue #41: with ``--max-size-mb`` under the int8 file, auto builds and judges the int4 and mixed 4/8
    recipes (``size_search``); without it, none; ``--prefer size`` then writes the smallest passing file."""
    from albert_edge.quantize import quantize_checkpoint
    from albert_edge.runtime import TextClassifier

    ckpt, calib = _tiny_checkpoint(tmp_path)
    common = dict(mode="auto", formats="tflite", rounds=1, max_seq_len=32, seq_len=32, error_tables=False,
                  variants=["dynamic_int8"], max_drop=100.0, min_agreement=0.0)
    plain = quantize_checkpoint(ckpt, tmp_path / "plain", calib, **common)
    assert not any("int4" in v.name for v in plain.variants)
    int8_size = _result(plain, "tflite:dynamic_int8").size_bytes
    report = quantize_checkpoint(ckpt, tmp_path / "small", calib, max_size_mb=(int8_size - 1) / 1e6, prefer="size",
                                 **common)
    built = {v.name: v for v in report.variants}
    assert {"dynamic_int4_table", "dynamic_int4"} <= set(built)
    assert all(built[n].drift is not None and not built[n].error for n in ("dynamic_int4_table", "dynamic_int4"))
    assert built["dynamic_int4"].size_bytes < int8_size  # (a 640-word table is too small for int4 to pay alone)
    assert not built["dynamic_int8"].meets_budget  # one byte over
    chosen = next(v for v in report.variants if v.key == report.chosen)
    passing = [v for v in report.variants if v.meets_budget]
    assert chosen.size_bytes == min(v.size_bytes for v in passing) and chosen.name.startswith("dynamic_int4")
    model = TextClassifier.from_file(tmp_path / "small" / chosen.file, num_threads=1)
    assert model.pack.variant == chosen.name and len(model.logits_batch(["".join(VOCAB[5:25])])[0][0]) == 2


def test_least_squares_int4_scales_round_each_slice_no_worse_than_max_scales():
    """The word table's rows take the least-squares clip (issue #41): an outlier no longer coarsens its whole row."""
    rng = np.random.default_rng(4)
    table = rng.standard_normal((40, 128)).astype(np.float32)
    table[::5, 7] = 12.0  # one outlier column value in every fifth row
    plain_q, plain_s = quantize_int4(table, axis=0)
    fit_q, fit_s = quantize_int4(table, axis=0, least_squares=True)
    assert fit_q.min() >= -7 and fit_q.max() <= 7 and fit_s.shape == (40,)
    plain_err = ((plain_q * plain_s[:, None] - table) ** 2).sum(axis=1)
    fit_err = ((fit_q * fit_s[:, None] - table) ** 2).sum(axis=1)
    assert np.all(fit_err <= plain_err + 1e-6) and fit_err[::5].sum() < 0.9 * plain_err[::5].sum()


def test_the_size_search_ranks_int8_weights_by_error_drop_per_extra_byte():
    """The sample's ranking (record 0202): by drop alone the second FFN weight came before the attention weight,
    and the second step was 2.85 MB; per byte the cheap attention weight comes second and the harmless ones drop."""
    from albert_edge.quantize.size_search import by_gain_per_byte

    rows = [(3.9e-4, 194680, "ffn_in", 0.0), (1.5e-4, 194680, "ffn_out", 0.0), (5.7e-5, 48664, "attention", 0.0),
            (1.2e-5, 48664, "pooler", 0.0), (-1e-6, 48664, "worse", 0.0), (0.0, 19968, "same", 0.0)]
    assert [r[2] for r in by_gain_per_byte(rows)] == ["ffn_in", "attention", "ffn_out", "pooler"]
