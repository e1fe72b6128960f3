"""How ``quantize/builds.py`` uses the converter's child process (issue #39: auto on a BERT-base-sized model
within 4 GB for the whole process tree): from LARGE_WEIGHTS_BYTES up fp32 is converted alone, the child
stopped, the rest collected and the child stopped again before ONNX is built, and fp32's file is sent only
with the recipes that read it; smaller models queue every conversion at once and keep the child (record 0250).

The child is replaced by a recorder (no conversion runs): what is checked is which calls were queued with
which arguments and when the child was stopped, not the converter.
"""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from albert_edge.quantize import builds
from albert_edge.quantize.builds import CONVERTED_ALONE, VariantBuilds
from albert_edge.quantize.calibration import CalibrationSet
from albert_edge.quantize.tflite_quant import VARIANTS


class _Census:
    def to_dict(self) -> dict:
        return {}


def _recording_child(monkeypatch) -> list[tuple]:
    """Replace the child: every call and every stop lands in the returned list, in order."""
    events: list[tuple] = []

    def start(fn, origin, *args, float_model=None, **kwargs):
        name = "fp32" if fn.__name__ == "convert_fp32" else args[0]
        events.append(("queued", name, float_model, origin if isinstance(origin, str) else "weights"))
        done: Future = Future()
        done.set_result(f"{name}-bytes".encode())
        return done

    def call(fn, origin, name, *args, **kwargs):
        events.append(("converted", name, origin if isinstance(origin, str) else "weights"))
        return f"{name}-bytes".encode()

    def result(future):
        events.append(("collected", future.result().decode()))
        return future.result()

    monkeypatch.setattr("albert_edge.convert.child_process.start_in_child", start)
    monkeypatch.setattr("albert_edge.convert.child_process.call_in_child", call)
    monkeypatch.setattr("albert_edge.convert.child_process.result", result)
    monkeypatch.setattr("albert_edge.convert.child_process.shutdown", lambda: events.append(("child stopped",)))
    monkeypatch.setattr("albert_edge.quantize.census.census_tflite_variant", lambda data: _Census())
    return events


def test_small_weights_queue_every_conversion_at_once_and_keep_the_child(monkeypatch):
    """Below the limit the child converts fp32 and the recipes behind it while this process works; it is kept
    for a later conversion (a fresh child costs a TensorFlow import)."""
    events = _recording_child(monkeypatch)
    b = VariantBuilds(_weights(1000), ["dynamic_int8", "int8_fc"], [], ["tflite"], CalibrationSet((), "-"), None,
                      lambda line: None)
    assert events == [("queued", "fp32", None, "weights"), ("queued", "dynamic_int8", None, "weights"),
                      ("queued", "int8_fc", None, "weights")]
    assert [r.name for r in b.in_order()] == ["fp32", "dynamic_int8", "int8_fc"]
    assert ("child stopped",) not in events


def test_fp32_file_goes_to_the_child_only_with_the_recipes_that_read_it(monkeypatch):
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    events = _recording_child(monkeypatch)
    VariantBuilds(_weights(LARGE_WEIGHTS_BYTES), ["dynamic_int8", "int8_fc", "fp16"], [], ["tflite"],
                  CalibrationSet((), "-"), None, lambda line: None)
    sent = {event[1]: event[2] for event in events if event[0] == "queued"}
    assert sent == {"dynamic_int8": None, "fp16": None, "int8_fc": b"fp32-bytes"}  # int8_fc reads its op kinds
    assert CONVERTED_ALONE <= set(VARIANTS) and "int8_fc" not in CONVERTED_ALONE
    assert not CONVERTED_ALONE & set(builds.EDITS_OF)  # an edit reads the file it edits


@pytest.mark.slow  # two TFLite conversions of a small graph in TensorFlow
def test_dynamic_int8_converted_without_the_fp32_file_is_the_same_file(tmp_path):
    """``CONVERTED_ALONE`` is true of tflite_variant: dynamic_int8 with and without ``float_model``, same bytes."""
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.quantize.tflite_quant import tflite_variant

    config = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    weights = random_weights(config, num_labels=2, seed=0)
    fp32 = tflite_variant(weights, "fp32")
    assert tflite_variant(weights, "dynamic_int8") == tflite_variant(weights, "dynamic_int8", float_model=fp32)


def _weights(nbytes: int):
    from types import SimpleNamespace

    return SimpleNamespace(tensors={"table": SimpleNamespace(nbytes=nbytes, shape=(nbytes // 4,), dtype="float32")})


def _read_again(monkeypatch, events: list, tensors: dict | None = None) -> None:
    """``load_checkpoint`` replaced: the read lands in ``events`` and gives ``tensors`` (else one like ``_weights``)."""
    from types import SimpleNamespace

    def load(path, verify_checksums=True):
        events.append(("weights read again", path))
        return SimpleNamespace(tensors=tensors if tensors is not None else _weights(builds.LARGE_WEIGHTS_BYTES).tensors)

    monkeypatch.setattr("albert_edge.model.load_checkpoint", load)


def test_auto_leaves_calibrated_recipes_out_from_the_size_limit_up_and_says_so():
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES, left_out_by_size

    names = ["dynamic_int8", "dynamic_int8_col", "int8_fc"]
    kept, lines = left_out_by_size(names, _weights(LARGE_WEIGHTS_BYTES), "auto", named=False)
    assert kept == ["dynamic_int8", "dynamic_int8_col"]
    assert list(lines) == ["int8_fc"]
    assert lines["int8_fc"].startswith("tflite int8_fc: left out (weights 100 MiB >= 100 MiB")
    assert "--variants int8_fc" in lines["int8_fc"]
    assert left_out_by_size(names, _weights(LARGE_WEIGHTS_BYTES - 1), "auto", named=False) == (names, {})


def test_the_report_does_not_say_a_left_out_recipe_read_the_calibration_texts():
    """calibration.used_by names what read the texts in this run: int8_fc left out by size is not among them."""
    from albert_edge.quantize.options import QuantizeOptions
    from albert_edge.quantize.pipeline import calibration_uses

    options = QuantizeOptions(mode="auto", formats="tflite")
    assert "int8_fc" in calibration_uses(options)
    assert calibration_uses(options, ["int8_fc"]) == ["the fallback searches"]


def test_named_variants_and_other_modes_are_built_whatever_the_size():
    from albert_edge.quantize.builds import left_out_by_size

    big = _weights(2**31)
    assert left_out_by_size(["int8_fc"], big, "auto", named=True) == (["int8_fc"], {})
    assert left_out_by_size(["int8_fc", "int8_full"], big, "int8", named=False) == (["int8_fc", "int8_full"], {})


def test_large_weights_are_converted_and_the_child_stopped_before_onnx_is_built(monkeypatch):
    """From LARGE_WEIGHTS_BYTES up the converter's peak and this process's ONNX builds never overlap; the edit of
    a collected file (dynamic_int8_col of dynamic_int8) is still made from it, after the ONNX builds."""
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    events = _recording_child(monkeypatch)
    monkeypatch.setattr("albert_edge.convert.onnx_export.onnx_model_bytes",
                        lambda weights, task=None: events.append(("onnx built",)) or b"onnx")
    monkeypatch.setattr("albert_edge.quantize.census.census_onnx_variant", lambda data: {})
    edits = []
    monkeypatch.setattr("albert_edge.quantize.tflite_quant.tflite_variant",
                        lambda weights, name, *a, built=None, **k: edits.append((name, dict(built))) or b"col")
    _read_again(monkeypatch, events)
    b = VariantBuilds(_weights(LARGE_WEIGHTS_BYTES), ["dynamic_int8", "dynamic_int8_col"], [], ["tflite", "onnx"],
                      CalibrationSet((), "-"), None, lambda line: None, checkpoint="/models/bert")
    b.build_onnx()
    # fp32 first, alone in its child; the rest in a fresh one; the child reads the checkpoint itself (no pickled
    # weights) and gets no fp32 file with dynamic_int8; this process reads its weights again before ONNX
    assert events == [("converted", "fp32", "/models/bert"), ("child stopped",),
                      ("queued", "dynamic_int8", None, "/models/bert"),
                      ("collected", "dynamic_int8-bytes"), ("child stopped",), ("weights read again", "/models/bert"),
                      ("onnx built",)]
    assert [r.name for r in b.in_order()] == ["fp32", "dynamic_int8", "dynamic_int8_col", "fp32"]
    assert edits == [("dynamic_int8_col", {"dynamic_int8": b"dynamic_int8-bytes"})]


def test_large_weights_leave_this_process_while_the_child_converts(monkeypatch):
    """The child reads the checkpoint itself, so this process's copy of the weights is not held beside the
    converter's peak: emptied before fp32's conversion, read again once the conversions are collected."""
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    events = _recording_child(monkeypatch)
    weights = _weights(LARGE_WEIGHTS_BYTES)
    held = []
    monkeypatch.setattr("albert_edge.convert.child_process.call_in_child",
                        lambda fn, origin, name, *a, **k: held.append(len(weights.tensors)) or b"fp32-bytes")
    _read_again(monkeypatch, events)
    b = VariantBuilds(weights, ["dynamic_int8"], [], ["tflite"], CalibrationSet((), "-"), None, lambda line: None,
                      checkpoint="/models/bert")
    assert held == [0] and not weights.tensors  # nothing held while fp32 converts, nor while the rest do
    b.build_onnx()
    assert events[-1] == ("weights read again", "/models/bert") and weights.tensors["table"].shape
    b.build_onnx()
    assert [e for e in events if e[0] == "weights read again"] == [("weights read again", "/models/bert")]


def test_a_checkpoint_replaced_during_the_conversions_is_refused(monkeypatch):
    from albert_edge.errors import CheckpointError
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    _recording_child(monkeypatch)
    _read_again(monkeypatch, [], tensors=_weights(LARGE_WEIGHTS_BYTES * 2).tensors)
    b = VariantBuilds(_weights(LARGE_WEIGHTS_BYTES), ["dynamic_int8"], [], ["tflite"], CalibrationSet((), "-"), None,
                      lambda line: None, checkpoint="/models/bert")
    with pytest.raises(CheckpointError, match="^/models/bert: the checkpoint changed while quantize was converting"):
        b.build_onnx()


def test_small_weights_still_build_onnx_while_the_child_converts(monkeypatch):
    events = _recording_child(monkeypatch)
    monkeypatch.setattr("albert_edge.convert.onnx_export.onnx_model_bytes",
                        lambda weights, task=None: events.append(("onnx built",)) or b"onnx")
    monkeypatch.setattr("albert_edge.quantize.census.census_onnx_variant", lambda data: {})
    b = VariantBuilds(_weights(1000), ["dynamic_int8"], [], ["tflite", "onnx"], CalibrationSet((), "-"), None,
                      lambda line: None)
    b.build_onnx()
    assert events[-1] == ("onnx built",) and ("collected", "dynamic_int8-bytes") not in events


@pytest.mark.slow  # one TFLite conversion of a sample-sized graph
def test_a_census_leaves_no_freed_heap_resident(tmp_path):
    """The census of a TFLite file returns what XNNPACK packed: the sample-sized fp32 file's census leaves
    under its own size resident (without the trim, 3x the file stayed)."""
    import psutil

    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.quantize.tflite_quant import tflite_variant

    config = AlbertConfig(vocab_size=21128, embedding_size=128, hidden_size=312, num_hidden_layers=4,
                          num_attention_heads=12, intermediate_size=1248, max_position_embeddings=512)
    data = tflite_variant(random_weights(config, num_labels=2, seed=0), "fp32")
    tiny = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    warm_up = tflite_variant(random_weights(tiny, num_labels=2, seed=0), "fp32")
    b = VariantBuilds.__new__(VariantBuilds)
    me = psutil.Process()
    b._tflite_result("fp32", lambda: warm_up)  # LiteRT and XNNPACK loaded: not the census's own memory
    before = me.memory_info().rss
    b._tflite_result("fp32", lambda: data)
    assert me.memory_info().rss - before < len(data) // 2, (me.memory_info().rss - before) >> 20


def test_small_weights_and_weights_not_read_from_a_path_are_sent_to_the_child(monkeypatch):
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    events = _recording_child(monkeypatch)
    VariantBuilds(_weights(1000), ["dynamic_int8"], [], ["tflite"], CalibrationSet((), "-"), None,
                  lambda line: None, checkpoint="/models/small")
    VariantBuilds(_weights(LARGE_WEIGHTS_BYTES), ["dynamic_int8"], [], ["tflite"], CalibrationSet((), "-"), None,
                  lambda line: None)
    assert [e for e in events if e[0] in ("converted", "queued")] == [
        ("queued", "fp32", None, "weights"), ("queued", "dynamic_int8", None, "weights"),
        ("converted", "fp32", "weights"), ("queued", "dynamic_int8", None, "weights")]


@pytest.mark.slow  # two quantize runs of a tiny checkpoint, each converting in a child process
def test_the_large_weights_route_writes_the_same_files(tmp_path, monkeypatch):
    """The child reading the checkpoint itself, the order and the early stop change no byte of what is written."""
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.model.hf import write_hf_checkpoint
    from albert_edge.quantize.pipeline import quantize_checkpoint
    from benchmarks.suites.cost_growth import SAMPLE

    config = AlbertConfig(vocab_size=21128, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (tmp_path / "ckpt" / "vocab.txt").write_bytes((SAMPLE / "vocab.txt").read_bytes())
    files = {}
    for route, limit in (("pickled", 2**40), ("read in the child", 0)):
        monkeypatch.setattr(builds, "LARGE_WEIGHTS_BYTES", limit)
        quantize_checkpoint(str(tmp_path / "ckpt"), tmp_path / route, None, mode="dynamic", labels=["neg", "pos"],
                            max_seq_len=32, eval_tsv=str(SAMPLE / "dev.tsv"), max_eval_examples=64)
        files[route] = {p.name: p.read_bytes() for p in sorted((tmp_path / route / "variants").iterdir())}
    assert files["pickled"].keys() == files["read in the child"].keys() and "dynamic_int8.tflite" in files["pickled"]
    assert files["pickled"] == files["read in the child"]


@pytest.mark.slow  # one TFLite conversion of a small graph through a SavedModel
def test_weights_read_for_one_conversion_are_emptied_once_the_saved_model_is_written(monkeypatch):
    """The child's own copy of the weights leaves before convert(): the same flatbuffer, no tensors after."""
    from albert_edge.convert import tflite_export
    from albert_edge.model import AlbertConfig, random_weights

    config = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    kept = random_weights(config, num_labels=2, seed=0)
    spent = random_weights(config, num_labels=2, seed=0)
    setattr(spent, tflite_export.SPENT_AFTER_EXPORT, True)
    both = [tflite_export.convert_to_tflite_bytes(w, via_saved_model=True) for w in (kept, spent)]
    assert both[0] == both[1]
    assert kept.tensors and not spent.tensors
