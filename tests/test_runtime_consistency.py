"""A model file whose pack disagrees with its graph is refused at load, in one line naming the file.

Each hostile file is the sample ALBERT's real export with one thing changed, as a user could
produce by re-packing or editing it; before the load-time check each one failed mid-request
with an interpreter traceback (issue #14, cause 1).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.errors import BackendError, ModelFileError
from albert_edge.runtime.backends import open_backend
from albert_edge.runtime.consistency import graph_facts
from albert_edge.runtime.flatbuffer import read_tflite_graph
from albert_edge.runtime.pack import (
    attach_tflite_pack,
    pack_from_metadata_props,
    pack_to_metadata_props,
    read_pack,
    strip_tflite_pack,
)

LONG_TEXT = "这家酒店服务很好" * 200

pytestmark = pytest.mark.slow  # every test edits the sample's real export (the session's sample_models)


def _one_error_line(capfd, name: str) -> str:
    captured = capfd.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("albert-edge ") and ": error: " in lines[0] and name in lines[0]
    assert "Traceback" not in captured.err
    return lines[0]


def _repacked_tflite(src: Path, out: Path, **changes) -> Path:
    out.write_bytes(attach_tflite_pack(src.read_bytes(), replace(read_pack(src), **changes)))
    return out


def _repacked_onnx(src: Path, out: Path, **changes) -> Path:
    onnx = pytest.importorskip("onnx")
    model = onnx.load_from_string(src.read_bytes())
    props = {p.key: p.value for p in model.metadata_props}
    pack = replace(pack_from_metadata_props(props, str(src)), **changes)
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, pack_to_metadata_props(pack))
    out.write_bytes(model.SerializeToString())
    return out


def _vocab_plus(src: Path, extra: int) -> bytes:
    text = read_pack(src).tokenizer_asset.decode("utf-8")
    return (text + "".join(f"zzextra{i}\n" for i in range(extra))).encode("utf-8")


def test_sample_exports_pass_and_their_tables_are_found(sample_models):
    for path in (sample_models.fp32_tflite, sample_models.int8_tflite, sample_models.fp32_onnx):
        facts, quant = graph_facts(path.read_bytes(), str(path))
        assert (facts.embedding_rows, facts.position_rows, quant) == (21128, 512, None)
        assert facts.outputs["logits"][1][-1] == 2


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_vocab_larger_than_the_embedding_table_is_refused_at_load(sample_models, tmp_path, capfd, fmt):
    src = sample_models.fp32_tflite if fmt == "tflite" else sample_models.fp32_onnx
    repack = _repacked_tflite if fmt == "tflite" else _repacked_onnx
    bad = repack(src, tmp_path / f"bigvocab.{fmt}", tokenizer_asset=_vocab_plus(src, 100))
    assert main(["predict", str(bad), "zzextra5 好"]) == 2
    line = _one_error_line(capfd, str(bad))
    assert "21228 tokens" in line and "21128 rows" in line


def test_vocab_smaller_than_the_embedding_table_is_refused(sample_models, tmp_path, capfd):
    src = sample_models.fp32_tflite
    lines = read_pack(src).tokenizer_asset.decode("utf-8").splitlines()[:200]
    bad = _repacked_tflite(src, tmp_path / "tiny_vocab.tflite", tokenizer_asset=("\n".join(lines) + "\n").encode())
    assert main(["predict", str(bad), "好"]) == 2
    assert "200 tokens" in _one_error_line(capfd, str(bad))


def test_a_table_padded_past_the_vocab_loads_like_convert_accepts_it(sample_models, tmp_path):
    """21,121 tokens round up to the graph's 21,128 rows (a multiple of 8): padding, not another model's vocab."""
    src = sample_models.fp32_tflite
    lines = read_pack(src).tokenizer_asset.decode("utf-8").splitlines()[:21121]
    padded = _repacked_tflite(src, tmp_path / "padded.tflite", tokenizer_asset=("\n".join(lines) + "\n").encode())
    assert main(["predict", str(padded), "好"]) == 0


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_max_seq_len_beyond_the_position_table_is_refused_before_a_long_text_runs(sample_models, tmp_path, capfd, fmt):
    src = sample_models.fp32_tflite if fmt == "tflite" else sample_models.fp32_onnx
    repack = _repacked_tflite if fmt == "tflite" else _repacked_onnx
    bad = repack(src, tmp_path / f"longseq.{fmt}", max_seq_len=8192)
    assert main(["predict", str(bad), LONG_TEXT]) == 2
    # A .tflite with standard metadata is caught one step earlier (its inputs are fixed at 128).
    assert "max_seq_len" in (line := _one_error_line(capfd, str(bad))) and "8192" in line


def test_more_labels_than_logits_is_refused(sample_models, tmp_path, capfd):
    bad = _repacked_tflite(sample_models.fp32_tflite, tmp_path / "labels3.tflite", labels=("a", "b", "c"))
    assert main(["predict", str(bad), "好"]) == 2
    assert "3 labels" in _one_error_line(capfd, str(bad))


def _zero_point_offsets(data: bytes) -> dict[int, int]:
    """tensor index -> byte offset of its first zero-point, for the flatbuffer in ``data``."""
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    subgraph = schema.Model.GetRootAsModel(data, 0).Subgraphs(0)
    offsets = {}
    for i in range(subgraph.TensorsLength()):
        quant = subgraph.Tensors(i).Quantization()
        if quant is not None and quant.ZeroPointLength():
            offsets[i] = quant._tab.Vector(quant._tab.Offset(10))  # field 3: zero_point
    return offsets


def test_one_changed_byte_in_a_bias_zero_point_is_refused_at_load(sample_models, tmp_path, capfd):
    data = bytearray(sample_models.int8_tflite.read_bytes())
    graph = read_tflite_graph(strip_tflite_pack(bytes(data)), "int8")
    offsets = _zero_point_offsets(strip_tflite_pack(bytes(data)))
    bias = next(t.index for t in graph.tensors if t.dtype == "int32" and t.constant and t.index in offsets)
    data[offsets[bias]] ^= 0x05
    bad = tmp_path / "zero_point.tflite"
    bad.write_bytes(bytes(data))
    assert main(["predict", str(bad), "好"]) == 2
    assert "zero-point 5" in _one_error_line(capfd, str(bad))


def test_a_changed_activation_zero_point_the_kernels_reject_is_one_line_at_invoke(sample_models, tmp_path, capfd):
    """A zero-point in range passes the static check; XNNPACK rejects it when preparing: caught at invoke."""
    clean = strip_tflite_pack(sample_models.int8_tflite.read_bytes())
    graph = read_tflite_graph(clean, "int8")
    offsets = _zero_point_offsets(clean)
    transposed = [op.outputs[0] for op in graph.ops if op.name == "TRANSPOSE" and op.outputs[0] in offsets]
    assert transposed
    data = bytearray(sample_models.int8_tflite.read_bytes())
    data[offsets[transposed[0]]] ^= 0x05
    bad = tmp_path / "activation_zero_point.tflite"
    bad.write_bytes(bytes(data))
    assert main(["predict", str(bad), "这家酒店服务很好"]) == 2
    line = _one_error_line(capfd, str(bad))
    assert "litert failed while running the model" in line


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_interpreter_errors_at_invoke_become_one_backend_error(sample_models, fmt):
    """Without the load check (raw backend), an out-of-range id still ends as BackendError naming the file."""
    src = sample_models.fp32_tflite if fmt == "tflite" else sample_models.fp32_onnx
    backend = open_backend(src.read_bytes(), str(src), num_threads=1)
    ids = np.array([[2, 21128 + 50, 3]], np.int32)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    with pytest.raises(BackendError, match=str(src)) as info:
        backend.run(feed)
    assert "\n" not in str(info.value)


def test_android_assets_refuses_a_model_whose_pack_disagrees_and_writes_nothing(sample_models, tmp_path, capfd):
    bad = _repacked_tflite(sample_models.fp32_tflite, tmp_path / "bigvocab.tflite",
                           tokenizer_asset=_vocab_plus(sample_models.fp32_tflite, 100))
    assets = tmp_path / "assets"
    assert main(["android-assets", str(bad), str(assets)]) == 2
    _one_error_line(capfd, str(bad))
    assert not assets.exists() or not any(assets.iterdir())


def test_bench_refuses_a_model_whose_pack_disagrees_before_any_worker(sample_models, tmp_path):
    from albert_edge.bench_latency.runner import describe_variants

    bad = _repacked_tflite(sample_models.fp32_tflite, tmp_path / "longseq.tflite", max_seq_len=8192)
    with pytest.raises(ModelFileError, match="max_seq_len (is )?8192"):
        describe_variants([bad])


def test_sample_file_is_left_untouched_by_the_copies(sample_models, tmp_path):
    copy = tmp_path / "copy.tflite"
    shutil.copy(sample_models.fp32_tflite, copy)
    assert copy.read_bytes() == sample_models.fp32_tflite.read_bytes()


def test_onnx_with_fixed_input_dims_is_refused_at_load_not_at_every_request(sample_models, tmp_path, capfd):
    onnx = pytest.importorskip("onnx")
    model = onnx.load_from_string(sample_models.fp32_onnx.read_bytes())
    for graph_input in model.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        dims[0].dim_value, dims[1].dim_value = 1, 4
    bad = tmp_path / "static.onnx"
    bad.write_bytes(model.SerializeToString())
    assert main(["predict", str(bad), "这家酒店服务很好"]) == 2
    assert "fixed shape [1, 4]" in _one_error_line(capfd, str(bad))


def test_an_edited_weight_shape_that_no_longer_matches_its_data_is_refused(sample_models, tmp_path, capfd):
    """LiteRT accepts a constant whose shape claims fewer bytes than its buffer: an embedding 'of 3 rows'."""
    import struct

    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    data = bytearray(sample_models.fp32_tflite.read_bytes())
    clean = strip_tflite_pack(bytes(data))
    graph = read_tflite_graph(clean, "fp32")
    table = next(op.inputs[0] for op in graph.ops if op.name == "GATHER" and graph.tensors[op.inputs[0]].shape[0] == 21128)
    tensor = schema.Model.GetRootAsModel(clean, 0).Subgraphs(0).Tensors(table)
    struct.pack_into("<i", data, tensor._tab.Vector(tensor._tab.Offset(4)), 3)  # shape[0] := 3
    bad = tmp_path / "three_rows.tflite"
    bad.write_bytes(bytes(data))
    assert main(["predict", str(bad), "好"]) == 2
    assert "has shape [3, 128] (1536 bytes) but 10817536 bytes of data" in _one_error_line(capfd, str(bad))


def test_bench_refuses_a_seq_len_beyond_the_position_table_before_any_worker(sample_models, tmp_path):
    from albert_edge.bench_latency.options import BenchOptions
    from albert_edge.bench_latency.runner import run_benchmark
    from albert_edge.errors import DataError

    with pytest.raises(DataError, match=f"--seq-len 1000 exceeds the 512 positions of {sample_models.fp32_tflite}"):
        run_benchmark([sample_models.fp32_tflite], BenchOptions(threads=[1], seq_lens=[16, 1000], runs=1, warmup=0),
                      progress=False)


@pytest.mark.parametrize("variant", ["onnx_dynamic_int8", "onnx_qdq_int8"])
def test_quantized_onnx_tables_are_found_through_dequantize(sample_models, variant):
    pytest.importorskip("onnxruntime.quantization")
    from albert_edge.quantize.calibration import encode_calibration
    from albert_edge.quantize.onnx_quant import onnx_variant
    from albert_edge.tokenizer import Preprocessor, load_tokenizer
    from tests.support.sample_models import SAMPLE

    pack = read_pack(sample_models.fp32_onnx)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, "vocab")
    texts = (SAMPLE / "calib.txt").read_text(encoding="utf-8").splitlines()[:4]
    data = onnx_variant(sample_models.fp32_onnx.read_bytes(), variant, encode_calibration(texts, Preprocessor(tokenizer, 32)))
    facts, problem = graph_facts(data, variant)
    assert (facts.embedding_rows, facts.position_rows, problem) == (21128, 512, None)
