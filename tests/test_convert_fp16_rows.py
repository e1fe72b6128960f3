"""fp16 files gather their tables' rows before dequantizing them: the same numbers, no float32 table copy."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from albert_edge.convert.tflite_fp16_rows import fp16_rows_after_gather
from albert_edge.runtime.flatbuffer import read_tflite_graph

ROWS, WIDTH = 16384, 256   # a 16 MiB float32 table (8 MiB as float16)


def fp16_embedding_model() -> bytes:
    """The converter's own fp16 output for a word table gathered by ids, then a small dense layer."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    table = rng.normal(0, 1, (ROWS, WIDTH)).astype(np.float32)
    dense = rng.normal(0, 0.05, (WIDTH, 2)).astype(np.float32)

    class Embed(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table, self.dense = tf.Variable(table), tf.Variable(dense)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.int32, name="input_ids")])
        def serve(self, input_ids):
            return {"logits": tf.matmul(tf.gather(self.table, input_ids), self.dense)}

    module = Embed()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def gather_and_next(data: bytes) -> list[tuple[str, str]]:
    """The GATHER and the op after it, each with its first input's type."""
    graph = read_tflite_graph(data)
    at = next(i for i, op in enumerate(graph.ops) if op.name == "GATHER")
    return [(op.name, graph.tensors[op.inputs[0]].dtype) for op in graph.ops[at:at + 2]]


def run(data: bytes, ids: np.ndarray, xnnpack: bool) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kwargs = {} if xnnpack else {"experimental_op_resolver_type": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
    interpreter = Interpreter(model_content=data, **kwargs)
    return next(iter(interpreter.get_signature_runner("serving_default")(input_ids=ids).values()))


@pytest.fixture(scope="module")
def files() -> tuple[bytes, bytes]:
    before = fp16_embedding_model()
    after, swapped = fp16_rows_after_gather(before)
    assert swapped == 1
    return before, after


def test_the_rows_are_gathered_in_fp16_then_dequantized(files):
    before, after = files
    assert gather_and_next(before)[0] == ("GATHER", "float32")   # of the whole table, dequantized
    assert gather_and_next(after) == [("GATHER", "float16"), ("DEQUANTIZE", "float16")]
    assert fp16_rows_after_gather(after) == (after, 0)   # nothing left to swap; an fp32 file is untouched too


@pytest.mark.parametrize("xnnpack", [True, False])
def test_the_numbers_are_the_same_bit_for_bit(files, xnnpack):
    before, after = files
    ids = np.random.default_rng(1).integers(0, ROWS, size=37, dtype=np.int32)
    np.testing.assert_array_equal(run(after, ids, xnnpack), run(before, ids, xnnpack))


PROBE = """
import json, sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS")) / 1024
data = open(sys.argv[1], "rb").read()
base = rss()
interpreter = Interpreter(model_content=data)
interpreter.get_signature_runner("serving_default")(input_ids=np.arange(64, dtype=np.int32))
print(json.dumps(rss() - base))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS")
def test_the_first_call_no_longer_holds_a_float32_table(files):
    directory = Path(tempfile.mkdtemp(prefix="albert-edge-fp16-rows-"))
    grown = {}
    for name, data in zip(("before", "after"), files):
        (directory / f"{name}.tflite").write_bytes(data)
        proc = subprocess.run([sys.executable, "-c", PROBE, str(directory / f"{name}.tflite")],
                              capture_output=True, text=True, timeout=120, check=True)
        grown[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    table_fp32_mib = ROWS * WIDTH * 4 / 2**20
    assert grown["before"] - grown["after"] > 0.8 * table_fp32_mib, grown
