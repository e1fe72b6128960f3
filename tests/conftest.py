"""Session-wide fixtures shared by several test files."""

from __future__ import annotations

import pytest

from minilm_fixtures import minilm_dir, minilm_models, sentences  # noqa: F401 - session fixtures for every file
from sample_models import SampleModels, build_sample_models


@pytest.fixture(scope="session")
def sample_models(tmp_path_factory) -> SampleModels:
    """The shipped sample checkpoint converted once per session (fp32 .tflite/.onnx, int8 .tflite)."""
    pytest.importorskip("tensorflow")
    return build_sample_models(tmp_path_factory.mktemp("sample_models"))
