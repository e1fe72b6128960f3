"""Create (once) and return the private virtualenv that holds MediaPipe, the independent client.

MediaPipe is not installed in albert-edge's own environment: its wheel pulls OpenCV, matplotlib and
sounddevice, and the compatibility test must run the real client, not our reading of it. The venv
lives in ``$ALBERT_EDGE_CACHE`` (default ``~/.cache/albert-edge``)/``mediapipe-venv`` and is rebuilt
only when ``requirements.txt`` (full pins) changes: a marker file holds the hash it was built from.
Run it by hand with ``python tests/mediapipe/venv.py``; it prints the interpreter path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
RUNNER = HERE / "run_text_classifier.py"


def venv_dir() -> Path:
    """Where the venv lives (outside the clone, so a fresh clone on the same machine reuses it)."""
    cache = Path(os.environ.get("ALBERT_EDGE_CACHE", Path.home() / ".cache" / "albert-edge"))
    return cache / "mediapipe-venv"


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    """The venv's Python, creating or refreshing the venv when its pins changed. Raises on failure.

    Serialised with a lock file beside the venv, so two test runs sharing the cache never build
    (or delete) it at the same time.
    """
    venv = venv_dir()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / "mediapipe-venv.lock", "w") as lock:
        if os.name != "nt":
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure(venv)


def _ensure(venv: Path) -> Path:
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    marker = venv / "albert-edge-requirements.sha256"
    if marker.is_file() and marker.read_text().strip() == want and _python(venv).is_file():
        return _python(venv)
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(_python(venv)), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "-r", str(REQUIREMENTS)], check=True)
    marker.write_text(want + "\n")
    return _python(venv)


if __name__ == "__main__":
    print(ensure_venv())
