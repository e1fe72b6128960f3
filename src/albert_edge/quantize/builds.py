"""Build a run's variants: TFLite conversions in the child process, queued, while this process works.

Why: LiteRT's converter is single-threaded and holds the GIL (``convert.child_process``); on a 2-core
machine its 25-40 s of conversions per auto run left a core idle while it ran, and judging waited for
all of them. Here fp32 is converted first (every other variant is judged and timed against it), the
other TFLite conversions are queued behind it in the child at once (they read fp32 there), ONNX variants
are built in this process meanwhile, and ``in_order`` hands the variants over one by one as each is
ready, so quantize runs the ONNX variants on their first judge rows while the child converts fp32, and
judges while the child still converts int8_fc (records 0190, 0250).

A variant made by editing another's file (``dynamic_int8_col`` from ``dynamic_int8``, ``dynamic_int8_col_sq``
from ``dynamic_int8_col``) is made here
from that file as soon as it arrives: no second conversion of the same graph.

From 100 MiB of weights up (``LARGE_WEIGHTS_BYTES``) the conversions are collected and the child stopped
before ONNX is built: the converter leaves its peak resident in the process that ran it (2.4-3.7 GB on a
BERT-base-sized model, records 0240 and 0270), and the judging, fallback and timing steps that follow
never need it; a later conversion (a fallback step, the size search) starts a fresh child. Smaller
models keep the child (a fresh one costs a TensorFlow import: seconds, for the sample's megabytes). On the
large route fp32's file goes to the child only with the recipes that read it (not ``CONVERTED_ALONE``): it is pickled
here and unpickled there, two copies of it per call; and when the child reads the checkpoint itself, this
process's weights wait on disk until the conversions are collected (``_weights_to_disk``, record 0280).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

from albert_edge.convert.tflite_export import SAVED_MODEL_ROUTE_BYTES
from albert_edge.errors import AlbertEdgeError
from albert_edge.model.weights import weights_nbytes
from albert_edge.neighbours.freed_memory import release_freed_memory
from albert_edge.quantize.calibration import CalibrationSet
from albert_edge.quantize.report import VariantResult


def prepare_child(tf1_checkpoint: str | None) -> None:
    """The converter child's first call, queued before any conversion: import TensorFlow there while this
    process reads the checkpoint and builds ONNX, and verify a TF1 checkpoint's data checksums with
    TensorFlow's reader (``model.tf1.verify_tf1_checksums``), which this process's read skipped so as never
    to import TensorFlow itself (record 0250)."""
    from albert_edge.model.tf1 import verify_tf1_checksums

    try:
        import tensorflow  # noqa: F401 - the converter's import, done before the first conversion is asked for
    except ImportError:
        return  # the conversion itself says what to install
    if tf1_checkpoint is not None:
        verify_tf1_checksums(tf1_checkpoint)


#: Variants made here by editing an earlier variant's file: name -> the variant it edits.
EDITS_OF = {"dynamic_int8_col": "dynamic_int8", "dynamic_int8_col_sq": "dynamic_int8_col"}
#: Recipes that are one converter run and read nothing of fp32's file (``tflite_variant``): queued without it.
#: (409 MB on BERT-base: pickled in this process and received beside the converter's peak in the child.)
CONVERTED_ALONE = frozenset({"fp16", "dynamic_int8", "int8_full", "int16x8"})


#: From this many bytes of weights up (the SavedModel route's threshold, ``convert.tflite_export``), auto's
#: default list leaves out the calibrated TFLite recipes (``int8_fc``): their conversion is the
#: QuantizationDebugger's selective path, which keeps the concrete-function route (one weights copy more,
#: record 0240), and the calibrator runs every calibration text through the float graph in TensorFlow. On
#: BERT-base the child peaked at 5.3 GB on it (the weights and fp32 file pickled with the call), over #39's
#: 4 GB for the whole command (record 0270).
LARGE_WEIGHTS_BYTES = SAVED_MODEL_ROUTE_BYTES


def left_out_by_size(tflite: Sequence[str], weights: Any, mode: str,
                     named: bool) -> tuple[list[str], dict[str, str]]:
    """(the TFLite names auto builds, each name it leaves out by the weights' size -> its report line).

    Only auto's default list is cut: names given with ``--variants`` (``named``) and the other modes'
    lists are built whatever the size, so a user who wants ``int8_fc`` on a large model asks for it.
    """
    from albert_edge.quantize.tflite_quant import VARIANTS

    size = weights_nbytes(weights)
    if mode != "auto" or named or size < LARGE_WEIGHTS_BYTES:
        return list(tflite), {}
    cut = {n: (f"tflite {n}: left out (weights {size / 2**20:,.0f} MiB >= {LARGE_WEIGHTS_BYTES / 2**20:,.0f} MiB: "
               "a calibrated conversion of a model this size peaks above 4 GB in the converter alone; "
               f"--variants {n} builds it)") for n in tflite if n in VARIANTS and VARIANTS[n].calibrated}
    return [n for n in tflite if n not in cut], cut


def convert_variant(origin: Any, variant: str, *args: Any, **kwargs: Any) -> bytes:
    """``tflite_variant`` of ``origin``: the weights, or the path of a checkpoint, read here (in the child)."""
    from albert_edge.quantize.tflite_quant import tflite_variant

    if isinstance(origin, str):
        from albert_edge.convert.source import ModelSource
        from albert_edge.convert.tflite_export import SPENT_AFTER_EXPORT

        origin = ModelSource.load(origin).weights
        setattr(origin, SPENT_AFTER_EXPORT, True)  # read for this conversion only: dropped before convert()
    return tflite_variant(origin, variant, *args, **kwargs)


#: fp32 flatbuffers the child converted, by run token (at most one): the conversions queued behind fp32
#: read it there, so every TFLite conversion is queued at once and the child never waits for this process
#: to hand fp32 back (nor is fp32 pickled into each queued call).
_FP32_OF_RUN: dict[str, bytes] = {}


def convert_fp32(weights: Any, task: Any, run: str, graph: Any = None) -> bytes:
    """fp32's flatbuffer, kept in this (child) process for the variants of ``run`` queued behind it."""
    from albert_edge.quantize.tflite_quant import tflite_variant

    _FP32_OF_RUN.clear()
    _FP32_OF_RUN[run] = tflite_variant(weights, "fp32", task=task, graph=graph)
    return _FP32_OF_RUN[run]


def convert_after_fp32(weights: Any, name: str, calibration: CalibrationSet, task: Any, run: str,
                       graph: Any = None) -> bytes:
    """Variant ``name`` converted with ``run``'s fp32 (``convert_fp32``, queued first) as its float model;
    without one (fp32 failed) converted alone, as before."""
    from albert_edge.quantize.tflite_quant import tflite_variant

    return tflite_variant(weights, name, calibration, float_model=_FP32_OF_RUN.get(run), task=task,
                          graph=graph)


class VariantBuilds:
    """fp32 and the TFLite variants queued in the child at construction, the ONNX ones built here.

    ``tflite`` and ``onnx`` are the variant names besides fp32 (``pipeline.variant_names``); ``formats``
    says which formats are built (TFLite fp32 always: it is the reference). ``ready`` is the child's
    preparation (``prepare_child``), awaited before fp32 is taken. ``say`` receives one line per
    variant (``building tflite:int8_fc (4/8)``) when its build begins or, for a queued one, when this
    process starts waiting for it; ``while_waiting()`` is called over and over while it waits, until
    it returns False (quantize fills fp32's reference rows then: record 0250). ``graph``: the run's TFLite graph
    options, each recipe's graph made from them (``tflite_quant.variant_graph``; None: the default graph).
    """

    def __init__(self, weights: Any, tflite: Sequence[str], onnx: Sequence[str], formats: Sequence[str],
                 calibration: CalibrationSet, task: Any, say: Callable[[str], None],
                 ready: Future[None] | None = None, checkpoint: str | None = None, graph: Any = None) -> None:
        import uuid

        from albert_edge.convert.child_process import start_in_child

        self.weights, self.calibration, self.task, self.say, self.ready = weights, calibration, task, say, ready
        self.graph = graph
        self.tflite = list(tflite) if "tflite" in formats else []
        self.onnx_names = list(onnx) if "onnx" in formats else []
        self.with_onnx = "onnx" in formats
        self.onnx: list[VariantResult] = []
        self.total = 1 + len(self.tflite) + ((1 + len(self.onnx_names)) if self.with_onnx else 0)
        self.while_waiting: Callable[[], bool] = lambda: False
        self._fp32_result: VariantResult | None = None
        self.collected: dict[str, VariantResult] = {}
        #: Large weights: fp32, the converter's highest peak, is converted first while this process holds only
        #: the weights, then the child is stopped, the other recipes converted in a fresh one and collected
        #: before this process builds ONNX (``build_onnx``), so the converter's peak and this process's never
        #: add up (record 0270); the child reads ``checkpoint`` itself (the path this process read the weights
        #: from unchanged) instead of receiving the weights pickled (409 MB on BERT-base). Smaller models queue
        #: every conversion at once in one child, beside this process's work (record 0250).
        self.one_at_a_time = weights_nbytes(weights) >= LARGE_WEIGHTS_BYTES
        self.pending: dict[str, Future[bytes]] = {}
        self._read_back: Callable[[], None] | None = None
        queued = [name for name in self.tflite if EDITS_OF.get(name) not in self.tflite]
        if self.one_at_a_time:
            self._fp32 = None
            # The child reads the checkpoint itself: this process's copy of the weights waits on disk until
            # the conversions are collected (``_collect``), out of the tree while the converter peaks.
            self._read_back = _weights_to_disk(weights, str(checkpoint)) if checkpoint is not None else None
            try:
                self._convert_large_first(str(checkpoint) if checkpoint is not None else weights, queued)
            except BaseException:
                self._weights_back()
                raise
            return
        run = uuid.uuid4().hex
        self._fp32 = start_in_child(convert_fp32, weights, task, run, graph)
        self.pending = {name: start_in_child(convert_after_fp32, weights, name, calibration, task, run, graph)
                        for name in queued}

    def _convert_large_first(self, origin: Any, queued: Sequence[str]) -> None:
        """``one_at_a_time``: fp32 converted now and the child stopped, the other recipes queued in a fresh one
        (fp32's file sent only to the recipes that read it: not ``CONVERTED_ALONE``)."""
        from albert_edge.convert.child_process import call_in_child, result, shutdown, start_in_child

        self.say(f"building tflite:fp32 (1/{self.total})")
        if self.ready is not None:
            result(self.ready)
        self._fp32_result = self._tflite_result(
            "fp32", lambda: call_in_child(convert_variant, origin, "fp32", task=self.task, graph=self.graph))
        shutdown()  # the converter's resident gigabytes go back; the next conversion starts a fresh child
        if self._fp32_result.error:
            return
        for name in queued:
            self.pending[name] = start_in_child(
                convert_variant, origin, name, self.calibration, task=self.task, graph=self.graph,
                float_model=None if name in CONVERTED_ALONE else self._fp32_result.data)

    def converting(self) -> bool:
        """Whether the child still has conversions of this run to finish (it then keeps one core busy)."""
        return any(not f.done() for f in (self._fp32, *self.pending.values()) if f is not None)

    @property
    def fp32(self) -> VariantResult:
        """TFLite fp32, waited for on first use (the child's preparation first: a damaged checkpoint stops here)."""
        if self._fp32_result is None:
            from albert_edge.convert.child_process import result

            self.say(f"building tflite:fp32 (1/{self.total})")
            if self.ready is not None:
                result(self.ready)
            self._fp32_result = self._tflite_result("fp32", lambda: result(self._fp32))
        return self._fp32_result

    def build_onnx(self) -> None:
        """The ONNX fp32 and variants, built in this process (while the child converts, unless ``one_at_a_time``)."""
        if self.one_at_a_time:
            self._collect()
        if not self.with_onnx:
            return
        from albert_edge.convert.onnx_export import onnx_model_bytes
        from albert_edge.quantize.census import census_onnx_variant
        from albert_edge.quantize.onnx_quant import onnx_variant

        first = 2 + len(self.tflite)
        self.say(f"building onnx:fp32 ({first}/{self.total})")
        fp32 = onnx_model_bytes(self.weights, task=self.task)
        self.onnx = [VariantResult("fp32", "onnx", data=fp32)]
        for k, name in enumerate(self.onnx_names, first + 1):
            self.say(f"building onnx:{name} ({k}/{self.total})")
            r = VariantResult(name, "onnx")
            try:
                r.data = onnx_variant(fp32, "onnx_" + name, self.calibration)
            except AlbertEdgeError as exc:
                r.error = str(exc)
            except Exception as exc:  # noqa: BLE001 - onnxruntime.quantization raises untyped errors
                r.error = f"onnxruntime.quantization failed: {' '.join(str(exc).split())[:200]}"
            self.onnx.append(r)
        for r in self.onnx:
            if not r.error:
                r.census = census_onnx_variant(r.data)
            r.size_bytes = len(r.data)

    def _collect(self) -> None:
        """Wait for every queued conversion, then stop the child: its resident gigabytes go back now."""
        from albert_edge.convert.child_process import result, shutdown

        for k, name in enumerate(self.tflite, 2):
            if name in self.pending:
                self.say(f"building tflite:{name} ({k}/{self.total})")
                self.collected[name] = self._tflite_result(name, lambda name=name: result(self.pending.pop(name)))
        shutdown()
        self._weights_back()

    def _weights_back(self) -> None:
        """The weights ``_weights_to_disk`` put aside, read again (once; nothing when none were)."""
        read_back, self._read_back = self._read_back, None
        if read_back is not None:
            read_back()

    def in_order(self) -> Iterator[VariantResult]:
        """Every variant in report order (TFLite fp32, TFLite variants, ONNX), each once it is built."""
        from albert_edge.convert.child_process import result
        from albert_edge.quantize.tflite_quant import tflite_variant

        yield self.fp32
        built: dict[str, bytes] = {}
        for k, name in enumerate(self.tflite, 2):
            if name in self.collected:  # converted before the ONNX builds (``one_at_a_time``)
                r = self.collected.pop(name)
            elif name in self.pending:
                self.say(f"building tflite:{name} ({k}/{self.total})")
                future = self.pending.pop(name)
                while not future.done() and self.while_waiting():
                    pass
                r = self._tflite_result(name, lambda future=future: result(future))
            else:  # an edit of a variant built before it, or anything when fp32 could not be built
                self.say(f"building tflite:{name} ({k}/{self.total})")
                r = self._tflite_result(name, lambda name=name: tflite_variant(
                    self.weights, name, self.calibration, float_model=self.fp32.data or None, task=self.task,
                    built=built, graph=self.graph))
            if not r.error:
                built[name] = r.data
            yield r
        yield from self.onnx

    def _tflite_result(self, name: str, build: Callable[[], bytes]) -> VariantResult:
        """A TFLite VariantResult from ``build()``; a variant that fails keeps its error (fp32's is raised)."""
        from albert_edge.quantize.census import census_tflite_variant

        r = VariantResult(name, "tflite")
        try:
            r.data = build()
            r.census = census_tflite_variant(r.data).to_dict()
        except AlbertEdgeError as exc:
            if name == "fp32":
                raise
            r.error = str(exc)
        except (RuntimeError, ValueError) as exc:
            r.error = f"LiteRT cannot run it: {' '.join(str(exc).split())[:200]}"
        r.size_bytes = len(r.data)
        release_freed_memory()  # the census's interpreter: freed, but glibc kept it resident (3x the file)
        return r


def _weights_to_disk(weights: Any, checkpoint: str) -> Callable[[], None]:
    """Empty ``weights``' tensors (read from ``checkpoint`` unchanged) and return what reads them back.

    Why: on the large route this process only waits while the child converts, yet its 390 MiB of weights
    (BERT-base) sat beside the converter's peak, which the child reaches reading the same checkpoint: the
    tree's peak during fp32's conversion was the two (4,043 MiB, record 0270). Reading them again costs
    about a second. The second read must give the same tensor names, shapes and dtypes: a checkpoint
    replaced meanwhile is refused in one line.
    """
    from albert_edge.errors import CheckpointError
    from albert_edge.model import load_checkpoint

    names = {name: (array.shape, array.dtype) for name, array in weights.tensors.items()}
    weights.tensors.clear()
    release_freed_memory()

    def read_back() -> None:
        again = load_checkpoint(checkpoint, verify_checksums=False).tensors
        if {name: (array.shape, array.dtype) for name, array in again.items()} != names:
            raise CheckpointError(f"{checkpoint}: the checkpoint changed while quantize was converting it; run again")
        weights.tensors.update(again)
        del again
        release_freed_memory()  # the read's own buffers (BERT-base: 750 MiB resident after it, 423 trimmed)

    return read_back
