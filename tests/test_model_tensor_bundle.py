"""The TF1 checkpoint read without TensorFlow (model/tensor_bundle.py), judged against TensorFlow's reader.

``inspect`` of a TF1 checkpoint took 41-51 s, all of it a TensorFlow import to read a config and the
variables' shapes (issue #36). The bundle reader must give what TensorFlow gives (names, shapes, values,
hence inspect's output), never import TensorFlow, and refuse a hostile ``.index`` in one line.
About 10 s (TensorFlow writes the fixtures and reads them for the comparison).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.errors import CheckpointError
from albert_edge.model import albert_tiny_zh_config, load_checkpoint, random_weights
from albert_edge.model.tensor_bundle import read_index, read_tensor

tf = pytest.importorskip("tensorflow")
from albert_edge.model.tf1 import write_tf1_checkpoint  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The sample's architecture (albert_tiny_zh, 2 labels) in brightmart naming, random weights."""
    directory = tmp_path_factory.mktemp("tiny")
    write_tf1_checkpoint(random_weights(albert_tiny_zh_config(), num_labels=2), directory / "model.ckpt",
                         scheme="brightmart")
    return directory


@pytest.fixture(scope="module")
def mixed_dtypes(tmp_path_factory) -> Path:
    """One variable per dtype TF1 checkpoints hold, written by TensorFlow's own SaveV2."""
    import ml_dtypes

    rng = np.random.default_rng(3)
    values = {f"v/{dtype}": rng.standard_normal((3, 5)).astype(dtype)
              for dtype in ("float32", "float64", "float16", ml_dtypes.bfloat16)}
    values["v/int64"] = np.arange(7, dtype=np.int64)
    values["v/bool"] = np.array([True, False])
    values["v/scalar"] = np.float32(2.5)
    values["global_step"] = np.int64(1085)
    prefix = tmp_path_factory.mktemp("dtypes") / "model.ckpt"
    names = sorted(values)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(values[n]) for n in names])
    return prefix


def test_names_shapes_and_values_equal_tensorflows(mixed_dtypes):
    reader = tf.train.load_checkpoint(str(mixed_dtypes))
    shards, entries = read_index(f"{mixed_dtypes}.index")
    assert shards == 1
    assert {n: e.shape for n, e in entries.items()} == \
        {n: tuple(s) for n, s in reader.get_variable_to_shape_map().items()}
    for name, entry in entries.items():
        expected = reader.get_tensor(name)
        got = read_tensor(mixed_dtypes, shards, name, entry)
        if entry.dtype == "bfloat16":  # decoded straight to float32, exactly
            expected = expected.astype(np.float32)
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_weights_read_without_tensorflow_equal_the_tensorflow_reading(tiny):
    with_tf = load_checkpoint(tiny)
    without = load_checkpoint(tiny, verify_checksums=False)
    assert (without.scheme, without.num_labels, without.config) == (with_tf.scheme, with_tf.num_labels, with_tf.config)
    assert sorted(without.tensors) == sorted(with_tf.tensors)
    for name, array in with_tf.tensors.items():
        np.testing.assert_array_equal(without.tensors[name], array, err_msg=name)


def test_inspect_json_is_unchanged_by_the_reader(tiny, capsys, monkeypatch):
    assert main(["inspect", str(tiny), "--json", "--list-ignored"]) == 0
    fast = json.loads(capsys.readouterr().out)
    import albert_edge.cli.inspect_cmd as inspect_cmd

    real = inspect_cmd.load_checkpoint
    monkeypatch.setattr(inspect_cmd, "load_checkpoint", lambda path, config, **_: real(path, config))
    assert main(["inspect", str(tiny), "--json", "--list-ignored"]) == 0
    assert json.loads(capsys.readouterr().out) == fast
    assert fast["parameters"] == 4_175_778


def test_inspect_of_a_tf1_checkpoint_never_imports_tensorflow(tiny):
    code = ("import sys; from albert_edge.cli import main; code = main(['inspect', sys.argv[1]]); "
            "print('TF' if any(m.split('.')[0] in ('tensorflow', 'keras') for m in sys.modules) else 'none'); "
            "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, str(tiny)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "parameters:  4,175,778" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "none"


# --- hostile .index files ----------------------------------------------------------------------------

def _footer_handles(data: bytes) -> tuple[int, int]:
    """(offset, size) of the index block, decoded from the footer's second BlockHandle."""
    pos, numbers = len(data) - 48, []
    while len(numbers) < 4:
        value, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        numbers.append(value)
    return numbers[2], numbers[3]


def _hostile(original: bytes) -> dict[str, bytes]:
    index_offset, index_size = _footer_handles(original)
    footer = len(original) - 48
    big_handle = b"\xff\xff\xff\xff\x0f" * 2
    return {
        "empty": b"",
        "cut in the footer": original[:-9],
        "cut before the footer": original[:len(original) // 2],
        "magic wrong": original[:-1] + b"\x00",
        "index handle past the end": original[:footer] + b"\x00\x00" + big_handle
        + b"\x00" * (40 - 2 - len(big_handle)) + original[-8:],
        "varint never ends": original[:footer] + b"\xff" * 40 + original[-8:],
        "index block byte flipped": original[:index_offset] + bytes([original[index_offset] ^ 0xFF])
        + original[index_offset + 1:],
        "restart count huge": original[:index_offset + index_size - 4] + struct.pack("<I", 10**9)
        + original[index_offset + index_size:],
    }


@pytest.mark.parametrize("case", ["empty", "cut in the footer", "cut before the footer", "magic wrong",
                                  "index handle past the end", "varint never ends", "index block byte flipped",
                                  "restart count huge"])
def test_a_hostile_index_is_one_line_from_inspect(tiny, tmp_path, capsys, case):
    directory = Path(shutil.copytree(tiny, tmp_path / "c"))
    index = directory / "model.ckpt.index"
    index.write_bytes(_hostile(index.read_bytes())[case])
    with pytest.raises(CheckpointError):
        read_index(index)
    assert main(["inspect", str(directory)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "model.ckpt" in err


def test_a_data_shard_shorter_than_its_entries_is_one_line(tiny, tmp_path, capsys):
    directory = Path(shutil.copytree(tiny, tmp_path / "c"))
    shard = directory / "model.ckpt.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[:1000])
    assert main(["inspect", str(directory)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "data-00000-of-00001: variable" in err, err
