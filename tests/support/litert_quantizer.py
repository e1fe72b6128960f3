"""litert-quantizer (Google's quantizer for .tflite files), run through its documented Python API.

The test extra pins it (pyproject.toml, constraints.txt), so it is in albert-edge's own environment;
``quantize_dynamic_int8`` runs it in a child process all the same, as a user's script would, so that
nothing it imports or configures leaks into the test process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REQUIREMENT = "litert-quantizer==0.11.0"

# The README's "Python API" example; by default with the recipe it recommends for CPU (dynamic int8
# weights, float activations quantized at run time).
_SCRIPT = """
import sys
from litert_quantizer import quantizer, recipe

qt = quantizer.Quantizer(sys.argv[1])
qt.load_quantization_recipe(getattr(recipe, sys.argv[3])())
qt.quantize().export_model(sys.argv[2])
"""


def quantize_dynamic_int8(source: Path, target: Path, recipe: str = "dynamic_wi8_afp32") -> Path:
    """``target``: litert-quantizer's ``recipe`` (default ``dynamic_wi8_afp32``) of the .tflite ``source``."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(source), str(target), recipe], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0 or not target.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise AssertionError(f"litert-quantizer failed on {source}: {tail}")
    return target
