"""Weights -> .tflite: convert the serving tf.Module with TFLiteConverter and attach the pack.

The converter reads the module from a SavedModel in a temporary folder, the module dropped first:
converting its concrete function kept the variables alive beside the frozen copy (one copy of the
weights more at the converter's peak; record 0240).

Only TFLite builtins are allowed (``supported_ops = [TFLITE_BUILTINS]``), so a graph that would
need Flex fails at conversion time instead of on the phone. ``converter_hook`` lets the
quantize floor set optimizations, a representative dataset or supported types on the same
converter before ``convert()`` runs; whatever it sets, the result is still checked for Flex ops.
"""

from __future__ import annotations

import gc
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from albert_edge.outputs.atomic import write_bytes_atomic
from albert_edge.convert.census import census_tflite, non_builtin_tflite_ops
from albert_edge.convert.tf_graph import GraphOptions, build_tf_module
from albert_edge.errors import AlbertEdgeError, ConversionError
from albert_edge.model.weights import weights_nbytes
from albert_edge.neighbours.freed_memory import release_freed_memory

ConverterHook = Callable[[Any], None]  # receives the tf.lite.TFLiteConverter before convert()


def _import_tf():
    # The converter's C++ logging would otherwise bury the one-line report under warnings.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    return tf


def make_tflite_converter(weights: Any, task: Any = None, options: GraphOptions | None = None):
    """A ``tf.lite.TFLiteConverter`` for the serving graph, restricted to TFLite builtins.

    Returned unconverted so that callers (quantize) can set more options. The module is passed as
    the converter's trackable object, which keeps its variables alive until ``convert()`` freezes them.
    """
    tf = _import_tf()
    module = build_tf_module(weights, task=task, options=options)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()],
                                                                trackable_obj=module)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    return converter


#: An attribute a caller sets (True) on weights it read for one conversion only (quantize's converter child
#: reading the checkpoint itself): ``saved_model_converter`` empties their tensors once the SavedModel is written,
#: so the converter's peak holds no numpy copy of them (BERT-base: 390 MiB of the child's 3.7 GB, record 0270).
SPENT_AFTER_EXPORT = "spent_after_export"


@contextmanager
def saved_model_converter(weights: Any, task: Any = None, options: GraphOptions | None = None) -> Iterator[Any]:
    """A converter that reads the serving graph from a SavedModel in a temporary folder (removed after).

    Why: ``make_tflite_converter`` keeps the module's variables alive while ``convert()`` freezes a copy
    of them into the graph; here the module is saved and dropped first, so the converter's peak holds
    one copy of the weights fewer (BERT-base: 3.7 GB instead of 4.2 GB peak RSS, the same outputs,
    record 0240). The converter has no concrete functions (``_funcs``), so callers that read them
    (the quantization debugger's input order) keep ``make_tflite_converter``.
    """
    tf = _import_tf()
    with tempfile.TemporaryDirectory(prefix="albert_edge_saved_model_") as folder:
        module = build_tf_module(weights, task=task, options=options)
        tf.saved_model.save(module, folder, signatures=module.signatures())
        del module
        gc.collect()  # the module's tf.function holds a reference cycle: its variables go only now
        if getattr(weights, SPENT_AFTER_EXPORT, False):
            weights.tensors.clear()  # read for this conversion only: their copy leaves the converter's peak too
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        # What saving and loading left in reference cycles, and the heap they freed, go before convert() peaks:
        # BERT-base's child peaked at 3,389 MiB without this, 2,996 with it (VmHWM; record 0280).
        gc.collect()
        release_freed_memory()
        yield converter


def apply_fp16(converter: Any) -> None:
    """Store weights as float16 (dequantized to float32 at load): half the file, float compute."""
    tf = _import_tf()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]


#: Weights from this size up convert through a SavedModel: BERT-base's converter peak 4.2 -> 3.7 GB (record
#: 0240); below it the write and read of the SavedModel cost more time than the memory is worth.
SAVED_MODEL_ROUTE_BYTES = 100 * 2**20


def convert_to_tflite_bytes(
    weights: Any,
    fp16: bool = False,
    converter_hook: ConverterHook | None = None,
    task: Any = None,
    options: GraphOptions | None = None,
    via_saved_model: bool | None = None,
) -> bytes:
    """The bare flatbuffer (no pack) of the serving graph; raises ConversionError on any failure.

    ``via_saved_model`` converts from a SavedModel (one copy of the weights less at the converter's peak,
    but a SavedModel written and read: seconds that only pay on large models); False keeps the concrete
    function route, for hooks that read the converter's functions; None chooses by the weights' size
    (``SAVED_MODEL_ROUTE_BYTES``)."""
    if via_saved_model is None:
        via_saved_model = weights_nbytes(weights) >= SAVED_MODEL_ROUTE_BYTES
    try:
        if via_saved_model:
            with saved_model_converter(weights, task=task, options=options) as converter:
                flatbuffer = _run_converter(converter, fp16, converter_hook)
        else:
            flatbuffer = _run_converter(make_tflite_converter(weights, task=task, options=options), fp16,
                                        converter_hook)
    except Exception as exc:  # noqa: BLE001 - the converter raises ConverterError, ValueError, RuntimeError, ...
        if isinstance(exc, AlbertEdgeError):  # the graph's or a hook's own error, already one line
            raise
        raise ConversionError(f"{weights.source}: TFLite conversion failed: {converter_error_line(exc)}") from None
    from albert_edge.convert.tflite_fp16_rows import fp16_rows_after_gather

    # fp16 tables: gather rows, then dequantize them (no float32 copy of the whole table at run time).
    flatbuffer, _ = fp16_rows_after_gather(bytes(flatbuffer))
    if options is not None and options.embedding_lookup:
        from albert_edge.convert.tflite_lookup import gathers_as_embedding_lookups

        flatbuffer, _ = gathers_as_embedding_lookups(bytes(flatbuffer))
    bad = non_builtin_tflite_ops(census_tflite(flatbuffer))
    if bad:
        raise ConversionError(f"{weights.source}: TFLite model needs non-builtin ops {', '.join(bad)}; "
                              "the graph or converter options must avoid them")
    return bytes(flatbuffer)


def _run_converter(converter: Any, fp16: bool, converter_hook: ConverterHook | None) -> bytes:
    """``converter.convert()`` after the fp16 setting and ``converter_hook``."""
    if fp16:
        apply_fp16(converter)
    if converter_hook is not None:
        converter_hook(converter)
    return converter.convert()


def export_tflite(
    weights: Any,
    path: str | os.PathLike[str],
    pack: Any = None,
    fp16: bool = False,
    converter_hook: ConverterHook | None = None,
    task: Any = None,
    options: GraphOptions | None = None,
) -> Path:
    """Convert ``weights`` and write ``path`` atomically, with ``pack`` (a runtime ModelPack) appended.

    No parity check here: ``check_parity`` (or ``convert_checkpoint``, which runs it before
    writing) judges the file.
    """
    data = tflite_model_bytes(weights, pack, fp16=fp16, converter_hook=converter_hook, task=task, options=options)
    return write_bytes_atomic(path, data)


def tflite_model_bytes(weights: Any, pack: Any = None, **kwargs: Any) -> bytes:
    """``convert_to_tflite_bytes(weights, **kwargs)`` with standard metadata and ``pack`` appended when given."""
    data = convert_to_tflite_bytes(weights, **kwargs)
    if pack is None:
        return data
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    return attach_standard_metadata(data, pack)


def converter_error_line(exc: BaseException) -> str:
    """The most telling line of a converter error (they run to pages of MLIR diagnostics)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        match = re.search(r"error: (.*)", line)
        if match:
            return match.group(1)
    return lines[0] if lines else type(exc).__name__
