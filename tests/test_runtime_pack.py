"""The model pack: round trips, and every kind of hostile or broken file as one ModelFileError."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import pytest

from albert_edge.errors import ModelFileError
from albert_edge.runtime import pack as P
from albert_edge.runtime.pack import (
    ModelPack,
    attach_tflite_pack,
    pack_from_metadata_props,
    pack_to_metadata_props,
    read_pack,
    read_tflite_pack,
    strip_tflite_pack,
)

VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n好\n差\n".encode()
# Not a runnable model: the pack layer only looks at the identifier and the tail.
FAKE_FLATBUFFER = b"\x10\x00\x00\x00TFL3" + bytes(range(256)) * 4


def _pack(**kw) -> ModelPack:
    base = dict(tokenizer_type="wordpiece", tokenizer_asset=VOCAB, labels=("neg", "pos"), max_seq_len=64)
    base.update(kw)
    return ModelPack(**base)


def _zip_tail(members: dict[str, bytes], compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    buf.write(FAKE_FLATBUFFER)
    with zipfile.ZipFile(buf, "a", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_tflite_pack_round_trips_and_leaves_flatbuffer_bytes_unchanged():
    pack = _pack(source={"scheme": "brightmart-tf1", "checkpoint": "x/model.ckpt"})
    data = attach_tflite_pack(FAKE_FLATBUFFER, pack)
    assert data[: len(FAKE_FLATBUFFER)] == FAKE_FLATBUFFER
    assert read_tflite_pack(data, "m.tflite") == pack
    assert strip_tflite_pack(data) == FAKE_FLATBUFFER


def test_tflite_pack_zip_offsets_are_absolute_from_file_start():
    data = attach_tflite_pack(FAKE_FLATBUFFER, _pack())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        first = min(info.header_offset for info in zf.infolist())
    assert first == len(FAKE_FLATBUFFER)
    assert data[first : first + 4] == b"PK\x03\x04"


def test_reattaching_replaces_the_old_pack_instead_of_stacking():
    once = attach_tflite_pack(FAKE_FLATBUFFER, _pack())
    twice = attach_tflite_pack(once, _pack().with_variant("int8_dynamic"))
    assert strip_tflite_pack(twice) == FAKE_FLATBUFFER
    assert read_tflite_pack(twice).variant == "int8_dynamic"


def test_settings_json_has_the_v1_fields():
    data = attach_tflite_pack(FAKE_FLATBUFFER, _pack())
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        settings = json.loads(zf.read("albert_edge.json"))
        assert zf.read("labels.txt").decode() == "neg\npos\n"
        assert zf.read("vocab.txt") == VOCAB
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    assert settings["pack_format"] == 1
    assert settings["tokenizer"] == {"type": "wordpiece", "file": "vocab.txt", "do_lower_case": True, "max_seq_len": 64}
    assert settings["inputs"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert settings["labels"] == ["neg", "pos"]


def test_sentencepiece_pack_round_trips_through_onnx_metadata_as_base64():
    pack = _pack(tokenizer_type="sentencepiece", tokenizer_asset=bytes(range(256)), do_lower_case=False)
    props = pack_to_metadata_props(pack)
    assert set(props) == {"albert_edge.json", "labels.txt", "spiece.model"}
    assert all(isinstance(v, str) for v in props.values())
    assert pack_from_metadata_props(props, "m.onnx") == pack


def test_unknown_settings_keys_survive_a_round_trip():
    pack = _pack(extra={"future_field": {"a": 1}})
    assert read_tflite_pack(attach_tflite_pack(FAKE_FLATBUFFER, pack)).extra == {"future_field": {"a": 1}}


def test_read_pack_reads_a_real_onnx_file_without_onnx_in_the_runtime(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph)
    helper.set_model_props(model, pack_to_metadata_props(_pack()))
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert read_pack(path) == _pack()


def test_feature_extraction_pack_needs_no_labels():
    pack = _pack(labels=None, task="feature_extraction", outputs=("last_hidden_state", "pooled_output"))
    again = read_tflite_pack(attach_tflite_pack(FAKE_FLATBUFFER, pack))
    assert again.labels is None and again.outputs == ("last_hidden_state", "pooled_output")


@pytest.mark.parametrize(
    "members, expected",
    [
        ({}, "no albert-edge pack"),
        ({"vocab.txt": VOCAB}, "albert_edge.json missing"),
        ({"albert_edge.json": b"{not json", "vocab.txt": VOCAB}, "not valid JSON"),
        ({"albert_edge.json": b"[1]", "vocab.txt": VOCAB}, "JSON object"),
        ({"albert_edge.json": json.dumps({"pack_format": 99}).encode(), "vocab.txt": VOCAB}, "pack_format is 99"),
    ],
)
def test_broken_pack_contents_raise_model_file_error(members, expected):
    data = _zip_tail(members) if members else FAKE_FLATBUFFER
    with pytest.raises(ModelFileError, match=expected):
        read_tflite_pack(data, "m.tflite")


def _settings(**changes) -> bytes:
    settings = _pack().settings()
    settings.update(changes)
    return json.dumps(settings).encode()


def test_missing_tokenizer_member_is_named():
    with pytest.raises(ModelFileError, match="vocab.txt is missing"):
        read_tflite_pack(_zip_tail({"albert_edge.json": _settings(), "labels.txt": b"neg\npos\n"}), "m.tflite")


def test_labels_txt_disagreeing_with_settings_is_an_error():
    members = {"albert_edge.json": _settings(), "labels.txt": b"pos\nneg\n", "vocab.txt": VOCAB}
    with pytest.raises(ModelFileError, match="disagrees"):
        read_tflite_pack(_zip_tail(members), "m.tflite")


def test_path_traversal_member_names_are_refused():
    members = {"albert_edge.json": _settings(), "../../etc/evil": b"x", "vocab.txt": VOCAB}
    with pytest.raises(ModelFileError, match="not a plain file name"):
        read_tflite_pack(_zip_tail(members), "m.tflite")


def test_compressed_members_are_refused():
    members = {"albert_edge.json": _settings(), "labels.txt": b"neg\npos\n", "vocab.txt": VOCAB}
    with pytest.raises(ModelFileError, match="ZIP_STORED"):
        read_tflite_pack(_zip_tail(members, zipfile.ZIP_DEFLATED), "m.tflite")


def test_oversized_member_is_refused_before_reading(monkeypatch):
    monkeypatch.setitem(P.MAX_MEMBER_BYTES, "vocab.txt", 10)
    with pytest.raises(ModelFileError, match="vocab.txt is .* bytes, the limit is 10"):
        read_tflite_pack(attach_tflite_pack(FAKE_FLATBUFFER, _pack()), "m.tflite")


def test_corrupt_zip_directory_is_a_model_file_error():
    data = bytearray(attach_tflite_pack(FAKE_FLATBUFFER, _pack()))
    eocd = data.rfind(b"PK\x05\x06")
    data[eocd + 16 : eocd + 20] = (len(data) + 999).to_bytes(4, "little")
    with pytest.raises(ModelFileError, match="m.tflite"):
        read_tflite_pack(bytes(data), "m.tflite")


@pytest.mark.parametrize("content", [b"", b"hello, I am a text file", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64])
def test_non_model_files_raise_model_file_error(tmp_path, content):
    path = tmp_path / "m.tflite"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match="m.tflite"):
        read_pack(path)


def test_missing_file_raises_model_file_error(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        read_pack(tmp_path / "absent.tflite")


def test_onnx_base64_garbage_is_a_model_file_error():
    props = pack_to_metadata_props(_pack(tokenizer_type="sentencepiece", tokenizer_asset=b"abc"))
    props["spiece.model"] = "!!!not base64!!!"
    with pytest.raises(ModelFileError, match="base64"):
        pack_from_metadata_props(props, "m.onnx")


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"tokenizer_type": "bpe"}, "tokenizer.type"),
        ({"max_seq_len": 1}, "max_seq_len"),
        ({"labels": ("a", "a")}, "duplicates"),
        ({"labels": None}, "no labels"),
        ({"inputs": ("input_ids", "pixels")}, "inputs"),
    ],
)
def test_invalid_pack_settings_are_rejected_when_built(kw, expected):
    with pytest.raises(ModelFileError, match=expected):
        _pack(**kw)


def test_eocd_signature_inside_weights_does_not_break_packing():
    flat = FAKE_FLATBUFFER + b"PK\x05\x06" + bytes(40)
    packed = attach_tflite_pack(flat, _pack())
    assert packed.startswith(flat) and read_tflite_pack(packed) == _pack()


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_deeply_nested_pack_settings_are_one_model_file_error(fmt):
    """Issue #14 cause 2: 100,000 nested lists in albert_edge.json used to end in a RecursionError traceback."""
    nested = ('{"pack_format": 1, "source": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()
    members = {"albert_edge.json": nested, "vocab.txt": VOCAB}
    if fmt == "tflite":
        with pytest.raises(ModelFileError, match="m.tflite: pack albert_edge.json: JSON nested 100001 levels"):
            P.pack_from_members(members, "m.tflite")
    else:
        props = {k: v.decode() for k, v in members.items()}
        with pytest.raises(ModelFileError, match="m.onnx: pack albert_edge.json: JSON nested"):
            pack_from_metadata_props(props, "m.onnx")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="zipfile takes metadata_encoding from Python 3.11")
def test_reading_a_pack_imports_no_zip_name_codec(tmp_path):
    """The pack's member names are read as Latin-1, not cp437: importing that codec's module was 0.3 ms of every
    process's first load. A fresh process, as an app's first from_file, from the mapped file and from bytes."""
    path = tmp_path / "m.tflite"
    path.write_bytes(attach_tflite_pack(FAKE_FLATBUFFER, _pack()))
    code = ("import sys; from albert_edge.runtime.pack import map_model_file, read_pack, read_pack_bytes\n"
            f"p = {str(path)!r}; a = read_pack_bytes(map_model_file(p), p); b = read_pack(p)\n"
            "assert a == b and a.labels == ('neg', 'pos'), a\n"
            "print(sorted(m for m in sys.modules if 'cp437' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_non_ascii_member_name_is_a_member_still():
    """Names without the UTF-8 flag read as Latin-1: a foreign member's bytes stay one (unused) member, and the
    pack's own ASCII names are found as before."""
    members = {"albert_edge.json": _settings(), "labels.txt": b"neg\npos\n", "vocab.txt": VOCAB, "rXsumX": b"x"}
    data = _zip_tail(members).replace(b"rXsumX", b"r\x82sum\x82")   # cp437's "é" in a name without the UTF-8 flag
    assert read_tflite_pack(bytes(data), "m.tflite").labels == ("neg", "pos")
