"""Floor 3: quantized variants of an ALBERT graph, measured, and the accuracy-aware choice.

``quantize_checkpoint`` builds TFLite (dynamic int8, int8 with float islands, full int8, 16x8,
fp16) and ONNX (dynamic, static QDQ) variants from the same weights, calibrates them on text
tokenized by the model's own tokenizer, censuses what each graph runs (ops by dtype,
Quantize/Dequantize count, XNNPACK coverage), times them interleaved against fp32, judges their
drift and picks the fastest within the accuracy budget.
"""

from albert_edge.quantize.auto import Budget, budget_failures, choose
from albert_edge.quantize.calibration import CalibrationSet, encode_calibration, read_calibration_texts
from albert_edge.quantize.pipeline import MODES, QuantizeOptions, QuantizeReport, VariantResult, quantize_checkpoint

__all__ = [
    "Budget",
    "CalibrationSet",
    "MODES",
    "QuantizeOptions",
    "QuantizeReport",
    "VariantResult",
    "budget_failures",
    "choose",
    "encode_calibration",
    "quantize_checkpoint",
    "read_calibration_texts",
]
