"""ONNX variants with onnxruntime.quantization (dynamic int8, static QDQ int8) and int4 weights (``onnx_int4``).

Both quantize only MatMul (and Gather, for the size of the word table): LayerNormalization,
GELU, Softmax and the residual Adds stay float, which is what ORT's maintainers advise for
BERT-family int8 (onnxruntime#11701) and what the TFLite ``int8_fc`` variant does. ALBERT's
shared weights are single initializers, and the quantizer turns each into one int8
initializer however many MatMuls read it, so the file holds each weight once.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from albert_edge.errors import QuantizationError
from albert_edge.quantize.calibration import CalibrationSet

ONNX_VARIANTS = ("onnx_dynamic_int8", "onnx_dynamic_int8_col", "onnx_qdq_int8", "onnx_int4")
#: MatMulNBits block for ``onnx_int4``: measured on the shipped sample (benchmarks/decisions/0010-int4-weights-and-onnx-int8.md),
#: 32/64/128 drift alike and 64 gives the smallest file; accuracy level 4 (int8 activations) is the fastest.
INT4_BLOCK_SIZE = 64
INT4_ACCURACY_LEVEL = 4
CALIBRATION_METHODS = ("minmax", "percentile", "entropy")


def onnx_variant(fp32_model: bytes, variant: str, calibration: CalibrationSet | None = None,
                 per_channel: bool = True, reduce_range: bool = False, method: str = "minmax",
                 op_types: Sequence[str] = ("MatMul", "Gather"), exclude_nodes: Sequence[str] = ()) -> bytes:
    """Quantized ONNX bytes from ``fp32_model`` bytes (its metadata_props pack is kept).

    ``reduce_range`` (7-bit weights) is only needed on AVX2 CPUs without VNNI, where
    VPMADDUBSW can saturate; this machine has VNNI, so the default is full range.
    """
    import onnx
    from onnxruntime import quantization as q

    if variant not in ONNX_VARIANTS:
        raise QuantizationError(f"variant {variant!r}: expected one of {', '.join(ONNX_VARIANTS)}")
    if method not in CALIBRATION_METHODS:
        raise QuantizationError(f"calibration method {method!r}: expected one of {', '.join(CALIBRATION_METHODS)}")
    if variant == "onnx_int4":
        from albert_edge.quantize.onnx_int4 import onnx_int4

        return onnx_int4(fp32_model, INT4_BLOCK_SIZE, INT4_ACCURACY_LEVEL)
    if variant == "onnx_dynamic_int8_col":
        # ORT's dynamic Gather is int8 with one scale per table; the tables get one per column instead.
        from albert_edge.quantize.onnx_int4 import int8_column_tables

        matmuls = onnx_variant(fp32_model, "onnx_dynamic_int8", per_channel=per_channel, reduce_range=reduce_range,
                               op_types=[t for t in op_types if t != "Gather"], exclude_nodes=exclude_nodes)
        return int8_column_tables(matmuls)
    with tempfile.TemporaryDirectory(prefix="albert-edge-onnxq-") as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(fp32_model)
        if variant == "onnx_dynamic_int8":
            q.quantize_dynamic(src, dst, op_types_to_quantize=list(op_types), per_channel=per_channel,
                               reduce_range=reduce_range, weight_type=q.QuantType.QInt8,
                               nodes_to_exclude=list(exclude_nodes))
        else:
            if calibration is None or len(calibration) == 0:
                raise QuantizationError(f"variant {variant}: needs calibration texts (--calib)")
            methods = {"minmax": q.CalibrationMethod.MinMax, "percentile": q.CalibrationMethod.Percentile,
                       "entropy": q.CalibrationMethod.Entropy}
            q.quantize_static(src, dst, _Reader(calibration), quant_format=q.QuantFormat.QDQ,
                              op_types_to_quantize=[t for t in op_types if t != "Gather"], per_channel=per_channel,
                              reduce_range=reduce_range, activation_type=q.QuantType.QUInt8,
                              weight_type=q.QuantType.QInt8, calibrate_method=methods[method],
                              nodes_to_exclude=list(exclude_nodes), extra_options={"CalibTensorRangeSymmetric": False})
        model = onnx.load(os.fspath(dst))
    source = onnx.load_from_string(fp32_model)
    kept = {p.key: p.value for p in source.metadata_props}
    del model.metadata_props[:]
    for key, value in kept.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    return model.SerializeToString()


class _Reader:
    """onnxruntime CalibrationDataReader over the encoded calibration texts (int32 inputs)."""

    def __init__(self, calibration: CalibrationSet) -> None:
        self._samples = iter(calibration.samples)

    def get_next(self) -> dict[str, Any] | None:
        return next(self._samples, None)

    def rewind(self) -> None:  # onnxruntime >= 1.17 may call it between passes
        pass
