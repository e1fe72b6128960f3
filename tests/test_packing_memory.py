"""Packing a model file for the app holds few copies of it, and writes the bytes the copying writers wrote.

Why: quantize packs every variant it built (``quantize/pipeline.py``); on a BERT-base-sized model the fp32
files are 390 MiB each, and packing one held five copies of it in TFLite (re-serialised flatbuffer, sliced,
copied to bytes, stripped, archived) and three in ONNX (parsed, re-serialised): that step was the run's peak
(record 0280). The copies are counted with tracemalloc (numpy and bytes allocations are traced), on a
fixture model made large enough that the model's bytes dominate what packing allocates.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from albert_edge.runtime.pack import attach_tflite_pack, read_pack_bytes, strip_tflite_pack
from tests.support.runtime_models import make_pack, onnx_bytes, tflite_bytes, weights

#: Width and depth of the layered fixture: 24 float matrices of 256 KiB, about 6 MiB of weights in buffers of
#: their own, as a real model's are (flatbuffers' writer copies one buffer at a time twice while it packs it).
WIDTH, DEPTH = 256, 24


def _layered_tflite() -> bytes:
    """The fixture classifier (same inputs and ``logits``) with a stack of dense layers: many weight buffers."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(1)
    vocab = weights()["emb"].shape[0]
    spec = tf.TensorSpec([None, None], tf.int32)

    class Layered(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = tf.constant(rng.normal(0, 1, (vocab, WIDTH)).astype(np.float32))
            self.layers = [tf.constant(rng.normal(0, 0.05, (WIDTH, WIDTH)).astype(np.float32)) for _ in range(DEPTH)]
            self.w = tf.constant(rng.normal(0, 0.1, (WIDTH, 2)).astype(np.float32))

        @tf.function(input_signature=[spec, spec, spec])
        def serve(self, input_ids, attention_mask, token_type_ids):
            m = tf.expand_dims(tf.cast(attention_mask, tf.float32), -1)
            h = tf.reduce_sum(tf.gather(self.emb, input_ids + token_type_ids) * m, axis=1)
            for layer in self.layers:
                h = tf.tanh(tf.matmul(h, layer))
            return {"logits": tf.matmul(h, self.w)}

    module = Layered()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    return converter.convert()


@pytest.fixture(scope="module")
def layered() -> bytes:
    return _layered_tflite()


def _peak_copies(fn, data: bytes) -> tuple[bytes, float]:
    """``fn()``'s result and the most it held at once, in copies of ``data`` (``fn`` runs once before, untraced:
    the modules it imports on first use are not the model's copies)."""
    fn()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, (peak - before) / len(data)


def test_tflite_packing_holds_the_builder_and_the_result_only(layered):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    raw = layered
    assert len(raw) > 5e6
    pack = make_pack(32)
    out, copies = _peak_copies(lambda: attach_standard_metadata(raw, pack), raw)
    assert copies < 2.3, f"packing held {copies:.2f} copies of the model"  # the copying writer held 3.05
    # The archive is the one runtime.pack's writer appends, byte for byte.
    assert out == attach_tflite_pack(strip_tflite_pack(out), pack)
    assert read_pack_bytes(out, "m.tflite").labels == pack.labels
    # Packed again (the input already carries a pack): the same bytes, the old pack dropped.
    again, copies = _peak_copies(lambda: attach_standard_metadata(out, pack), out)
    assert again == out and copies < 2.3


def test_model_maker_style_file_is_the_flatbuffer_and_the_members():
    from albert_edge.runtime.pack import attach_tflite_members

    raw = tflite_bytes(weights())
    packed = attach_tflite_pack(raw, make_pack(32))
    members = {"vocab.txt": b"a\nb\n"}
    # From bytes or from a view, packed or not: the pack is replaced by the members.
    for source in (raw, packed, memoryview(packed)):
        out = attach_tflite_members(source, members)
        assert strip_tflite_pack(out) == raw and out.endswith(attach_tflite_members(raw, members)[len(raw):])


def test_onnx_packing_appends_the_metadata_without_parsing_the_model(monkeypatch):
    import onnx

    from albert_edge.convert.onnx_export import attach_onnx_pack, onnx_bytes_with_pack

    rng = np.random.default_rng(1)
    wide = {**weights(), "emb": rng.normal(0, 1, (weights()["emb"].shape[0], 4096)).astype(np.float32),
            "types": rng.normal(0, 0.3, (2, 4096)).astype(np.float32),
            "w": rng.normal(0, 0.1, (4096, 2)).astype(np.float32)}
    raw = onnx_bytes(wide)
    pack = make_pack(32)
    reference = onnx.load_from_string(raw)
    attach_onnx_pack(reference, pack)
    with monkeypatch.context() as m:
        m.setattr(onnx, "load_from_string", lambda *_a, **_k: pytest.fail("the model was parsed"))
        out, copies = _peak_copies(lambda: onnx_bytes_with_pack(raw, pack), raw)
    assert out == reference.SerializeToString()  # what parsing and re-serialising wrote
    assert copies < 1.3, f"packing held {copies:.2f} copies of the model"  # parsing held 2.04


def test_onnx_packing_parses_a_model_that_has_metadata_already():
    import onnx

    from albert_edge.convert.onnx_export import attach_onnx_pack, onnx_bytes_with_pack

    old, new = make_pack(16), make_pack(32)
    raw = onnx_bytes(weights(), old)
    reference = onnx.load_from_string(raw)
    attach_onnx_pack(reference, new)
    out = onnx_bytes_with_pack(raw, new)
    assert out == reference.SerializeToString()
    entries = onnx.load_from_string(out).metadata_props
    assert len({e.key for e in entries}) == len(entries)  # replaced, not appended twice
    assert read_pack_bytes(out, "m.onnx").max_seq_len == 32
