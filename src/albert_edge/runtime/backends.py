"""Interpreters behind one small interface, binding inputs by name.

``Backend.run({"input_ids": ..., ...})`` takes int32 [batch, seq] arrays of any batch and
sequence length (the graphs have dynamic dims) and returns the named outputs. Backends:

* ``litert``         -- ai_edge_litert.interpreter (the interpreter of record), XNNPACK on.
* ``tflite_runtime`` -- legacy 2.14 wheel: built for numpy<2 and predates newer op versions
                        (FULLY_CONNECTED v12 from dynamic-range int8); both are detected up
                        front and explained instead of failing deep in C++.
* ``tf``             -- tensorflow.lite, only if asked for or nothing else is installed.
* ``onnxruntime``    -- for .onnx files, CPU execution provider.

One backend instance wraps one interpreter and is NOT thread-safe; TextClassifier pools them.
"""

from __future__ import annotations

import importlib
import importlib.util
import operator
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from albert_edge.errors import BackendError, ModelFileError
from albert_edge.runtime.flatbuffer import OperatorCode, TfliteInfo, inspect_tflite, unsupported_ops
from albert_edge.runtime.pack import MappedModel, model_kind, tflite_flatbuffer_view

SIGNATURE_KEY = "serving_default"
TFLITE_BACKENDS = ("litert", "tflite_runtime", "tf")
ONNX_BACKENDS = ("onnxruntime",)
BACKEND_NAMES = ("auto", *TFLITE_BACKENDS, *ONNX_BACKENDS)

# Highest op versions tflite_runtime 2.14's kernels accept, for the ops where our exports are known
# to exceed them: TF 2.21's converter emits FULLY_CONNECTED v12 for dynamic-range int8 (a test
# proves it). Extend the table when another op version is found to be rejected.
TFLITE_RUNTIME_214_MAX_VERSIONS: dict[str, int] = {"FULLY_CONNECTED": 11}

_TFLITE_MODULES = {
    "litert": ("ai_edge_litert.interpreter", "pip install ai-edge-litert"),
    "tflite_runtime": ("tflite_runtime.interpreter", "pip install tflite-runtime (needs numpy<2)"),
    "tf": ("tensorflow.lite", "pip install tensorflow-cpu"),
}


# More kernel threads than any phone or server has cores; beyond it a request is a mistake.
MAX_NUM_THREADS = 256


def default_num_threads() -> int:
    """All cores, capped at 4 to leave headroom for the app's own threads."""
    return max(1, min(4, os.cpu_count() or 1))


def checked_num_threads(num_threads: int | None) -> int:
    """``num_threads`` (default: ``default_num_threads()``) within 1..MAX_NUM_THREADS, else BackendError.

    The upper bound is not a tuning limit: LiteRT given 100,000 threads crashes at exit and ONNX
    Runtime hangs creating them, so an absurd value must be refused before it reaches them.
    """
    if num_threads is None:
        return default_num_threads()
    try:
        count = operator.index(num_threads)
    except TypeError:
        count = 0
    if isinstance(num_threads, bool) or not 1 <= count <= MAX_NUM_THREADS:
        raise BackendError(f"num_threads is {num_threads!r}, expected an int in 1..{MAX_NUM_THREADS}")
    return count


class Backend(ABC):
    """One interpreter holding one model; inputs and outputs are addressed by name."""

    name: str
    num_threads: int
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]

    source: str

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on int32 [batch, seq] inputs (extra names the graph lacks are ignored).

        The one place where interpreter errors become BackendError: LiteRT raises RuntimeError
        or ValueError ("gather index out of bounds", "unsupported zero-point value" from
        XNNPACK's prepare at a new shape), ONNX Runtime its own untyped exceptions. Either
        would otherwise reach the user as a traceback from deep inside the interpreter.
        """
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise BackendError(f"{self.source}: graph input(s) {missing} were not provided")
        try:
            return self._run(inputs)
        except Exception as exc:  # noqa: BLE001 - interpreters raise untyped errors for bad graphs
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise BackendError(f"{self.source}: {self.name} failed while running the model ({message}); "
                               "the file is corrupt or its pack does not match its graph") from None

    @abstractmethod
    def _run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The interpreter call itself, with every input present."""

    def ops_info(self) -> dict[str, Any]:
        """What the interpreter says about the graph: op census, delegated nodes (when exposed)."""
        return {"backend": self.name, "num_threads": self.num_threads}


def _import_module(backend: str) -> Any:
    module_name, install = _TFLITE_MODULES[backend]
    try:
        if backend == "tf":
            # Only reached when asked for by name or when no lighter interpreter is installed.
            return importlib.import_module("tensorflow").lite.Interpreter
        return importlib.import_module(module_name).Interpreter
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"backend {backend!r} needs {module_name}, which is not importable ({exc}); install it: {install}") from None


def check_tflite_runtime_compatible(info: TfliteInfo, source: str, numpy_version: str = np.__version__) -> None:
    """Raise BackendError if tflite_runtime 2.14 cannot run this model in this environment."""
    if int(numpy_version.split(".")[0]) >= 2:
        raise BackendError(
            f"{source}: tflite_runtime 2.14 is built against numpy 1.x and this environment has numpy "
            f"{numpy_version}; use the default LiteRT backend (pip install ai-edge-litert) or numpy<2"
        )
    too_new: list[OperatorCode] = unsupported_ops(info, TFLITE_RUNTIME_214_MAX_VERSIONS)
    if too_new:
        listed = ", ".join(f"{op.name} v{op.version} (2.14 supports up to v{TFLITE_RUNTIME_214_MAX_VERSIONS[op.name]})" for op in too_new)
        raise BackendError(
            f"{source}: tflite_runtime 2.14 cannot run this model: it uses {listed}; newer op versions come "
            "from recent converters (e.g. dynamic-range int8); use the LiteRT backend (ai-edge-litert)"
        )


class TfliteBackend(Backend):
    """A TFLite interpreter driven through its ``serving_default`` signature runner."""

    def __init__(
        self,
        data: bytes,
        source: str,
        backend: str = "litert",
        num_threads: int | None = None,
        xnnpack: bool = True,
        info: TfliteInfo | None = None,
    ) -> None:
        """``info``: the structure check of exactly these bytes, when the caller already ran it
        (``consistency.check_model_consistency`` does); otherwise it runs here."""
        if backend not in TFLITE_BACKENDS:
            raise BackendError(f"backend {backend!r} cannot run .tflite files; choose one of {list(TFLITE_BACKENDS)}")
        self.name = backend
        self.source = source
        self.num_threads = checked_num_threads(num_threads)
        self.info = info if info is not None else inspect_tflite(tflite_flatbuffer_view(data), source)
        if backend == "tflite_runtime":
            check_tflite_runtime_compatible(self.info, source)
        interpreter_cls = _import_module(backend)
        kwargs: dict[str, Any] = {"num_threads": self.num_threads}
        if not xnnpack:
            resolver = importlib.import_module(interpreter_cls.__module__).OpResolverType
            kwargs["experimental_op_resolver_type"] = resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self.xnnpack = xnnpack
        # The whole file, pack included: the interpreter ignores bytes after the flatbuffer (the
        # metadata associated-files convention), and a stripped copy cost 2.5-10 ms per load.
        # Hold our own reference: the interpreter reads the buffer for its whole life.
        # A mapped file (``from_file``) is mapped again by the interpreter from its path, as LiteRT's own
        # ``model_path`` does: no copy of the weights in Python; the mapping stays held for the pool.
        by_path = isinstance(data, MappedModel) and data.unchanged()
        self._flatbuffer = data if by_path else bytes(data)
        model = {"model_path": data.path} if by_path else {"model_content": self._flatbuffer}   # type: ignore[attr-defined]
        try:
            with warnings.catch_warnings():
                # tf.lite.Interpreter warns that it is deprecated in favour of LiteRT; the user chose it.
                warnings.simplefilter("ignore", UserWarning)
                self._interpreter = interpreter_cls(**model, **kwargs)
            # Default delegates (XNNPACK) are applied at the first allocation: do it now so that
            # ops_info() is accurate and a model the kernels reject fails here, not mid-request.
            allocate_short(self._interpreter)
            signatures = self._interpreter.get_signature_list()
        except (ValueError, RuntimeError) as exc:
            message = " ".join(str(exc).split())
            if "Didn't find op for builtin opcode" in message or "op version" in message.lower():
                raise BackendError(f"{source}: backend {backend!r} cannot run this model: {message}") from None
            raise ModelFileError(f"{source}: the TFLite interpreter refused the model ({message})") from None
        if by_path and not data.unchanged():   # type: ignore[attr-defined]
            # The path was replaced while the interpreter opened it: it may have loaded unchecked bytes.
            raise ModelFileError(f"{source}: the model file changed while it was being loaded; load it again")
        if by_path:
            data.release_pages()   # type: ignore[attr-defined]  # the interpreter maps the file itself
        # Our exports use serving_default; a third-party file with one differently named
        # signature is still unambiguous, so accept it rather than fail.
        key = SIGNATURE_KEY if SIGNATURE_KEY in signatures else (next(iter(signatures)) if len(signatures) == 1 else None)
        if key is None:
            raise ModelFileError(f"{source}: TFLite model has no {SIGNATURE_KEY!r} signature (found {sorted(signatures)}); "
                                 "inputs are bound by signature name, so one is required")
        self.signature_key = key
        self._runner = self._interpreter.get_signature_runner(key)
        self.input_names = tuple(signatures[key]["inputs"])
        self.output_names = tuple(signatures[key]["outputs"])
        # A batch-one graph (GraphOptions(batch_one=True), or any [1, seq] signature) reshapes with
        # constants: fed [3, seq] it would mix the rows, so a batch runs row by row instead.
        details = self._runner.get_input_details().values()
        self.batch_one = all(len(d["shape_signature"]) == 2 and d["shape_signature"][0] == 1 for d in details)

    def _run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {n: np.ascontiguousarray(inputs[n], dtype=np.int32) for n in self.input_names}
        batch = feed[self.input_names[0]].shape[0] if feed[self.input_names[0]].ndim == 2 else 1
        if self.batch_one and batch > 1:
            rows = [self._invoke({n: v[i : i + 1] for n, v in feed.items()}) for i in range(batch)]
            return {k: np.concatenate([r[k] for r in rows], axis=0) for k in rows[0]}
        return self._invoke(feed)

    def _invoke(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        # The runner resizes every input to the fed shape and re-allocates only when it changed.
        return {k: np.asarray(v) for k, v in self._runner(**feed).items()}

    def ops_info(self) -> dict[str, Any]:
        """Op census from the flatbuffer plus the interpreter's node list (delegate nodes included)."""
        info = super().ops_info()
        info["xnnpack"] = self.xnnpack
        info["operator_codes"] = [{"name": op.name, "version": op.version} for op in self.info.operator_codes]
        try:
            # Private, but the only node-level view (delegate nodes included) LiteRT exposes.
            nodes = [d["op_name"] for d in self._interpreter._get_ops_details()]
        except (AttributeError, RuntimeError, ValueError):
            return info
        census: dict[str, int] = {}
        for name in nodes:
            census[name] = census.get(name, 0) + 1
        info["nodes"] = census
        info["delegate_nodes"] = sum(count for name, count in census.items() if "DELEGATE" in name.upper())
        return info


#: The text length an interpreter is first allocated at (record 0293).
LOAD_SEQ_LEN = 8


def allocate_short(interpreter: Any) -> None:
    """``allocate_tensors()`` with every ``[1, seq]`` input resized to ``LOAD_SEQ_LEN`` first; a graph that refuses
    that length is allocated at its declared shapes, as before.

    Why: files declare ``[1, max_seq_len]`` (MediaPipe's fixed length) and the batch-one graph sizes its whole
    arena when it is allocated, so an app answering a 25-token text held the arena of 128 tokens (the sample's
    int8_fc: 12.95 MiB of its own after the first answer, 11.41 allocated short; at 128 tokens the same 12.93).
    Every call resizes to its text's length anyway, so the first call pays one allocation either way.
    """
    details = interpreter.get_input_details()
    shapes = [[int(x) for x in d["shape"]] for d in details]
    if details and all(len(shape) == 2 and shape[0] == 1 and shape[1] > LOAD_SEQ_LEN for shape in shapes):
        try:
            for d in details:
                interpreter.resize_tensor_input(d["index"], [1, LOAD_SEQ_LEN])
            interpreter.allocate_tensors()
            return
        except (ValueError, RuntimeError):
            for d, shape in zip(details, shapes):
                interpreter.resize_tensor_input(d["index"], shape)
    interpreter.allocate_tensors()


class OnnxBackend(Backend):
    """An ONNX Runtime session on the CPU execution provider."""

    def __init__(self, data: bytes, source: str, num_threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise BackendError(f"backend 'onnxruntime' is not importable ({exc}); install it: pip install onnxruntime") from None
        self.name = "onnxruntime"
        self.source = source
        self.num_threads = checked_num_threads(num_threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.num_threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # ONNX Runtime takes bytes or a path: a mapped file by its path while it is still the checked file.
        by_path = isinstance(data, MappedModel) and data.unchanged()
        model = data.path if by_path else bytes(data)   # type: ignore[attr-defined]
        try:
            self._session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - ORT raises its own untyped exceptions for bad bytes
            message = " ".join(str(exc).split())[:300]
            raise ModelFileError(f"{source}: ONNX Runtime refused the model ({message})") from None
        if by_path and not data.unchanged():   # type: ignore[attr-defined]
            raise ModelFileError(f"{source}: the model file changed while it was being loaded; load it again")
        if by_path:
            data.release_pages()   # type: ignore[attr-defined]  # ONNX Runtime has read the file itself
        self._dtypes = {i.name: (np.int64 if i.type == "tensor(int64)" else np.int32) for i in self._session.get_inputs()}
        self.input_names = tuple(self._dtypes)
        self.output_names = tuple(o.name for o in self._session.get_outputs())

    def metadata(self) -> dict[str, str]:
        return dict(self._session.get_modelmeta().custom_metadata_map)

    def _run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {n: np.ascontiguousarray(inputs[n], dtype=self._dtypes[n]) for n in self.input_names}
        return dict(zip(self.output_names, self._session.run(list(self.output_names), feed)))

    def ops_info(self) -> dict[str, Any]:
        info = super().ops_info()
        info["providers"] = self._session.get_providers()
        return info


def _installed(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def available_backends() -> list[str]:
    """Backends whose interpreter package is installed here (found, not imported: no TensorFlow load)."""
    found = [name for name, (module_name, _) in _TFLITE_MODULES.items() if _installed(module_name.split(".")[0])]
    if _installed("onnxruntime"):
        found.append("onnxruntime")
    return found


def resolve_backend(kind: str, backend: str, source: str) -> str:
    """Pick the concrete backend for a model kind ("tflite" | "onnx") and a requested name."""
    if backend not in BACKEND_NAMES:
        raise BackendError(f"unknown backend {backend!r}; expected one of {list(BACKEND_NAMES)}")
    if kind == "onnx":
        if backend not in ("auto", "onnxruntime"):
            raise BackendError(f"{source}: an .onnx model needs backend 'onnxruntime', not {backend!r}")
        return "onnxruntime"
    if backend == "onnxruntime":
        raise BackendError(f"{source}: a .tflite model cannot run on onnxruntime; use litert, tflite_runtime or tf")
    if backend != "auto":
        return backend
    # The first installed one, looked for in order: a package not imported yet costs a search of sys.path.
    for name in TFLITE_BACKENDS:
        if _installed(_TFLITE_MODULES[name][0].split(".")[0]):
            return name
    raise BackendError(f"{source}: no TFLite interpreter is installed; pip install ai-edge-litert")


def open_backend(
    data: bytes,
    source: str = "<bytes>",
    backend: str = "auto",
    num_threads: int | None = None,
    xnnpack: bool = True,
    info: TfliteInfo | None = None,
) -> Backend:
    """An interpreter for the model in ``data`` (.tflite or .onnx, detected from the bytes).

    ``info`` is the flatbuffer's structure check when the caller already ran it on ``data``.
    """
    kind = model_kind(data)
    if kind == "unknown":
        raise ModelFileError(f"{source}: not a model file (neither a TFLite flatbuffer 'TFL3' nor an ONNX protobuf)")
    name = resolve_backend(kind, backend, source)
    if name == "onnxruntime":
        return OnnxBackend(data, source, num_threads)
    return TfliteBackend(data, source, name, num_threads, xnnpack, info)
