"""Which side is wrong when ``-cpu max`` (SME on) gives wrong int8 results under qemu-aarch64 7.2?

Runs three things under ``-cpu max``, ``max,sme=off`` and ``neoverse-n1`` and compares each with
a reference computed on the host:

1. ONNX Runtime ``MatMulInteger`` on the dynamic-int8 model's first quantized matmul (its real
   int8 query kernel and zero point, uint8 activations): the result is exact int32 arithmetic,
   so the reference is numpy's ``(A - a_zp) @ (B - b_zp)`` in int64 and any difference is a bug.
2. The same kernel as a dynamic-range int8 FULLY_CONNECTED in LiteRT (XNNPACK), against the
   x86 LiteRT result (float scales: tolerance, not bit equality).
3. With ``--models DIR``: the sample's dynamic-int8 .tflite and .onnx (variants/dynamic_int8.*) on
   two test texts through our TextClassifier, max |Δlogit| against x86.
4. One SME instruction, SMOPA (int8 4-way outer product into ZA32 tiles), hand-written in
   ``arm_sme_smopa.s`` (assembled with binutils-aarch64-linux-gnu when installed), against its
   definition in the Arm ARM computed with numpy: decides whether qemu or the library is wrong.

Usage (after ``python -m albert_edge.arm.setup_env``)::

    python -m benchmarks.records.arm_sme_probe --onnx demo_out/models/variants/dynamic_int8.onnx [--models DIR]

Prints one JSON object per case. Needs onnx and TensorFlow on the host (to build the one-op
models); the emulated side needs only the runtime wheels.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from albert_edge.arm.check import _guest_pythonpath
from albert_edge.arm.cpus import make_root, probe
from albert_edge.arm.setup_env import ensure_environment

GUEST = r"""
import sys, numpy as np
kind, model, inputs, out = sys.argv[1:5]
feed = dict(np.load(inputs))
if kind == "onnx":
    import onnxruntime as ort
    o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
    s = ort.InferenceSession(model, sess_options=o, providers=["CPUExecutionProvider"])
    result = s.run(None, feed)[0]
else:
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(model_path=model, num_threads=1)
    r = it.get_signature_runner()
    result = list(r(**feed).values())[0]
np.save(out, result)
"""


def first_matmul_integer(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The int8 weight matrix and its zero point behind the model's first activation MatMulInteger."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "MatMulInteger" and node.input[1] in inits and "attention.query" in node.input[1]:
            return inits[node.input[1]], inits[node.input[3]]
    raise SystemExit(f"{path}: no MatMulInteger with an attention.query kernel")


def matmul_integer_model(weight: np.ndarray, b_zp: np.ndarray, out: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    k, n = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "w", "a_zp", "w_zp"], ["y"])], "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [None, k]),
         helper.make_tensor_value_info("a_zp", TensorProto.UINT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [None, n])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(np.asarray(b_zp).reshape(-1), "w_zp")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(out))


def dynamic_fc_tflite(weight: np.ndarray, out: Path) -> None:
    """A one-FULLY_CONNECTED float model quantized with dynamic range (int8 weights, like the sample's)."""
    import tensorflow as tf

    w = tf.constant(weight.astype(np.float32) * 0.01)

    class FC(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, weight.shape[0]], tf.float32, name="x")])
        def __call__(self, x):
            return {"y": tf.matmul(x, w)}

    module = FC()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    out.write_bytes(conv.convert())


def run_guest(env, root: Path, cpu: str, kind: str, model: Path, feed: dict, work: Path) -> np.ndarray:
    inputs, result = work / "in.npz", work / f"out-{cpu.replace(',', '_')}.npy"
    np.savez(inputs, **feed)
    script = work / "guest.py"
    script.write_text(GUEST)
    env_vars = {"PATH": "/usr/bin:/bin", "PYTHONPATH": _guest_pythonpath(work, env), "HOME": str(work)}
    proc = subprocess.run([str(env.qemu), "-cpu", cpu, "-L", str(root), str(root / "usr/bin/python3.11"), str(script),
                           kind, str(model), str(inputs), str(result)], env=env_vars, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} under -cpu {cpu} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return np.load(result)


SMOPA_GUEST = r"""
import ctypes, json, mmap, sys, numpy as np
code = open(sys.argv[1], "rb").read()
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(code)
fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ctypes.addressof(ctypes.c_char.from_buffer(buf)))
rng = np.random.default_rng(1)
a = rng.integers(-128, 128, 256, dtype=np.int8)
b = rng.integers(-128, 128, 256, dtype=np.int8)
out = np.zeros(4 * 64 * 64, np.int32)
svl = fn(a.ctypes.data, b.ctypes.data, out.ctypes.data)
n = svl // 4
got = out[: 4 * n * n].reshape(4, n, n).astype(np.int64)
# Arm ARM, SMOPA (4-way, 32-bit): ZA[i][j] += sum_k Zn.B[4i+k] * Zm.B[4j+k]; tile t accumulated t+1 times.
ref = a[:svl].astype(np.int64).reshape(n, 4) @ b[:svl].astype(np.int64).reshape(n, 4).T
print(json.dumps({"svl_bits": svl * 8, "elements_wrong": [int((got[t] != (t + 1) * ref).sum()) for t in range(4)],
                  "of": n * n, "row0_got": got[0][0][:4].tolist(), "row0_ref": ref[0][:4].tolist()}))
"""


def smopa_check(env, roots: dict, work: Path) -> None:
    """Assemble arm_sme_smopa.s and compare qemu's SMOPA with the architectural definition."""
    import shutil

    if shutil.which("aarch64-linux-gnu-as") is None:
        print(json.dumps({"case": "SMOPA", "skipped": "apt-get install binutils-aarch64-linux-gnu to assemble it"}))
        return
    source = Path(__file__).with_name("arm_sme_smopa.s")
    subprocess.run(["aarch64-linux-gnu-as", "-o", str(work / "smopa.o"), str(source)], check=True)
    subprocess.run(["aarch64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", str(work / "smopa.o"), str(work / "smopa.bin")], check=True)
    (work / "smopa_guest.py").write_text(SMOPA_GUEST)
    env_vars = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(env.site_packages)}
    for cpu, root in roots.items():
        if not cpu.startswith("max"):
            continue
        for extra in ("", ",sme256=off,sme512=off,sme1024=off,sme2048=off"):
            spec = cpu + extra
            if "sme=off" in spec:
                continue
            proc = subprocess.run([str(env.qemu), "-cpu", spec, "-L", str(root), str(root / "usr/bin/python3.11"),
                                   str(work / "smopa_guest.py"), str(work / "smopa.bin")], env=env_vars, capture_output=True, text=True)
            print(json.dumps({"case": "SMOPA vs Arm ARM definition", "cpu": spec,
                              **(json.loads(proc.stdout) if proc.returncode == 0 else {"error": proc.stderr.strip()[-200:]})}), flush=True)


def real_models(env, roots: dict, models: Path, work: Path) -> None:
    """The sample's dynamic-int8 files on two test texts: max |Δlogit| against x86, per CPU model."""
    from albert_edge.arm.check import run_emulated
    from albert_edge.arm.guest import run_job

    texts = [line.split("\t", 1)[1] for line in
             (Path(__file__).resolve().parents[2] / "examples/albert_tiny_zh_sentiment/test.tsv").read_text(encoding="utf-8").splitlines()[:2]]
    for name in ("variants/dynamic_int8.tflite", "variants/dynamic_int8.onnx"):
        job = {"model": str((models / name).resolve()), "texts": texts, "count_limit": 0, "count_padded": 0}
        host = np.array(run_job(job)["logits"])
        for cpu, root in roots.items():
            result, _, _ = run_emulated(env, probe(env, cpu), root, job, work, timeout=3600)
            delta = float(np.abs(np.array(result["logits"]) - host).max())
            print(json.dumps({"case": "sample model vs x86", "model": name, "cpu": cpu, "max_abs_logit_diff": delta}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onnx", required=True, type=Path, help="the dynamic-int8 .onnx (source of the int8 kernel)")
    parser.add_argument("--cpus", default="max;max,sme=off;neoverse-n1", help="';'-separated -cpu values")
    parser.add_argument("--rows", default="1,7,46", help="activation rows (token counts) to try")
    parser.add_argument("--models", type=Path, help="a quantize --out folder with variants/dynamic_int8.tflite and .onnx "
                        "(--variants dynamic_int8,onnx_dynamic_int8)")
    args = parser.parse_args()
    env = ensure_environment()
    weight, w_zp = first_matmul_integer(args.onnx)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="arm-sme-probe-") as tmp:
        work = Path(tmp)
        onnx_model, tfl_model = work / "mmi.onnx", work / "fc.tflite"
        matmul_integer_model(weight, w_zp, onnx_model)
        dynamic_fc_tflite(weight, tfl_model)
        from ai_edge_litert.interpreter import Interpreter

        host_fc = Interpreter(model_path=str(tfl_model), num_threads=1).get_signature_runner()
        roots = {cpu: make_root(env, probe(env, cpu), work / "roots" / cpu.replace(",", "_")) for cpu in args.cpus.split(";")}
        smopa_check(env, roots, work)
        if args.models:
            real_models(env, roots, args.models, work)
        for rows in (int(r) for r in args.rows.split(",")):
            a = rng.integers(0, 256, size=(rows, weight.shape[0]), dtype=np.uint8)
            a_zp = np.array(rng.integers(100, 156), dtype=np.uint8)
            exact = (a.astype(np.int64) - int(a_zp)) @ (weight.astype(np.int64) - w_zp.astype(np.int64))
            x = rng.standard_normal((rows, weight.shape[0])).astype(np.float32)
            fc_ref = list(host_fc(x=x).values())[0]
            for cpu, root in roots.items():
                got = run_guest(env, root, cpu, "onnx", onnx_model, {"a": a, "a_zp": a_zp}, work).astype(np.int64)
                wrong = got != exact
                print(json.dumps({"case": "ORT MatMulInteger vs numpy int64", "rows": rows, "cpu": cpu,
                                  "elements_wrong": int(wrong.sum()), "of": int(wrong.size),
                                  "max_abs_error": int(np.abs(got - exact).max()),
                                  "wrong_columns": sorted({int(c) for c in np.nonzero(wrong)[1]})[:12]}), flush=True)
                fc = run_guest(env, root, cpu, "tflite", tfl_model, {"x": x}, work)
                print(json.dumps({"case": "LiteRT dynamic-int8 FULLY_CONNECTED vs x86 LiteRT", "rows": rows, "cpu": cpu,
                                  "max_abs_diff": float(np.abs(fc - fc_ref).max()),
                                  "max_abs_ref": float(np.abs(fc_ref).max())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
