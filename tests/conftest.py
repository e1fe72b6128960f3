"""Session-wide fixtures shared by several test files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.minilm_fixtures import minilm_dir, minilm_models, sentences  # noqa: F401 - session fixtures for every file
from tests.support.sample_models import SampleModels, build_sample_models

MEDIAPIPE = Path(__file__).resolve().parent / "mediapipe"


@pytest.fixture(scope="session")
def sample_models(tmp_path_factory) -> SampleModels:
    """The shipped sample checkpoint converted once per session (fp32 .tflite/.onnx, int8 .tflite)."""
    pytest.importorskip("tensorflow")
    return build_sample_models(tmp_path_factory.mktemp("sample_models"))


@pytest.fixture(scope="module")
def mediapipe_python() -> Path:
    """The Python of the MediaPipe client's own virtualenv (tests/mediapipe/venv.py builds and caches
    it), for the MediaPipe classifier and embedder tests; skipped with ALBERT_EDGE_SKIP_MEDIAPIPE=1."""
    if os.environ.get("ALBERT_EDGE_SKIP_MEDIAPIPE") == "1":
        pytest.skip("ALBERT_EDGE_SKIP_MEDIAPIPE=1: MediaPipe compatibility not checked")
    import importlib.util

    spec = importlib.util.spec_from_file_location("mediapipe_venv", MEDIAPIPE / "venv.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ensure_venv()


@pytest.fixture(autouse=True)
def _progress_held_whole_run(monkeypatch):
    """Progress lines held for the whole command, and no still-running lines, however slow the machine.

    In a log, a command writes its progress lines once it has run ``progress.HOLD_SECONDS`` and a
    still-running line every ``HEARTBEAT_SECONDS``; a test that checks an error is the one line on
    stderr, or counts a command's step lines, must not depend on whether a loaded machine took that
    long. tests/test_progress.py sets both itself where it tests them.
    """
    from albert_edge import progress

    monkeypatch.setattr(progress, "HOLD_SECONDS", float("inf"))
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", float("inf"))
