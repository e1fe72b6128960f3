"""Backends: same answers everywhere, inputs bound by name, clear errors for what cannot run."""

from __future__ import annotations

import numpy as np
import pytest
from tests.support.runtime_models import numpy_logits, weights, write_models

from albert_edge.errors import BackendError, ModelFileError
from albert_edge.runtime import backends as B
from albert_edge.runtime.backends import available_backends, open_backend, resolve_backend
from albert_edge.runtime.flatbuffer import OperatorCode, TfliteInfo, inspect_tflite


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("bag"))


def _inputs(seed: int = 1, batch: int = 3, seq: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 40, (batch, seq)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, 4:] = 0
    types = np.zeros_like(ids)
    types[:, 3:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@pytest.mark.parametrize("name", ["litert", "tf", "onnxruntime"])
def test_every_installed_backend_matches_the_numpy_formula(models, name):
    if name not in available_backends():
        pytest.skip(f"{name} not installed")
    path = models["onnx" if name == "onnxruntime" else "tflite"]
    backend = open_backend(path.read_bytes(), str(path), name, num_threads=1)
    x = _inputs()
    got = backend.run(x)["logits"]
    want = numpy_logits(weights(), x["input_ids"], x["attention_mask"], x["token_type_ids"])
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("kind", ["tflite", "onnx"])
def test_inputs_are_bound_by_name_not_position(models, kind):
    backend = open_backend(models[kind].read_bytes(), kind, "auto", num_threads=1)
    x = _inputs()
    forward = backend.run(x)["logits"]
    backward = backend.run(dict(reversed(list(x.items()))))["logits"]
    swapped = backend.run({**x, "attention_mask": x["token_type_ids"], "token_type_ids": x["attention_mask"]})["logits"]
    np.testing.assert_array_equal(forward, backward)
    assert not np.allclose(forward, swapped)


def test_tflite_signature_order_differs_from_contract_order(models):
    # Why binding by name matters: the converter sorts signature inputs alphabetically.
    backend = open_backend(models["tflite"].read_bytes(), "m", "litert", num_threads=1)
    assert backend.input_names != ("input_ids", "attention_mask", "token_type_ids")
    assert set(backend.input_names) == {"input_ids", "attention_mask", "token_type_ids"}


@pytest.mark.parametrize("seq", [1, 5, 31])
def test_tflite_backend_runs_any_sequence_length(models, seq):
    backend = open_backend(models["tflite"].read_bytes(), "m", "litert", num_threads=1)
    x = _inputs(seq=seq)
    x["attention_mask"][:] = 1
    assert backend.run(x)["logits"].shape == (3, 2)


def test_xnnpack_is_on_by_default_and_reported_as_a_delegate_node(models):
    data = models["tflite"].read_bytes()
    on = open_backend(data, "m", "litert", num_threads=1).ops_info()
    off = open_backend(data, "m", "litert", num_threads=1, xnnpack=False).ops_info()
    assert on["xnnpack"] is True and on["delegate_nodes"] >= 1
    assert off["delegate_nodes"] == 0
    assert {"name": "FULLY_CONNECTED", "version": 1} in on["operator_codes"]


def test_thread_count_is_passed_to_both_interpreters(models):
    assert open_backend(models["tflite"].read_bytes(), "m", "litert", num_threads=2).num_threads == 2
    onnx_backend = open_backend(models["onnx"].read_bytes(), "m", "onnxruntime", num_threads=3)
    assert onnx_backend._session.get_session_options().intra_op_num_threads == 3


def test_auto_looks_for_the_tflite_interpreters_in_order_and_stops_at_the_first_installed(monkeypatch):
    # Each look-up of a package that is not imported searches sys.path (0.2-0.4 ms for all of them): the load
    # pays only for the ones it needs.
    asked: list[str] = []

    def installed(top: str) -> bool:
        asked.append(top)
        return top == "tflite_runtime"

    monkeypatch.setattr(B, "_installed", installed)
    assert resolve_backend("tflite", "auto", "m.tflite") == "tflite_runtime"
    assert asked == ["ai_edge_litert", "tflite_runtime"]


def test_auto_picks_litert_for_tflite_and_onnxruntime_for_onnx():
    assert resolve_backend("tflite", "auto", "m") == "litert"
    assert resolve_backend("onnx", "auto", "m") == "onnxruntime"


@pytest.mark.parametrize(
    "kind, name, expected",
    [("onnx", "litert", "needs backend 'onnxruntime'"), ("tflite", "onnxruntime", "cannot run on onnxruntime"), ("tflite", "tvm", "unknown backend")],
)
def test_mismatched_backend_requests_are_explained(kind, name, expected):
    with pytest.raises(BackendError, match=expected):
        resolve_backend(kind, name, "m")


def test_missing_tflite_runtime_module_is_reported_with_install_hint(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *a, **k):
        if name.startswith("tflite_runtime"):
            raise ModuleNotFoundError("No module named 'tflite_runtime'")
        return real(name, *a, **k)

    monkeypatch.setattr(B.importlib, "import_module", fake)
    with pytest.raises(BackendError, match=r"tflite_runtime.*pip install tflite-runtime"):
        B._import_module("tflite_runtime")


def test_tflite_runtime_refuses_numpy_2_plainly():
    info = TfliteInfo(3, (OperatorCode(9, "FULLY_CONNECTED", 1),), 1, 1, ("serving_default",))
    with pytest.raises(BackendError, match="numpy 1.x .* numpy 2.4"):
        B.check_tflite_runtime_compatible(info, "m.tflite", numpy_version="2.4.0")
    B.check_tflite_runtime_compatible(info, "m.tflite", numpy_version="1.26.4")


def test_tflite_runtime_detects_fully_connected_v12_from_dynamic_range_int8():
    tf = pytest.importorskip("tensorflow")

    class Dense(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.constant(np.random.default_rng(0).normal(size=(64, 64)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32)])
        def serve(self, x):
            return {"y": tf.matmul(x, self.w)}

    module = Dense()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    info = inspect_tflite(converter.convert(), "int8.tflite")
    assert OperatorCode(9, "FULLY_CONNECTED", 12) in info.operator_codes
    with pytest.raises(BackendError, match=r"FULLY_CONNECTED v12 \(2.14 supports up to v11\).*LiteRT"):
        B.check_tflite_runtime_compatible(info, "int8.tflite", numpy_version="1.26.4")


def test_tflite_runtime_backend_fails_with_backend_error_not_a_crash(models):
    with pytest.raises(BackendError, match="tflite_runtime"):
        open_backend(models["tflite"].read_bytes(), "m", "tflite_runtime")


def test_onnx_bytes_that_are_not_a_model_raise_model_file_error():
    with pytest.raises(ModelFileError, match="ONNX Runtime refused"):
        open_backend(b"\x08\x07garbage-garbage", "m.onnx", "onnxruntime")


def test_onnx_pack_read_from_bytes_equals_onnxruntime_metadata(models):
    from albert_edge.runtime.pack import pack_from_metadata_props, read_pack

    backend = open_backend(models["onnx"].read_bytes(), "m.onnx", "onnxruntime", num_threads=1)
    assert pack_from_metadata_props(backend.metadata(), "m.onnx") == read_pack(models["onnx"])


def test_tflite_without_any_signature_is_refused():
    tf = pytest.importorskip("tensorflow")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def double(x):
        return x * 2.0

    # Converting a bare concrete function (no trackable object) yields a model without signatures.
    flat = tf.lite.TFLiteConverter.from_concrete_functions([double.get_concrete_function()]).convert()
    with pytest.raises(ModelFileError, match="no 'serving_default' signature"):
        open_backend(flat, "none.tflite", "litert", num_threads=1)


def test_a_checked_load_copies_the_flatbuffer_no_more_and_parses_it_once(models, monkeypatch):
    """The interpreter gets the file's own bytes (pack tail included) and the load-time check's TfliteInfo."""
    from albert_edge.runtime import TextClassifier
    from albert_edge.runtime import flatbuffer as F

    calls = []
    real = F.inspect_tflite
    monkeypatch.setattr(F, "inspect_tflite", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.setattr(B, "inspect_tflite", F.inspect_tflite)
    data = models["tflite"].read_bytes()
    clf = TextClassifier.from_bytes(data, "bag.tflite", num_threads=1)
    assert clf._pool.first._flatbuffer is data and len(calls) == 1
    x = _inputs()
    want = numpy_logits(weights(), x["input_ids"], x["attention_mask"], x["token_type_ids"])
    np.testing.assert_allclose(clf.run_inputs(x), want, atol=1e-5)


class _FakeInterpreter:
    """Records resizes and allocations; ``refuse`` makes the short allocation fail, as a fixed-shape graph does."""

    def __init__(self, shapes, refuse=False):
        self.shapes, self.refuse, self.allocated = [list(s) for s in shapes], refuse, []

    def get_input_details(self):
        return [{"index": i, "shape": np.array(s)} for i, s in enumerate(self.shapes)]

    def resize_tensor_input(self, index, shape):
        self.shapes[index] = list(shape)

    def allocate_tensors(self):
        if self.refuse and self.shapes[0][1] == B.LOAD_SEQ_LEN:
            raise RuntimeError("RESHAPE failed to prepare")
        self.allocated.append([list(s) for s in self.shapes])


def test_interpreter_is_allocated_at_a_short_length_so_the_arena_grows_with_the_texts():
    """Files declare [1, max_seq_len]; allocated at that shape, the batch-one graph held a 128-token arena after a
    25-token answer (record 0293). A graph that refuses the short length is allocated at its declared shape."""
    short = _FakeInterpreter([[1, 128]] * 3)
    B.allocate_short(short)
    assert short.allocated == [[[1, B.LOAD_SEQ_LEN]] * 3]
    fixed = _FakeInterpreter([[1, 128]] * 3, refuse=True)
    B.allocate_short(fixed)
    assert fixed.allocated == [[[1, 128]] * 3]
    batch = _FakeInterpreter([[4, 128]])
    B.allocate_short(batch)
    assert batch.allocated == [[[4, 128]]]

