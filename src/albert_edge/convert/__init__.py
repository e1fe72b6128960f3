"""Floor 3: weights -> deployable .tflite / .onnx files, each checked against the numpy reference.

Public API (TensorFlow, onnx and the interpreters are imported only when a function needs them)::

    build_tf_module(weights, task=None, options=None) -> tf.Module      # serving signature `serve`
    make_tflite_converter(weights, task=None, options=None) -> tf.lite.TFLiteConverter
    convert_to_tflite_bytes(weights, fp16=False, converter_hook=None, task=None, options=None) -> bytes
    export_tflite(weights, path, pack=None, fp16=False, converter_hook=None, task=None, options=None) -> Path
    build_onnx_model(weights, task=None, fp16=False) -> onnx.ModelProto
    export_onnx(weights, path, pack=None, fp16=False, task=None) -> Path
    check_parity(model, weights, *, variant="fp32", task=None, samples=None, tolerance=None,
                 threads=(1, 2), name=None) -> ParityResult
    ModelSource.load(checkpoint, config=None) -> ModelSource          # ModelSource(checkpoint, weights)
    ConvertOptions(formats=("tflite", "onnx"), max_seq_len=None, labels=None, fp16=False, vocab=None,
                   do_lower_case=None, task=None, graph_options=GraphOptions())
    convert_checkpoint(source_or_checkpoint, out_dir, options=None) -> ConversionReport
    repack_model(model, source, out, variant=None, **checkpoint_options) -> RepackResult  # `albert-edge repack`
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert_edge.lazy import lazy_getattr

if TYPE_CHECKING:
    # The same names for type checkers, which do not see the lazy __getattr__ below.
    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.convert.census import census_onnx, census_tflite, non_builtin_tflite_ops
    from albert_edge.convert.onnx_export import (
        attach_onnx_pack,
        deduplicate_initializers,
        export_onnx,
        onnx_model_bytes,
    )
    from albert_edge.convert.onnx_graph import OnnxGraphBuilder, build_onnx_model
    from albert_edge.convert.parity import (
        ParityCase,
        ParityResult,
        ParitySamples,
        TOLERANCES,
        check_parity,
        default_cases,
        make_samples,
        sample_inputs,
    )
    from albert_edge.convert.pipeline import (
        ConversionReport,
        ConvertOptions,
        ExportedFile,
        build_pack,
        convert_checkpoint,
        model_file_name,
    )
    from albert_edge.convert.repack import RepackResult, repack_model
    from albert_edge.convert.source import ModelSource
    from albert_edge.convert.tf_graph import GraphOptions, build_tf_module
    from albert_edge.convert.tflite_export import (
        apply_fp16,
        convert_to_tflite_bytes,
        export_tflite,
        make_tflite_converter,
        tflite_model_bytes,
    )

_EXPORTS = {
    "repack_model": "albert_edge.convert.repack",
    "RepackResult": "albert_edge.convert.repack",
    "GraphOptions": "albert_edge.convert.tf_graph",
    "build_tf_module": "albert_edge.convert.tf_graph",
    "make_tflite_converter": "albert_edge.convert.tflite_export",
    "apply_fp16": "albert_edge.convert.tflite_export",
    "convert_to_tflite_bytes": "albert_edge.convert.tflite_export",
    "tflite_model_bytes": "albert_edge.convert.tflite_export",
    "export_tflite": "albert_edge.convert.tflite_export",
    "build_onnx_model": "albert_edge.convert.onnx_graph",
    "OnnxGraphBuilder": "albert_edge.convert.onnx_graph",
    "onnx_model_bytes": "albert_edge.convert.onnx_export",
    "attach_onnx_pack": "albert_edge.convert.onnx_export",
    "export_onnx": "albert_edge.convert.onnx_export",
    "deduplicate_initializers": "albert_edge.convert.onnx_export",
    "census_tflite": "albert_edge.convert.census",
    "census_onnx": "albert_edge.convert.census",
    "non_builtin_tflite_ops": "albert_edge.convert.census",
    "ParityCase": "albert_edge.convert.parity",
    "ParitySamples": "albert_edge.convert.parity",
    "ParityResult": "albert_edge.convert.parity",
    "TOLERANCES": "albert_edge.convert.parity",
    "default_cases": "albert_edge.convert.parity",
    "make_samples": "albert_edge.convert.parity",
    "sample_inputs": "albert_edge.convert.parity",
    "check_parity": "albert_edge.convert.parity",
    "ConversionReport": "albert_edge.convert.pipeline",
    "ConvertOptions": "albert_edge.convert.pipeline",
    "ExportedFile": "albert_edge.convert.pipeline",
    "build_pack": "albert_edge.convert.pipeline",
    "convert_checkpoint": "albert_edge.convert.pipeline",
    "model_file_name": "albert_edge.convert.pipeline",
    "find_tokenizer_asset": "albert_edge.convert.assets",
    "ModelSource": "albert_edge.convert.source",
}

__all__ = list(_EXPORTS)

if not TYPE_CHECKING:
    # Hidden from type checkers, so that a misspelt name is an error there rather than Any.
    __getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
