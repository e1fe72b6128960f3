"""The shipped sample checkpoint converted once per test session: fp32 .tflite/.onnx and a full-int8 .tflite.

Hostile-file tests need real exports of a real ALBERT (an embedding table of 21,128 rows, 512
positions, int8 zero-points) rather than a toy graph, because the failures they guard against
live in those tables. Converting costs tens of seconds, so ``build_sample_models`` is called by a
session-scoped fixture in ``conftest.py`` and every test copies the files it mutates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "albert_tiny_zh_sentiment"
SAMPLE_LABELS = ("neg", "pos")
CALIB_TEXTS = 16


@dataclass(frozen=True)
class SampleModels:
    """Paths of the packed sample exports (never modified by tests: copy before mutating)."""

    fp32_tflite: Path
    fp32_onnx: Path
    int8_tflite: Path


def build_sample_models(out: Path) -> SampleModels:
    """Convert the sample checkpoint into ``out``: fp32 TFLite + ONNX (parity-checked), full int8 TFLite."""
    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
    from albert_edge.model.checkpoint import load_checkpoint
    from albert_edge.quantize.calibration import encode_calibration
    from albert_edge.quantize.tflite_quant import tflite_variant
    from albert_edge.runtime.pack import attach_tflite_pack, read_pack
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    convert_checkpoint(SAMPLE, out, ConvertOptions(formats="tflite,onnx", labels=list(SAMPLE_LABELS)))
    fp32 = out / "model_fp32.tflite"
    pack = read_pack(fp32)
    weights = load_checkpoint(SAMPLE)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, str(fp32))
    texts = (SAMPLE / "calib.txt").read_text(encoding="utf-8").splitlines()[:CALIB_TEXTS]
    calibration = encode_calibration(texts, Preprocessor(tokenizer, 64))
    int8 = out / "model_int8_full.tflite"
    int8.write_bytes(attach_tflite_pack(tflite_variant(weights, "int8_full", calibration), pack.with_variant("int8_full")))
    return SampleModels(fp32, out / "model_fp32.onnx", int8)
