"""The model's own memory: a runtime-only baseline, then load / first inference / peak, minus it."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tests.support.bench_models import _pack, shared_models

from albert_edge.bench_latency.memory import METHOD_HWM, METHOD_SAMPLED, aggregate_memory, foreign_modules
from albert_edge.runtime.pack import attach_tflite_pack

WIDTH = 1024   # three 1024x1024 float layers: ~12.6 MB of fp32 weights, ~3.2 MB as int8


def heavy_tflite_bytes(quantize: bool) -> bytes:
    """A model whose weights dwarf the runtime's noise, so fp32 and int8 memory must differ."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    emb = rng.normal(0, 1, (128, WIDTH)).astype(np.float32)
    layers = [rng.normal(0, 0.03, (WIDTH, WIDTH)).astype(np.float32) for _ in range(3)]
    head = rng.normal(0, 0.1, (WIDTH, 2)).astype(np.float32)

    class Heavy(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = tf.Variable(emb)
            self.layers = [tf.Variable(w) for w in layers]
            self.head = tf.Variable(head)

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=n)
                                      for n in ("input_ids", "attention_mask", "token_type_ids")])
        def serve(self, input_ids, attention_mask, token_type_ids):
            h = tf.gather(self.emb, input_ids) + tf.expand_dims(tf.cast(token_type_ids, tf.float32), -1)
            for w in self.layers:
                h = tf.nn.relu(tf.matmul(h, w))
            mask = tf.expand_dims(tf.cast(attention_mask, tf.float32), -1)
            return {"logits": tf.matmul(tf.reduce_sum(h * mask, 1), self.head)}

    module = Heavy()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


@functools.cache
def heavy_models() -> dict[str, Path]:
    directory = Path(tempfile.mkdtemp(prefix="albert-edge-bench-memory-"))
    paths = {"fp32": directory / "heavy_fp32.tflite", "int8": directory / "heavy_int8.tflite"}
    for key, path in paths.items():
        path.write_bytes(attach_tflite_pack(heavy_tflite_bytes(key == "int8"), _pack(key)))
    return paths


def worker(model: Path, backend: str = "litert", seq: int = 32) -> dict:
    argv = [sys.executable, "-m", "albert_edge.bench_latency.worker", "--model", str(model), "--backend", backend,
            "--threads", "1", "--seq-len", str(seq), "--runs", "5", "--warmup", "1"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"], result
    return result


@pytest.mark.parametrize("key,backend", [("fp32", "litert"), ("onnx", "onnxruntime")])
def test_worker_imports_only_its_runtime_and_reports_every_reading(key, backend):
    result = worker(shared_models()[key], backend)
    memory = result["memory"]
    assert result["foreign_modules"] == [] and memory["imported_before_baseline"] == []
    assert 0 < memory["baseline_mb"] <= memory["after_load_mb"]
    assert memory["peak_timed_mb"] >= memory["after_first_mb"] * 0.95
    assert memory["model_peak_mb"] == pytest.approx(memory["peak_timed_mb"] - memory["baseline_mb"])
    if Path("/proc/self/status").exists():
        assert memory["method"] in (METHOD_HWM, METHOD_SAMPLED)


def test_model_memory_follows_the_weights_not_the_process():
    """fp32 holds ~4x the weight bytes of int8: its model memory must exceed int8's by most of that gap."""
    paths = heavy_models()
    sizes = {k: p.stat().st_size / 2**20 for k, p in paths.items()}
    memory = {k: worker(p)["memory"] for k, p in paths.items()}
    assert memory["fp32"]["model_after_load_mb"] > 0.8 * sizes["fp32"]
    gap = memory["fp32"]["model_peak_mb"] - memory["int8"]["model_peak_mb"]
    assert gap > 0.7 * (sizes["fp32"] - sizes["int8"]), (sizes, memory)
    # Same runtime, same imports: the baselines agree within a few MB whatever the model.
    assert abs(memory["fp32"]["baseline_mb"] - memory["int8"]["baseline_mb"]) < 8


def test_aggregate_takes_the_median_per_figure_and_keeps_the_method():
    from albert_edge.bench_latency.memory import PAGE_CACHE_READ

    readings = [{"baseline_mb": 40.0 + i, "model_after_load_mb": v, "model_after_first_mb": v + 1,
                 "model_peak_mb": v + 2, "method": METHOD_HWM, "page_cache": PAGE_CACHE_READ}
                for i, v in enumerate((10.0, 30.0, 12.0))]
    out = aggregate_memory([*readings, None])
    assert out["model_after_load_mb"] == 12.0 and out["model_peak_mb"] == 14.0 and out["baseline_mb"] == 41.0
    assert out["method"] == METHOD_HWM and out["page_cache"] == PAGE_CACHE_READ and len(out["rounds"]) == 3
    assert aggregate_memory([None]) is None


def test_foreign_module_check_sees_an_imported_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", object())
    assert "torch" in foreign_modules()
    assert "torch" not in foreign_modules(allowed=("torch",))


def shared_layer_tflite_bytes() -> bytes:
    """One 256x256 weight applied three times (ALBERT's pattern) and one used once: 4 uses, 2 buffers."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    shared = rng.normal(0, 0.05, (256, 256)).astype(np.float32)
    head = rng.normal(0, 0.1, (256, 2)).astype(np.float32)

    class Shared(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared, self.head = tf.Variable(shared), tf.Variable(head)

        @tf.function(input_signature=[tf.TensorSpec([None, 256], tf.float32, name="x")])
        def serve(self, x):
            for _ in range(3):
                x = tf.nn.relu(tf.matmul(x, self.shared))
            return {"logits": tf.matmul(x, self.head)}

    module = Shared()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    return converter.convert()


def test_weight_sharing_tells_a_shared_weight_from_copies():
    """The packed-weight figures count every use and every distinct buffer (the gap is what a cache saves)."""
    from albert_edge.bench_latency.memory import weight_sharing
    from albert_edge.runtime.flatbuffer import read_tflite_graph

    sharing = weight_sharing(read_tflite_graph(shared_layer_tflite_bytes()))
    assert sharing["packed_weight_uses"] == 4 and sharing["packed_weight_buffers"] == 2, sharing
    layer, head = 256 * 256 * 4 / 2**20, 256 * 2 * 4 / 2**20
    assert sharing["weights_packed_per_use_mb"] == pytest.approx(3 * layer + head)
    assert sharing["weights_packed_once_mb"] == pytest.approx(layer + head)


def test_breakdown_charges_the_file_and_nothing_imported_after_the_baseline():
    """The file is mapped as an app's ``from_file`` maps it and its resident pages are the model's (the
    interpreter reads every weight of this graph to pack it), the parts add up to the model's memory, and no
    module loaded after the baseline (numpy.random, importlib.metadata's email.* were: 7.7 MB of the sample's
    'model' memory) is charged to the model."""
    path = heavy_models()["fp32"]
    memory = worker(path)["memory"]
    assert memory["imported_after_baseline"] == []
    parts = memory["part_file_mb"] + memory["part_interpreter_mb"] + memory["part_first_call_mb"]
    assert parts == pytest.approx(memory["model_after_first_mb"])
    assert memory["packed_weight_uses"] == memory["packed_weight_buffers"] == 4   # three layers and the head
    if not Path("/proc/self/smaps").exists():
        pytest.skip("no /proc/self/smaps")
    assert memory["part_file_mapped_mb"] > 0.9 * path.stat().st_size / 2**20, memory
    own = memory["part_file_mapped_mb"] + memory["weights_packed_per_use_mb"] + memory["part_arena_rest_mb"]
    assert own == pytest.approx(memory["model_own_after_first_mb"])


def test_file_pages_are_counted_per_mapping_of_that_file_only(tmp_path):
    """``file_rss_mb`` sums the resident pages of the model file's mappings, not the heap, a library or another
    file (the breakdown's "file mapped" part)."""
    from albert_edge.bench_latency.memory import file_rss_mb

    model = tmp_path / "model.tflite"
    model.write_bytes(b"x")
    text = SMAPS_SAMPLE.replace("/work/model.tflite", str(model)) + f"7f04 r--s 00000000 08:01 43 {model}\nRss: 256 kB\n"
    assert file_rss_mb(model, text) == pytest.approx(1.25)
    assert file_rss_mb(tmp_path / "other.tflite", text) == 0.0


SMAPS_SAMPLE = """\
7f00 r-xp 00000000 08:01 42 /usr/lib/libtensorflowlite.so.2
Size:               8192 kB
Rss:                3072 kB
Pss:                3072 kB
7f01 rw-p 00000000 00:00 0
Size:               4096 kB
Rss:                2048 kB
7f02 r--p 00000000 08:01 43 /work/model.tflite
Rss:                1024 kB
7f03 r-xp 00000000 08:01 44 /venv/site-packages/_pywrap_litert.cpython-311-x86_64-linux-gnu.so
Rss:                 512 kB
"""


def test_library_pages_count_shared_objects_only():
    """Code pages of .so files (mapped, shared, the same for every model), never the heap or a mapped model."""
    from albert_edge.bench_latency.memory import library_rss_mb

    assert library_rss_mb(SMAPS_SAMPLE) == pytest.approx(3.5)


def test_library_code_the_runtime_faults_in_is_split_from_the_model_s_own_memory():
    """LiteRT's and XNNPACK's code pages are faulted in by the process's first interpreter (3.5 MiB for the
    sample, whatever the model): the worker reports them apart, and the model's own memory without them."""
    memory = worker(heavy_models()["int8"])["memory"]
    if not Path("/proc/self/smaps").exists():
        pytest.skip("no /proc/self/smaps")
    assert memory["part_library_code_mb"] > 0.5, memory
    assert memory["model_own_after_first_mb"] == pytest.approx(
        memory["model_after_first_mb"] - memory["part_library_code_mb"])
    assert memory["model_own_after_first_mb"] > memory["part_file_mapped_mb"] > 0, memory


def sparse_table_tflite_bytes(rows: int) -> bytes:
    """A 16 MiB fp32 word table of which a call gathers a few rows spread over all of it (ids 1-99 times 163),
    and one small matmul: most of the file is pages no call touches, next to pages one does."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    table = rng.normal(0, 1, (rows, 256)).astype(np.float32)
    head = rng.normal(0, 0.1, (256, 2)).astype(np.float32)

    class Sparse(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table, self.head = tf.Variable(table), tf.Variable(head)

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=n)
                                      for n in ("input_ids", "attention_mask", "token_type_ids")])
        def serve(self, input_ids, attention_mask, token_type_ids):
            h = tf.gather(self.table, input_ids * 163) + tf.expand_dims(tf.cast(token_type_ids + attention_mask, tf.float32), -1)
            return {"logits": tf.matmul(tf.reduce_mean(h, 1), self.head)}

    module = Sparse()
    return tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module).convert()


def test_the_file_is_measured_as_read_from_storage_not_as_its_writer_left_it(tmp_path):
    """Record 0307: the file's resident pages are the model's, and they depended on the file's history. On a
    kernel whose writes make large page-cache folios, a file written a moment ago is mapped whole at the first
    touch (the sample's int8 file: 4.1 of 4.2 MiB, against 1.6 read from storage). The worker drops the written
    pages and reads the file back first, so only what the load and the call touch stays: here a few rows of a
    16 MiB table. ``--page-cache as-is`` keeps the old reading."""
    from dataclasses import replace

    from albert_edge.bench_latency.memory import PAGE_CACHE_READ

    rows = 16384
    pack = replace(_pack("fp32"), tokenizer_asset=("\n".join(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"t{i}" for i in range(rows - 5))]) + "\n").encode())
    path = tmp_path / "sparse_table.tflite"
    path.write_bytes(attach_tflite_pack(sparse_table_tflite_bytes(rows), pack))   # written now: in the page cache
    memory = worker(path)["memory"]
    assert memory["page_cache"] == PAGE_CACHE_READ
    if not Path("/proc/self/smaps").exists():
        pytest.skip("no /proc/self/smaps")
    size_mb = path.stat().st_size / 2**20
    assert size_mb > 15 and memory["part_file_mapped_mb"] < 0.6 * size_mb, memory
