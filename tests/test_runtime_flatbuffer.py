"""The flatbuffer check: truncated, corrupt or foreign bytes never reach the interpreter."""

from __future__ import annotations

import struct

import pytest
from tests.support.runtime_models import make_pack, tflite_bytes, weights

from albert_edge.errors import ModelFileError
from albert_edge.runtime.flatbuffer import inspect_tflite
from albert_edge.runtime.pack import attach_tflite_pack, strip_tflite_pack


@pytest.fixture(scope="module")
def flat():
    return tflite_bytes(weights())


def test_valid_model_reports_signature_and_operator_versions(flat):
    info = inspect_tflite(flat, "m.tflite")
    assert info.signature_keys == ("serving_default",)
    assert info.num_subgraphs == 1
    assert {op.name for op in info.operator_codes} >= {"GATHER", "FULLY_CONNECTED", "TANH"}


def test_packed_model_still_validates(flat):
    packed = attach_tflite_pack(flat, make_pack())
    assert inspect_tflite(packed, "m.tflite") == inspect_tflite(flat, "m.tflite")
    assert strip_tflite_pack(packed) == flat


@pytest.mark.parametrize("keep", [0.9, 0.6, 0.3, 0.05])
def test_truncated_flatbuffer_is_a_model_file_error(flat, keep):
    cut = flat[: int(len(flat) * keep)]
    with pytest.raises(ModelFileError, match="m.tflite"):
        inspect_tflite(cut, "m.tflite")


def test_root_offset_past_the_end_is_caught(flat):
    bad = struct.pack("<I", len(flat) + 100) + flat[4:]
    with pytest.raises(ModelFileError, match="outside"):
        inspect_tflite(bad, "m.tflite")


def test_missing_identifier_is_not_a_tflite_model(flat):
    with pytest.raises(ModelFileError, match="TFL3"):
        inspect_tflite(flat[:4] + b"XXXX" + flat[8:], "m.tflite")


def test_every_truncation_point_is_caught_or_harmless(flat):
    # Walk cut points through the file: each must raise ModelFileError or (for cuts that
    # only drop trailing padding) still describe the same model -- never anything else.
    whole = inspect_tflite(flat, "m")
    for cut in range(8, len(flat), max(1, len(flat) // 97)):
        try:
            assert inspect_tflite(flat[:cut], "m") == whole
        except ModelFileError:
            pass


def _graph_tables(data: bytes):
    from albert_edge.runtime.flatbuffer import _MODEL_SUBGRAPHS, _SG_OPERATORS, _SG_TENSORS, _Reader

    r = _Reader(data, "m")
    sub = r.table_vector(r.table(struct.unpack_from("<I", data, 0)[0], "Model"), _MODEL_SUBGRAPHS, "subgraphs")[0]
    return r, r.table_vector(sub, _SG_TENSORS, "tensors"), r.table_vector(sub, _SG_OPERATORS, "operators")


def test_a_bad_field_deep_in_the_graph_is_named_with_its_index(flat):
    # Field names are formatted only when a read fails: the message must still say which tensor or op broke.
    from albert_edge.runtime.flatbuffer import _OP_INPUTS, _T_NAME, read_tflite_graph

    r, tensors, ops = _graph_tables(flat)
    bad = bytearray(flat)
    struct.pack_into("<I", bad, r.field_pos(tensors[3], _T_NAME), len(flat))  # the name string past the end
    with pytest.raises(ModelFileError, match=r"^m: .*\(tensors\[3\]\.name length at byte \d+ lies outside"):
        read_tflite_graph(bytes(bad), "m")
    bad = bytearray(flat)
    inputs = r.ref(ops[2], _OP_INPUTS, "inputs")
    struct.pack_into("<i", bad, inputs + 4, 10_000)  # first input: a tensor that does not exist
    with pytest.raises(ModelFileError, match=rf"operators\[2\]\.inputs names tensor 10000 of {len(tensors)}"):
        read_tflite_graph(bytes(bad), "m")
