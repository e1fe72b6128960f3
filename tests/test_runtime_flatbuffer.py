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


def _walks(data: bytes):
    """(fast walk's tensors and ops, or "unusual"; checked walk's, or its error) on the main subgraph."""
    from albert_edge.runtime import flatbuffer as fb

    info = fb.inspect_tflite(data, "m")
    r, _, _ = _graph_tables(data)
    sub = r.table_vector(r.table(struct.unpack_from("<I", data, 0)[0], "Model"), fb._MODEL_SUBGRAPHS, "subgraphs")[0]
    try:
        fast = fb._fast_tensors_and_ops(fb._Reader(data, "m"), sub, info.operator_codes, info.buffer_sizes)
    except fb._Unusual:
        fast = "unusual"
    try:
        checked = fb._checked_tensors_and_ops(fb._Reader(data, "m"), sub, info.operator_codes, info.buffer_sizes)
    except ModelFileError as exc:
        checked = str(exc)
    return fast, checked


def test_the_fast_walk_reads_what_the_checked_walk_reads_and_never_accepts_what_it_refuses(flat):
    # The load-time check reads tensors and ops in one inlined pass and repeats the field-by-field walk only
    # when that pass meets a bad read: it must give the same graph, and must never pass bytes the walk refuses.
    import random

    fast, checked = _walks(flat)
    assert fast != "unusual" and repr(fast) == repr(checked)
    r, tensors, _ = _graph_tables(flat)
    tables_from = min(t[0] for t in tensors) - 64   # the graph's tables, not the weight bytes before them
    rng = random.Random(39)
    outcomes = {"same": 0, "both refuse": 0, "fast defers, walk accepts": 0}
    for _ in range(400):
        bad = bytearray(flat)
        for _ in range(rng.choice((1, 2, 4))):
            bad[rng.randrange(tables_from, len(flat))] = rng.randrange(256)
        try:
            fast, checked = _walks(bytes(bad))
        except ModelFileError:
            continue   # the structure check (inspect_tflite) already refuses it
        if fast == "unusual":
            outcomes["both refuse" if isinstance(checked, str) else "fast defers, walk accepts"] += 1
        else:
            assert not isinstance(checked, str), f"the fast walk accepted what the checked walk refuses: {checked}"
            assert repr(fast) == repr(checked)   # repr: a NaN scale is equal to itself there
            outcomes["same"] += 1
    assert outcomes["same"] > 50 and outcomes["both refuse"] > 20, outcomes


def test_a_bad_field_is_named_the_same_way_through_the_fast_walk(flat):
    # read_tflite_graph runs the fast walk first: its error must still be the checked walk's, naming the field.
    from albert_edge.runtime.flatbuffer import _T_NAME, read_tflite_graph

    r, tensors, _ = _graph_tables(flat)
    bad = bytearray(flat)
    struct.pack_into("<I", bad, r.field_pos(tensors[5], _T_NAME), len(flat))
    assert _walks(bytes(bad))[0] == "unusual"
    with pytest.raises(ModelFileError, match=r"\(tensors\[5\]\.name length at byte \d+ lies outside"):
        read_tflite_graph(bytes(bad), "m")


@pytest.mark.parametrize("field, value", [("inputs", "n"), ("inputs", -2), ("outputs", -1), ("outputs", "n")])
def test_the_fast_walk_defers_on_an_op_naming_a_tensor_that_does_not_exist(flat, field, value):
    from albert_edge.runtime.flatbuffer import _OP_INPUTS, _OP_OUTPUTS

    r, tensors, ops = _graph_tables(flat)
    bad = bytearray(flat)
    vector = r.ref(ops[1], _OP_INPUTS if field == "inputs" else _OP_OUTPUTS, field)
    struct.pack_into("<i", bad, vector + 4, len(tensors) if value == "n" else value)
    fast, checked = _walks(bytes(bad))
    assert fast == "unusual" and f"operators[1].{field} names tensor" in checked


def test_the_fast_buffer_sizes_match_the_checked_ones_and_never_accept_more(flat):
    # inspect_tflite reads every buffer's size as columns (tflite_columns.buffer_sizes); on damaged copies it must
    # give the checked loop's sizes or defer to it (which then raises the message naming the buffer).
    import random

    from albert_edge.runtime import flatbuffer as fb
    from albert_edge.runtime.tflite_columns import buffer_sizes

    def both(data: bytes):
        r = fb._Reader(data, "m")
        model = r.table(struct.unpack_from("<I", data, 0)[0], "Model")
        buffers = r.table_vector(model, fb._MODEL_BUFFERS, "buffers")
        try:
            fast = list(buffer_sizes(data, model[0], r.offsets(model) + (0,) * 8))
        except fb._Unusual:
            fast = "unusual"
        try:
            checked = fb._checked_buffer_sizes(fb._Reader(data, "m"), buffers)
        except ModelFileError as exc:
            checked = str(exc)
        return fast, checked

    fast, checked = both(flat)
    assert fast == checked and len(fast) > 5
    rng = random.Random(39)
    seen = {"same": 0, "both refuse": 0}
    for _ in range(600):
        bad = bytearray(flat)
        for _ in range(rng.choice((1, 2, 4))):
            bad[rng.randrange(len(flat))] = rng.randrange(256)
        try:
            fast, checked = both(bytes(bad))
        except ModelFileError:
            continue   # the model or buffers table itself is broken: neither pass runs
        if fast == "unusual":   # deferring is always allowed: the checked loop decides
            seen["both refuse"] += isinstance(checked, str)
        else:
            assert fast == checked, (fast, checked)
            seen["same"] += 1
    assert seen["same"] > 100, seen
    # A buffer whose data vector claims more bytes than the file has: the fast pass defers, the loop names it.
    r = fb._Reader(flat, "m")
    buffers = r.table_vector(r.table(struct.unpack_from("<I", flat, 0)[0], "Model"), fb._MODEL_BUFFERS, "buffers")
    index = next(i for i, buf in enumerate(buffers) if r.ref(buf, fb._BUF_DATA, "data") is not None)
    bad = bytearray(flat)
    struct.pack_into("<I", bad, r.ref(buffers[index], fb._BUF_DATA, "data"), len(flat))
    fast, checked = both(bytes(bad))
    assert fast == "unusual" and f"buffers[{index}].data claims" in checked
