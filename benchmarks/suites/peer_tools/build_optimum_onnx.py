"""Peer: optimum-onnx export + ONNX Runtime optimizer (O2) + ONNX Runtime dynamic int8 (runs in its own venv).

Run by ``benchmarks/suites/peers.py`` with ``~/.cache/albert-edge/peers/onnx/bin/python``. Steps, as a
user of optimum-onnx would take them:

1. ``optimum-cli export onnx --model HF --task text-classification OUT/export`` (dynamic batch and
   sequence axes) -> ``model.onnx``.
2. ``ORTOptimizer`` with ``AutoOptimizationConfig.O2()`` (basic + extended fusions: Attention,
   SkipLayerNormalization, FastGelu/BiasGelu, EmbedLayerNormalization) -> ``model_optimized.onnx``.
3. ``ORTQuantizer`` with ``AutoQuantizationConfig.avx512_vnni`` (or ``avx2`` on a CPU without
   AVX-512 VNNI), ``is_static=False``, per-channel off (the config's default) -> ``model_quantized.onnx``.
   It quantizes the **un-optimized export**: run on the O2 graph it fails in ONNX shape inference
   (the fused contrib ops carry no shape functions it can use), which the issue reported; the int8
   file is therefore not fused, and ONNX Runtime fuses what it can at session creation.

Prints one JSON line: the files, the quantization config used, the package versions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from build_args import parse_build_args


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def main() -> int:
    hf, out = parse_build_args()
    export_dir = out / "export"
    cli = Path(sys.executable).with_name("optimum-cli")
    subprocess.run([str(cli), "export", "onnx", "--model", hf, "--task", "text-classification",
                    str(export_dir)], check=True, stdout=sys.stderr)

    from optimum.onnxruntime import ORTOptimizer, ORTQuantizer
    from optimum.onnxruntime.configuration import (
        AutoOptimizationConfig,
        AutoQuantizationConfig,
    )

    optimized_dir = out / "o2"
    optimizer = ORTOptimizer.from_pretrained(export_dir)
    optimizer.optimize(save_dir=optimized_dir, optimization_config=AutoOptimizationConfig.O2())

    flags = cpu_flags()
    qname = "avx512_vnni" if "avx512_vnni" in flags else "avx2"
    qconfig = getattr(AutoQuantizationConfig, qname)(is_static=False, per_channel=False)
    quantized_dir = out / "int8"
    quantizer = ORTQuantizer.from_pretrained(export_dir, file_name="model.onnx")
    quantizer.quantize(save_dir=quantized_dir, quantization_config=qconfig)

    files = {"fp32": export_dir / "model.onnx", "o2": optimized_dir / "model_optimized.onnx",
             "int8": quantized_dir / "model_quantized.onnx"}
    missing = [str(p) for p in files.values() if not p.exists()]
    if missing:
        raise SystemExit(f"optimum-onnx did not write {', '.join(missing)}")
    versions = {d: metadata.version(d) for d in ("optimum", "optimum-onnx", "onnxruntime", "onnx", "transformers", "torch")}
    print(json.dumps({"files": {k: str(v) for k, v in files.items()}, "quantization": f"{qname}, dynamic, per-tensor",
                      "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
