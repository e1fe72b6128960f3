"""Peer: Hugging Face Optimum 1.27 TFLite export, fp32 and int8-dynamic, static [1, 128] (runs in its own venv).

Run by ``benchmarks/suites/peers.py`` with ``~/.cache/albert-edge/peers/tflite/bin/python``. Optimum 1.27 is
the last release with a TFLite exporter (``optimum-cli export tflite``; removed in 2.0). Per
exported file it is the CLI's own entry point, ``python -m optimum.exporters.tflite --model HF
--task text-classification --batch_size 1 --sequence_length 128 [--quantize int8-dynamic] OUT``;
TFLite export takes only static shapes, so both files are [1, 128].

**Import guard.** ``optimum.exporters.tflite.convert`` imports ``optimum.utils.preprocessing``, whose
``__init__`` imports ``image_classification``, which imports torch and torchvision at import time,
for a text model too. The venv has no torch (TensorFlow 2.12.1, Optimum's own pin, wants
typing-extensions < 4.6, torch 2.13 >= 4.10) and the registry's torchvision for torch 2.13 is a CUDA
build whose ops do not load against the CPU torch ("operator torchvision::nms does not exist"). This
script therefore registers, before running the exporter, a module for exactly
``optimum.utils.preprocessing.image_classification`` whose ``ImageClassificationProcessing`` raises
as soon as it is used. Nothing in the text path uses it: Optimum reaches task processors only to
calibrate static int8, which this peer does not run. torch and torchvision are not faked: neither is
importable in this venv, and an accidental use fails loudly.

Prints one JSON line: the files and the package versions.
"""

from __future__ import annotations

import json
import runpy
import sys
import types
from importlib import metadata
from pathlib import Path

from build_args import parse_build_args

GUARDED = "optimum.utils.preprocessing.image_classification"


class ImageClassificationProcessing:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{GUARDED} is disabled by benchmarks/suites/peer_tools/build_optimum_tflite.py: it needs "
                           "torchvision, which has no CPU build for torch 2.13 in the registry")


def install_import_guard() -> None:
    """Make Optimum's image-classification preprocessing importable without torch/torchvision."""
    module = types.ModuleType(GUARDED, "import guard: image preprocessing needs torchvision (see build_optimum_tflite.py)")
    module.ImageClassificationProcessing = ImageClassificationProcessing
    sys.modules[GUARDED] = module


def export(hf: str, out: Path, quantize: str | None) -> Path:
    """Run Optimum's TFLite exporter entry point in this process; return the written model.tflite."""
    argv = ["optimum.exporters.tflite", "--model", hf, "--task", "text-classification",
            "--batch_size", "1", "--sequence_length", "128", str(out)]
    if quantize:
        argv[1:1] = ["--quantize", quantize]
    saved = sys.argv
    sys.argv = argv
    try:
        runpy.run_module("optimum.exporters.tflite", run_name="__main__", alter_sys=False)
    finally:
        sys.argv = saved
    path = out / "model.tflite"
    if not path.exists():
        raise SystemExit(f"Optimum did not write {path}")
    return path


def main() -> int:
    hf, out = parse_build_args()
    install_import_guard()
    stdout, sys.stdout = sys.stdout, sys.stderr  # the exporter prints; our stdout is one JSON line
    try:
        files = {"fp32": export(hf, out / "fp32", None),
                 "int8_dynamic": export(hf, out / "int8_dynamic", "int8-dynamic")}
    finally:
        sys.stdout = stdout
    versions = {d: metadata.version(d) for d in ("optimum", "tensorflow-cpu", "transformers", "numpy")}
    print(json.dumps({"files": {k: str(v) for k, v in files.items()}, "import_guard": GUARDED,
                      "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
