"""Fuzzing checkpoints through the CLI, in-process (issue #14).

Seeded byte flips and truncations of a tiny TF1 checkpoint (``.index``, ``.data``) and a tiny Hugging
Face one (``model.safetensors``, ``config.json``), plus structured damage to the safetensors header and
to every config number, go through ``albert-edge inspect`` and ``albert-edge convert``. Every case must
end in exit 0, or exit 2 with exactly one stderr line; never a traceback, never exit 1, and a convert
that fails leaves the previous run's output files byte for byte. About 10-15 s for ~370 cases.
"""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights, write_hf_checkpoint
from albert_edge.outputs.claim import MANIFEST

pytest.importorskip("tensorflow")
from albert_edge.model.tf1 import write_tf1_checkpoint  # noqa: E402

SEED = 20261203
TF1 = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=48, max_position_embeddings=64, embedding_order="project_then_add")
HF = TF1.with_changes(embedding_order="add_then_project")
VOCAB = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]) + "\n"
# (fixture key, file to damage, what to pass on the command line, relative to the copy)
TARGETS = [("tf1", "model.ckpt.index", "model.ckpt"), ("tf1", "model.ckpt.data-00000-of-00001", "model.ckpt"),
           ("hf", "model.safetensors", "."), ("hf", "config.json", ".")]
CONVERT = ["--formats", "onnx", "--max-seq-len", "16"]


@pytest.fixture(scope="module")
def originals(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    tf1 = root / "tf1"
    tf1.mkdir()
    write_tf1_checkpoint(random_weights(TF1, num_labels=2, seed=1), tf1 / "model.ckpt", scheme="brightmart")
    hf = write_hf_checkpoint(random_weights(HF, num_labels=2, seed=2), root / "hf")
    for directory in (tf1, hf):
        (directory / "vocab.txt").write_text(VOCAB, encoding="utf-8")
    return {"tf1": tf1, "hf": hf}


@pytest.fixture(scope="module")
def previous_run(originals, tmp_path_factory) -> Path:
    """Output of a good convert: every fuzzed convert writes over a copy of it."""
    out = tmp_path_factory.mktemp("previous")
    assert main(["convert", str(originals["hf"]), "--out", str(out), *CONVERT]) == 0
    return out


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()} | \
        {p.name: b"<dir>" for p in directory.iterdir() if p.is_dir()}


def run_case(capsys, argv: list[str], out: Path | None, label: str) -> int:
    """Run the CLI; check the outcome contract; return the exit code."""
    before = snapshot(out) if out is not None else None
    capsys.readouterr()
    try:
        code = main(argv)
    except BaseException as exc:  # noqa: BLE001 - any escape is the failure this suite looks for
        pytest.fail(f"{label}: {type(exc).__name__} escaped main(): {str(exc)[:200]}")
    err = capsys.readouterr().err
    assert "Traceback" not in err, f"{label}: {err}"
    assert code in (0, 2), f"{label}: exit {code}: {err}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{label}: {err}"
        if out is not None:
            assert snapshot(out) == before, f"{label}: a failed convert changed the output folder"
    elif out is not None:
        report = json.loads((out / "conversion_report.json").read_text())
        assert all((out / f["file"]).is_file() for f in report["files"])
        assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [MANIFEST]
    return code


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Flip 1-8 random bytes to random values, or cut the file at a random length."""
    if rng.random() < 0.5:
        buffer = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            buffer[rng.randrange(len(buffer))] = rng.randrange(256)
        return bytes(buffer), "flip"
    return data[: rng.randrange(len(data))], "cut"


def damaged_copy(originals: dict[str, Path], target: tuple[str, str, str], data: bytes, where: Path) -> Path:
    key, name, arg = target
    shutil.copytree(originals[key], where)
    (where / name).write_bytes(data)
    return where / arg


def test_byte_flips_and_truncations_are_refused_in_one_line(originals, previous_run, tmp_path, capsys):
    rng = random.Random(SEED)
    outcomes: dict[tuple[str, int], int] = {}
    for number in range(200):
        target = TARGETS[number % len(TARGETS)]
        data, how = mutate((originals[target[0]] / target[1]).read_bytes(), rng)
        case = damaged_copy(originals, target, data, tmp_path / f"c{number}")
        label = f"case {number}: {how} of {target[1]} (seed {SEED})"
        if number % 5:  # every fifth case (all four files in turn) goes through convert instead
            code = run_case(capsys, ["inspect", str(case)], None, label)
        else:
            out = tmp_path / f"out{number}"
            shutil.copytree(previous_run, out)
            code = run_case(capsys, ["convert", str(case), "--out", str(out), *CONVERT], out, label)
        outcomes[(target[1], code)] = outcomes.get((target[1], code), 0) + 1
        shutil.rmtree(tmp_path / f"c{number}")
    # The suite must exercise refusals of every file, not only pass harmless flips.
    assert all(outcomes.get((name, 2), 0) > 5 for _, name, _ in TARGETS), outcomes


def _safetensors_with_header(original: bytes, edit) -> bytes:
    size = struct.unpack("<Q", original[:8])[0]
    header = json.loads(original[8:8 + size])
    edit(header)
    text = json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(text)) + text + original[8 + size:]


def _first_tensor(header: dict) -> dict:
    return header[sorted(k for k in header if k != "__metadata__")[0]]


HEADER_EDITS = {
    "dtype I64": lambda h: _first_tensor(h).update(dtype="I64"),
    "dtype BOOL": lambda h: _first_tensor(h).update(dtype="BOOL"),
    "dtype F64 with same bytes": lambda h: _first_tensor(h).update(dtype="F64"),
    "dtype unknown": lambda h: _first_tensor(h).update(dtype="Q4"),
    "shape bigger": lambda h: _first_tensor(h).update(shape=[10**6, 10**6]),
    "shape negative": lambda h: _first_tensor(h).update(shape=[-1, 4]),
    "shape string": lambda h: _first_tensor(h).update(shape="[4]"),
    "offsets past the end": lambda h: _first_tensor(h).update(data_offsets=[0, 10**12]),
    "offsets reversed": lambda h: _first_tensor(h).update(data_offsets=[100, 0]),
    "tensor is a list": lambda h: h.update({sorted(k for k in h if k != "__metadata__")[0]: [1, 2]}),
    "metadata not strings": lambda h: h.update(__metadata__={"format": {"a": 1}}),
    "header is a list": None,
}


@pytest.mark.parametrize("edit", sorted(HEADER_EDITS))
def test_a_damaged_safetensors_header_is_one_line(originals, tmp_path, capsys, edit):
    original = (originals["hf"] / "model.safetensors").read_bytes()
    if HEADER_EDITS[edit] is None:
        data = struct.pack("<Q", 2) + b"[]" + original[8 + struct.unpack("<Q", original[:8])[0]:]
    else:
        data = _safetensors_with_header(original, HEADER_EDITS[edit])
    case = damaged_copy(originals, ("hf", "model.safetensors", "."), data, tmp_path / "c")
    assert run_case(capsys, ["inspect", str(case)], None, edit) == 2


HOSTILE_VALUES = [-1, 0, 10**9, 10**30, 1.5, "12", None, [], {}, True, float("nan")]
CONFIG_FIELDS = ["vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "num_hidden_groups", "inner_group_num", "max_position_embeddings",
                 "type_vocab_size", "layer_norm_eps", "hidden_act", "model_type", "position_embedding_type"]


@pytest.mark.parametrize("field", CONFIG_FIELDS)
def test_every_config_field_with_hostile_values_is_one_line(originals, tmp_path, capsys, field):
    config = json.loads((originals["hf"] / "config.json").read_text())
    for number, value in enumerate(HOSTILE_VALUES):
        text = json.dumps({**config, field: value})  # NaN is written as the bare NaN token Python accepts
        case = damaged_copy(originals, ("hf", "config.json", "."), text.encode(), tmp_path / f"c{number}")
        assert run_case(capsys, ["inspect", str(case)], None, f"{field}={value!r}") == 2, (field, value)
