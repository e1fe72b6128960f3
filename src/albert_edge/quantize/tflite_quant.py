"""TFLite variants of one ALBERT graph: the converter settings each needs, nothing else.

All variants are converted from CONVERT's serving graph through its ``converter_hook``, so the
float graph, the op choices and the Flex check are shared with ``albert-edge convert``.

Why ``int8_fc`` exists (measured on this machine, see benchmarks/suites/quantize_speed.py): the stock
full-integer model puts every op in int8, but XNNPACK has no int8 kernel for BATCH_MATMUL,
SOFTMAX, GELU, RSQRT, SQUARED_DIFFERENCE or broadcast ADD, so those ~50 ops fall back to the
slow builtin int8 kernels and split the graph into ~30 delegate partitions; the result is slower
than fp32 and the int8 LayerNorm/softmax ruin accuracy. ``int8_fc`` quantizes only the
FULLY_CONNECTED ops (weights per-channel int8, activations static int8) and leaves attention,
LayerNorm, GELU and the residual Adds in float: every op stays in XNNPACK, the FCs reach its
VNNI/AMX int8 GEMMs, and the QUANTIZE/DEQUANTIZE pairs around each FC are cheap elementwise ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from albert_edge.errors import ConversionError, QuantizationError
from albert_edge.quantize.calibration import INPUT_NAMES, CalibrationSet

#: Op kinds kept in float by ``int8_fc``: everything but FULLY_CONNECTED that carries activations.
# GATHER and SLICE stay int8: the word and position tables are most of the file, and an int8
# GATHER is an exact lookup of the int8 table followed by one DEQUANTIZE.
FLOAT_ISLAND_OPS = (
    "ADD", "SUB", "MUL", "MEAN", "SQUARED_DIFFERENCE", "RSQRT", "BATCH_MATMUL", "SOFTMAX", "GELU",
    "TANH", "TRANSPOSE", "RESHAPE", "SPLIT", "CAST",
)


@dataclass(frozen=True)
class TfliteVariant:
    """A named converter recipe. ``calibrated`` variants need a representative dataset."""

    name: str
    calibrated: bool
    summary: str


VARIANTS: dict[str, TfliteVariant] = {v.name: v for v in (
    TfliteVariant("fp32", False, "float32 reference"),
    TfliteVariant("fp16", False, "float16 weights, float32 compute"),
    TfliteVariant("dynamic_int8", False, "int8 weights (per-channel) and tables, activations quantized per row at run time"),
    TfliteVariant("dynamic_int8_col", False, "dynamic_int8 with one int8 scale per embedding column in the lookup tables"),
    TfliteVariant("dynamic_int8_col_sq", False, "dynamic_int8_col with a MUL in front of every FC input moving its "
                  "outlier channels into the int8 weights (SmoothQuant; ranges from random token ids, no texts)"),
    TfliteVariant("dynamic_int8_col_smooth", False, "dynamic_int8_col on SmoothQuant-smoothed weights (needs calibration texts)"),
    TfliteVariant("dynamic_int4", False, "dynamic_int8 with int4 FC weights (per-channel) and an int4 word table "
                  "(per-row scales), activations quantized per row at run time"),
    TfliteVariant("dynamic_int4_table", False, "dynamic_int8 with an int4 word table (per-row scales), FC weights "
                  "int8: the mixed 4/8 recipe auto's size search tries first"),
    TfliteVariant("int8_full", True, "full integer: every op int8 (stock converter), float I/O"),
    TfliteVariant("int8_fc", True, "static int8 FULLY_CONNECTED (classifier float), attention/LayerNorm/GELU/Adds float"),
    TfliteVariant("int16x8", True, "16-bit activations, 8-bit weights (builtin kernels only)"),
)}


#: What ``int8_fc`` quantizes: the matmuls with constant weights and the table lookups.
INT8_OPS = ("FULLY_CONNECTED", "GATHER", "SLICE")
#: Ops on shapes/ids only, never quantized whatever the options.
_INDEX_OPS = ("SHAPE", "PACK", "STRIDED_SLICE", "CAST")


def float_island_ops(float_model: bytes | None) -> list[str]:
    """Op kinds ``int8_fc`` keeps float: every kind of the float graph but INT8_OPS (default list without one).

    Derived from the graph so that a new op in CONVERT's graph (say a POW in a LayerNorm variant)
    lands in a float island instead of silently becoming int8.
    """
    if float_model is None:
        return list(FLOAT_ISLAND_OPS)
    from albert_edge.quantize.census import tflite_op_dtypes

    kinds = {key.split(":")[0] for key in tflite_op_dtypes(float_model)}
    return sorted(kinds - set(INT8_OPS) - set(_INDEX_OPS)) or list(FLOAT_ISLAND_OPS)


#: Recipes that convert the dynamic-batch graph instead of the default batch-one graph (record 0291): the 16x8
#: quantizer asks for ranges of the int32 input ids the batch-one graph's position count reads ("Max and min for
#: dynamic tensors should be recorded ... serving_default_input_ids"), and full-integer int8 drifted 6x further
#: from fp32 on the batch-one graph (max |d logit| 0.197 against 0.033, a random 2-layer model).
DYNAMIC_BATCH_VARIANTS = frozenset({"int8_full", "int16x8"})


def variant_graph(variant: str, graph: Any = None) -> Any:
    """The ``GraphOptions`` a recipe converts: ``graph`` (the run's, ``QuantizeOptions.graph_options``; None: the
    default) as the batch-one graph, or as the dynamic-batch one for the recipes that need it."""
    from dataclasses import replace

    from albert_edge.convert.tf_graph import GraphOptions

    return replace(graph or GraphOptions(), batch_one=variant not in DYNAMIC_BATCH_VARIANTS)


def calibration_dataset(calibration: CalibrationSet, options: Any) -> Any:
    """The converter's ``representative_dataset`` for ``options``' graph: ``CalibrationSet.padded_samples`` (one
    width, which TensorFlow's calibrator needs on a batch-one graph: record 0291, 0295) or every sample at its
    own length for the dynamic-batch one."""
    return calibration.padded_dataset if options.batch_one else calibration.representative_dataset


def output_nodes(float_model: bytes | None) -> list[str]:
    """Tensor names of the model outputs (the classifier's logits, an embedding) in the float graph.

    ``int8_fc`` keeps the op producing them float: an int8 logit is dequantized right away, so
    its rounding (a 1/256 share of the calibrated logit range, measured as the worst op on every
    model tried) is pure loss, while the op is a [H, labels] matmul with nothing to gain.
    """
    if float_model is None:
        return []
    from ai_edge_litert.interpreter import Interpreter
    from albert_edge.runtime.pack import strip_tflite_pack

    return [d["name"] for d in Interpreter(model_content=strip_tflite_pack(bytes(float_model))).get_output_details()]


def tflite_variant(weights: Any, variant: str, calibration: CalibrationSet | None = None,
                   denylisted_nodes: Sequence[str] = (), denylisted_ops: Sequence[str] = (),
                   float_model: bytes | None = None, task: Any = None,
                   built: Mapping[str, bytes] | None = None, graph: Any = None) -> bytes:
    """Flatbuffer bytes (no pack) of ``weights`` converted as ``variant``, with ``task``'s head
    (a Task or name; None: the task detected from the weights).

    ``denylisted_nodes`` / ``denylisted_ops`` keep more of a calibrated variant in float (the
    accuracy-aware search uses them); they go through ``tf.lite.experimental.QuantizationDebugger``.
    ``float_model`` (the fp32 flatbuffer of the same graph) lets ``int8_fc`` read its op kinds.
    ``built``: variants of the same weights and task already built (name -> bytes). A recipe that is
    an edit of one of them (``dynamic_int8_col``: dynamic_int8's file with its tables re-scaled per
    column; ``dynamic_int8_col_sq``: dynamic_int8_col's with SmoothQuant MULs; the int4 recipes:
    dynamic_int8's with int4 weights) starts from that file
    instead of converting the same graph again (5-6 s on the sample).
    ``graph``: the run's graph options (``variant_graph``); ``float_model`` and ``built`` must be files of the
    same graph.
    """
    from albert_edge.convert import tflite_export

    spec = VARIANTS.get(variant)
    if spec is None:
        raise QuantizationError(f"variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    if built and variant in built:
        return built[variant]
    if variant == "dynamic_int8_col" and built and "dynamic_int8" in built and float_model is not None:
        from albert_edge.quantize.column_tables import per_column_lookup_tables

        return per_column_lookup_tables(built["dynamic_int8"], float_model)[0]
    if spec.calibrated and (calibration is None or len(calibration) == 0):
        raise QuantizationError(f"variant {variant}: needs calibration texts (--calib)")
    if variant in _MADE_FROM_ANOTHER:
        return _made_from_another(weights, variant, calibration, float_model, task, built, graph)
    deny_ops = list(denylisted_ops)
    if variant == "int8_fc":
        deny_ops += [op for op in float_island_ops(float_model) if op not in deny_ops]
        denylisted_nodes = [*output_nodes(float_model), *[n for n in denylisted_nodes if n not in output_nodes(float_model)]]
    if variant == "int16x8" and (deny_ops or denylisted_nodes):
        # The debugger's selective path re-quantizes in int8 and drops the 16x8 ops set.
        raise QuantizationError("variant int16x8: selective float fallback is not supported for 16x8")
    captured: dict[str, Any] = {}
    options = variant_graph(variant, graph)

    def hook(converter: Any) -> None:
        import tensorflow as tf

        if variant == "fp32":
            return
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if variant == "fp16":
            converter.target_spec.supported_types = [tf.float16]
        if spec.calibrated:
            converter.representative_dataset = calibration_dataset(calibration, options)
        if variant == "int16x8":
            converter.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
                tf.lite.OpsSet.TFLITE_BUILTINS,
            ]
        if spec.calibrated and (deny_ops or denylisted_nodes):
            captured["converter"] = converter
            # convert() then runs the debugger's selective quantization instead of the plain one.
            converter.convert = lambda: _selective(converter, calibration, deny_ops, denylisted_nodes)

    try:
        # The debugger's selective path reads the converter's concrete functions: only it keeps that route.
        selective = bool(spec.calibrated and (deny_ops or denylisted_nodes))
        data = tflite_export.convert_to_tflite_bytes(weights, converter_hook=hook, task=task,
                                                     options=options,
                                                     via_saved_model=False if selective else None)
    except ConversionError as exc:
        raise QuantizationError(f"variant {variant}: {exc}") from None
    if variant in ("dynamic_int8", "dynamic_int8_col", "int8_fc", "int8_full", "int16x8"):
        from albert_edge.quantize.tflite_edit import int8_lookup_tables

        data, _ = int8_lookup_tables(data)
    if variant == "dynamic_int8_col":
        from albert_edge.quantize.column_tables import per_column_lookup_tables

        float_model = float_model or tflite_variant(weights, "fp32", task=task, graph=graph)
        data, _ = per_column_lookup_tables(data, float_model)
    return data


#: Recipes made from another recipe's file or from edited weights (``_made_from_another``).
_MADE_FROM_ANOTHER = frozenset({"dynamic_int4", "dynamic_int4_table", "dynamic_int8_col_sq", "dynamic_int8_col_smooth"})


def _made_from_another(weights: Any, variant: str, calibration: CalibrationSet | None, float_model: bytes | None,
                       task: Any, built: Mapping[str, bytes] | None, graph: Any) -> bytes:
    """``tflite_variant`` of the recipes that start from another: int4 weights in dynamic_int8's file,
    SmoothQuant MULs in dynamic_int8_col's, dynamic_int8_col of smoothed weights (each with fp32's file)."""
    if variant == "dynamic_int8_col_smooth" and (calibration is None or len(calibration) == 0):
        raise QuantizationError(f"variant {variant}: needs calibration texts (--calib)")
    float_model = float_model or tflite_variant(weights, "fp32", task=task, graph=graph)
    if variant in ("dynamic_int4", "dynamic_int4_table"):
        from albert_edge.quantize.tflite_int4 import int4_weights

        int8 = tflite_variant(weights, "dynamic_int8", float_model=float_model, task=task, built=built,
                              graph=graph)
        return int4_weights(int8, float_model, fcs=variant == "dynamic_int4")[0]
    if variant == "dynamic_int8_col_sq":
        from albert_edge.quantize.fc_smoothing import smoothed_dynamic_int8

        base = tflite_variant(weights, "dynamic_int8_col", float_model=float_model, task=task, built=built,
                              graph=graph)
        return smoothed_dynamic_int8(base, float_model, weights.config.vocab_size,
                                     max(1, weights.config.max_position_embeddings - 2))  # RoBERTa's offset
    from albert_edge.quantize.smoothing import smoothed_weights_for

    assert calibration is not None   # checked above
    smoothed, _ = smoothed_weights_for(weights, float_model, calibration.samples)
    # Smoothing leaves the embedding tables alone, so the fp32 file still supplies their float values.
    return tflite_variant(smoothed, "dynamic_int8_col", float_model=float_model, task=task, graph=graph)


def _selective(converter: Any, calibration: CalibrationSet, deny_ops: Sequence[str],
               deny_nodes: Sequence[str]) -> bytes:
    """Quantize with ops/nodes kept in float: the QuantizationDebugger's non-debug model."""
    import tensorflow as tf

    # The debugger calls convert() itself; give it the original bound method back.
    del converter.convert
    options = tf.lite.experimental.QuantizationDebugOptions(
        denylisted_ops=list(deny_ops) or None, denylisted_nodes=list(deny_nodes) or None)
    order = input_order(converter)
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=calibration.ordered_dataset(order), debug_options=options)
    model = debugger.get_nondebug_quantized_model()
    _check_input_order(model, order)
    return model


def input_order(converter: Any) -> list[str]:
    """Serving input names in the order the converted model's input tensors appear.

    The converter flattens the signature's inputs by sorted name. All three inputs are int32
    ``[1, seq]``, so a wrong order would not fail, it would silently calibrate on token-type ids
    as words; ``_check_input_order`` therefore verifies the order on the converted model.
    """
    names = [t.name.split(":")[0] for t in converter._funcs[0].inputs if t.dtype.name == "int32"]
    if sorted(names) != sorted(INPUT_NAMES):
        raise QuantizationError(f"serving graph inputs {names}: expected {', '.join(INPUT_NAMES)}")
    return sorted(names)


def _check_input_order(model: bytes, order: Sequence[str]) -> None:
    from ai_edge_litert.interpreter import Interpreter

    details = Interpreter(model_content=bytes(model)).get_input_details()
    got = [d["name"] for d in details]
    if len(got) != len(order) or not all(want in name for want, name in zip(order, got)):
        raise QuantizationError(f"quantized model inputs {got} are not in the calibration order {list(order)}")


def layer_errors(weights: Any, variant: str, calibration: CalibrationSet,
                 float_model: bytes | None = None, task: Any = None, graph: Any = None) -> list[tuple[str, str, float]]:
    """(tensor name, op name, RMSE/scale) per quantized op output, worst first.

    RMSE between the int8 and float value of a tensor, in units of its quantization step, is
    the debugger's per-layer measure: ~0.3 is pure rounding, larger means the op's range or
    precision is the problem. The accuracy-aware search falls back the worst tensors first;
    the names are what ``denylisted_nodes`` expects.
    """
    import csv
    import io

    import tensorflow as tf
    from albert_edge.convert.tflite_export import make_tflite_converter

    converted = variant_graph(variant, graph)
    converter = make_tflite_converter(weights, task=task, options=converted)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = calibration_dataset(calibration, converted)
    deny = float_island_ops(float_model) if variant == "int8_fc" else None
    options = tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=deny)
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=calibration.ordered_dataset(input_order(converter)), debug_options=options)
    debugger.run()
    buffer = io.StringIO()
    debugger.layer_statistics_dump(buffer)
    rows = []
    for row in csv.DictReader(io.StringIO(buffer.getvalue())):
        scale = float(row["scale"]) or 1.0
        rows.append((row["tensor_name"], row["op_name"], float(row["mean_squared_error"]) ** 0.5 / scale))
    return sorted(rows, key=lambda r: -r[2])
