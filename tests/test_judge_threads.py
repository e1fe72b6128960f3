"""quantize judges with one thread while its converter child keeps the other core busy, and with
``--threads`` otherwise (record 0250). That may change only the speed, never a verdict: each model's
judged values must be the same bytes with one thread and with two, on real exports of the sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.quantize.calibration import encode_calibration
from albert_edge.quantize.measure import variant_values
from albert_edge.runtime.pack import read_pack
from albert_edge.tasks import SequenceClassification
from albert_edge.tokenizer import Preprocessor, load_tokenizer
from tests.support.sample_models import SAMPLE

ROWS = 48


@pytest.fixture(scope="module")
def rows(sample_models) -> list[dict[str, np.ndarray]]:
    """Dev rows of the sample at their own lengths, as quantize's judge feeds them."""
    pack = read_pack(sample_models.fp32_tflite)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case,
                               str(sample_models.fp32_tflite))
    lines = (SAMPLE / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:ROWS + 1]
    texts = [line.split("\t", 1)[1] for line in lines]
    return list(encode_calibration(texts, Preprocessor(tokenizer, 128), "dev.tsv", max_texts=ROWS).samples)


def _models(sample_models) -> dict[str, bytes]:
    from albert_edge.quantize.onnx_quant import onnx_variant

    fp32_onnx = sample_models.fp32_onnx.read_bytes()
    return {"tflite fp32": sample_models.fp32_tflite.read_bytes(), "tflite int8_full": sample_models.int8_tflite.read_bytes(),
            "onnx fp32": fp32_onnx, "onnx dynamic_int8": onnx_variant(fp32_onnx, "onnx_dynamic_int8")}


def test_judged_values_are_the_same_bytes_with_one_thread_and_with_two(sample_models, rows):
    task = SequenceClassification()
    for name, model in _models(sample_models).items():
        one, two = variant_values(model, rows, task, 1), variant_values(model, rows, task, 2)
        assert one.shape == (ROWS, 2) and np.array_equal(one, two), name
