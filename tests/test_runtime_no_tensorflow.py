"""The runtime imports and predicts with TensorFlow (and onnx) impossible to import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from tests.support.runtime_models import write_models

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class Block(importlib.abc.MetaPathFinder):
        # Raise for the heavy packages the runtime must never need.
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top in ("tensorflow", "onnx", "tf_keras", "keras"):
                raise ImportError(f"blocked import of {name} in the runtime test")
            return None

    sys.meta_path.insert(0, Block())
    from albert_edge.runtime import TextClassifier
    from albert_edge.runtime.backends import available_backends

    out = {"available": available_backends()}
    for path in sys.argv[1:]:
        clf = TextClassifier.from_file(path, num_threads=1)
        pred = clf.predict("这家酒店服务很好")
        batch = clf.predict_batch(["很差", "很好"])
        out[path] = {"backend": clf.backend_name, "label": pred.label, "batch": [p.label for p in batch]}
    from albert_edge.cli import main
    out["cli_exit"] = main(["predict", sys.argv[1], "很好", "--threads", "1"])
    out["heavy_modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "onnx", "keras"))
    print(json.dumps(out))
    """
)


def test_runtime_predicts_with_tensorflow_and_onnx_blocked(tmp_path):
    from albert_edge.convert.tflite_metadata import attach_standard_metadata
    from albert_edge.runtime.pack import read_pack

    paths = write_models(tmp_path)
    # The current export layout: standard TFLite metadata read (and cross-checked) without TensorFlow.
    standard = tmp_path / "bag_standard.tflite"
    standard.write_bytes(attach_standard_metadata(paths["tflite"].read_bytes(), read_pack(paths["tflite"])))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(paths["tflite"]), str(paths["onnx"]), str(standard)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["heavy_modules"] == []
    assert out["cli_exit"] == 0 and "pos\t" in proc.stdout
    assert out[str(paths["tflite"])] == {"backend": "litert", "label": "pos", "batch": ["neg", "pos"]}
    assert out[str(paths["onnx"])] == {"backend": "onnxruntime", "label": "pos", "batch": ["neg", "pos"]}
    assert out[str(standard)] == {"backend": "litert", "label": "pos", "batch": ["neg", "pos"]}


def test_blocking_finder_really_blocks_tensorflow():
    # Guards the test above against passing vacuously.
    script = SCRIPT.split("from albert_edge")[0] + "import tensorflow\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "blocked import of tensorflow" in proc.stderr


def test_runtime_package_source_never_imports_tensorflow_or_onnx():
    import pathlib

    from albert_edge import runtime

    root = pathlib.Path(runtime.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import onnx ", "import onnx\n", "from onnx ", "import tensorflow", "from tensorflow")) or stripped == "import onnx":
                offenders.append(f"{path.name}: {stripped}")
    if not offenders:
        return
    pytest.fail(f"runtime imports heavy packages: {offenders}")
