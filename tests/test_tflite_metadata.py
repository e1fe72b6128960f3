"""Standard TFLite metadata: written into every .tflite, read back without TensorFlow, held to the graph.

The MediaPipe client itself is judged in test_mediapipe_compat.py; these tests cover the writer and
our reader on the tiny fixture model (tests/support/runtime_models.py), including the two old/foreign
layouts a reader meets: an albert-edge pack without standard metadata (the format before it) and a
Model-Maker-style file with standard metadata but no albert_edge.json.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from io import BytesIO

import numpy as np
import pytest

from albert_edge.errors import ModelFileError
from albert_edge.runtime.pack import attach_tflite_pack, read_pack_bytes, strip_tflite_pack
from albert_edge.runtime.tflite_metadata import metadata_problems, read_standard_metadata
from tests.support.runtime_models import LABELS, make_pack, numpy_logits, tflite_bytes, weights

TEXTS = ["这家酒店服务很好", "房间太脏了，非常失望", "hello worlds"]


@pytest.fixture(scope="module")
def raw() -> bytes:
    return tflite_bytes(weights())


def _classify(data: bytes, tmp_path, name: str):
    from albert_edge.runtime.classifier import TextClassifier

    path = tmp_path / name
    path.write_bytes(data)
    return TextClassifier.from_file(path)


def test_written_metadata_describes_what_mediapipe_binds(raw):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    data = attach_standard_metadata(raw, make_pack(32))
    meta = read_standard_metadata(strip_tflite_pack(data), "m.tflite")
    assert meta is not None and meta.min_parser_version == "1.1.0"
    assert meta.tokenizer == "wordpiece" and meta.tokenizer_file == "vocab.txt"
    # Metadata name i describes subgraph input i (MediaPipe feeds by that position).
    pairs = dict(zip(meta.input_names, meta.graph_inputs))
    assert pairs == {"ids": "input_ids", "mask": "attention_mask", "segment_ids": "token_type_ids"}
    assert meta.input_shapes == ((1, 32),) * 3 and not any(meta.input_dynamic)
    assert meta.output_names == ("probabilities", "logits") == meta.graph_outputs
    assert meta.labels_files == ("labels.txt", "labels.txt")
    assert meta.associated_files == ("albert_edge.json",)
    members = zipfile.ZipFile(BytesIO(data)).namelist()
    assert set(members) == {"albert_edge.json", "labels.txt", "vocab.txt"}
    assert metadata_problems(meta, {m: b"" for m in members}) == []


def test_rewriting_is_idempotent_and_keeps_one_metadata_buffer(raw):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    once = attach_standard_metadata(raw, make_pack(32))
    twice = attach_standard_metadata(once, make_pack(32, variant="int8_dynamic"))
    assert read_standard_metadata(strip_tflite_pack(twice)).output_names == ("probabilities", "logits")
    assert read_pack_bytes(twice).variant == "int8_dynamic"
    assert abs(len(twice) - len(once)) < 64


def test_our_classifier_reads_the_new_file_and_predicts_as_before(raw, tmp_path):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    old = _classify(attach_tflite_pack(raw, make_pack(32)), tmp_path, "old.tflite")
    new = _classify(attach_standard_metadata(raw, make_pack(32)), tmp_path, "new.tflite")
    a, encs = old.logits_batch(TEXTS)
    b, _ = new.logits_batch(TEXTS)
    np.testing.assert_allclose(a, b, atol=1e-6)
    e = encs[0]
    np.testing.assert_allclose(b[0], numpy_logits(weights(), [e.input_ids], [e.attention_mask], [e.token_type_ids])[0], atol=1e-5)


def test_old_pack_without_standard_metadata_stays_readable(raw):
    pack = read_pack_bytes(attach_tflite_pack(raw, make_pack(32)), "old.tflite")
    assert pack == make_pack(32)
    assert read_standard_metadata(raw) is None


def test_model_maker_style_file_loads_in_our_classifier(raw, tmp_path):
    """Tokenizer + labels in standard metadata only, no albert_edge.json: what other tools write."""
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    data = attach_standard_metadata(raw, make_pack(32), extras=False)
    assert "albert_edge.json" not in zipfile.ZipFile(BytesIO(data)).namelist()
    pack = read_pack_bytes(data, "maker.tflite")
    assert pack.labels == LABELS and pack.max_seq_len == 32 and pack.tokenizer_type == "wordpiece"
    clf = _classify(data, tmp_path, "maker.tflite")
    full = _classify(attach_standard_metadata(raw, make_pack(32)), tmp_path, "full.tflite")
    assert [p.label for p in clf.predict_batch(TEXTS)] == [p.label for p in full.predict_batch(TEXTS)]


def test_metadata_and_settings_that_disagree_fail_in_one_line(raw, tmp_path):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    data = attach_standard_metadata(raw, make_pack(32))
    # Same graph and metadata (inputs fixed at 32), settings claiming 64: one file, two truths.
    forged = attach_tflite_pack(strip_tflite_pack(data), make_pack(64))
    with pytest.raises(ModelFileError) as err:
        read_pack_bytes(forged, "forged.tflite")
    msg = str(err.value)
    assert msg.startswith("forged.tflite: standard metadata disagrees") and "\n" not in msg and "64" in msg
    path = tmp_path / "forged.tflite"
    path.write_bytes(forged)
    proc = subprocess.run([sys.executable, "-m", "albert_edge", "predict", str(path), "好"], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "forged.tflite" in proc.stderr


def test_labels_in_the_metadata_file_must_match_the_settings(raw):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    data = attach_standard_metadata(raw, make_pack(32))
    members = {i.filename: zipfile.ZipFile(BytesIO(data)).read(i) for i in zipfile.ZipFile(BytesIO(data)).infolist()}
    members["labels.txt"] = b"bad\ngood\n"
    buf = BytesIO()
    buf.write(strip_tflite_pack(data))
    with zipfile.ZipFile(buf, "w") as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    with pytest.raises(ModelFileError, match="labels"):
        read_pack_bytes(buf.getvalue(), "m.tflite")


def test_corrupt_metadata_buffer_is_a_model_file_error(raw):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    data = bytearray(attach_standard_metadata(raw, make_pack(32)))
    at = bytes(data).index(b"M001")
    data[at - 4 : at] = b"\xff\xff\xff\x7f"  # root offset of the metadata flatbuffer points far away
    with pytest.raises(ModelFileError, match="m.tflite"):
        read_pack_bytes(bytes(data), "m.tflite")


def _swap_metadata_inputs(data: bytes) -> bytes:
    """The file with metadata names 0 and 1 swapped: a metadata/graph binding error MediaPipe would act on."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    from albert_edge._vendor import tflite_metadata_schema_py_generated as meta_schema

    flat = strip_tflite_pack(data)
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(flat, 0))
    index = next(m.buffer for m in model.metadata if m.name == b"TFLITE_METADATA")
    blob = model.buffers[index].data.tobytes()
    meta = meta_schema.ModelMetadataT.InitFromObj(meta_schema.ModelMetadata.GetRootAs(blob, 0))
    t = meta.subgraphMetadata[0].inputTensorMetadata
    t[0].name, t[1].name = t[1].name, t[0].name
    b = flatbuffers.Builder(0)
    b.Finish(meta.Pack(b), b"M001")
    model.buffers[index].data = np.frombuffer(bytes(b.Output()), np.uint8)
    b = flatbuffers.Builder(0)
    b.Finish(model.Pack(b), b"TFL3")
    return bytes(b.Output()) + data[len(flat):]


def test_inspect_prints_the_metadata_and_flags_a_wrong_input_binding(raw, tmp_path):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    good = tmp_path / "good.tflite"
    good.write_bytes(attach_standard_metadata(raw, make_pack(32)))
    proc = subprocess.run([sys.executable, "-m", "albert_edge", "inspect", str(good)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "input 1: ids -> graph input input_ids [1, 32] (fixed)" in proc.stdout
    assert "output 0: probabilities -> graph output probabilities, labels: labels.txt" in proc.stdout
    assert "tokenizer process unit: wordpiece (vocab.txt)" in proc.stdout and "consistent" in proc.stdout

    bad = tmp_path / "bad.tflite"
    data = _swap_metadata_inputs(good.read_bytes())
    bad.write_bytes(attach_tflite_pack(data, make_pack(32)))
    proc = subprocess.run([sys.executable, "-m", "albert_edge", "inspect", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1 and "DISAGREES: metadata input 'ids' sits on graph input 'attention_mask'" in proc.stdout
    with pytest.raises(ModelFileError, match="bad.tflite: standard metadata disagrees"):
        read_pack_bytes(bad.read_bytes(), "bad.tflite")


def test_sentencepiece_pack_becomes_a_sentencepiece_process_unit(raw):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata
    from albert_edge.runtime.pack import ModelPack

    pack = ModelPack(tokenizer_type="sentencepiece", tokenizer_asset=b"\x0a\x05fake!", do_lower_case=True,
                     max_seq_len=48, labels=LABELS)
    data = attach_standard_metadata(raw, pack)
    meta = read_standard_metadata(strip_tflite_pack(data))
    assert (meta.tokenizer, meta.tokenizer_file, meta.input_shapes[0]) == ("sentencepiece", "spiece.model", (1, 48))
    assert read_pack_bytes(data) == pack


def test_inspect_json_on_a_model_maker_style_file(raw, tmp_path):
    import json

    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    path = tmp_path / "maker.tflite"
    path.write_bytes(attach_standard_metadata(raw, make_pack(32), extras=False))
    proc = subprocess.run([sys.executable, "-m", "albert_edge", "inspect", str(path), "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["albert_edge_pack"] is None and info["problems"] == []
    assert info["standard_metadata"]["inputs"] == {"mask": "attention_mask", "ids": "input_ids", "segment_ids": "token_type_ids"}
    assert info["associated_files"] == ["labels.txt", "vocab.txt"]
