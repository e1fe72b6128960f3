"""Seeded byte-flips and truncations of the sample's real model files and of each pack member.

Every case runs ``albert-edge predict`` on the damaged file (in-process, ``cli.main``; a handful
also as real subprocesses, where C-level writes to fd 2 and crashes would show) and asserts the
README's contract for hostile files:

* exit 2 with exactly one line on stderr naming the file, or exit 0 with normal output (a flip
  inside a float weight legitimately still runs; a truncation never does);
* never exit 1, never a traceback;
* the damaged input file is unchanged and nothing else is left in its directory.

Damage is aimed where it matters as well as anywhere: the first and last 64 KB of the graph
(flatbuffer tables and vectors, ONNX graph structure), the pack archive, and each pack member
re-archived with a valid CRC (a flip under the zip's CRC only tests zipfile). The sample is
converted once per session (``conftest.sample_models``).
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.runtime.pack import tflite_pack_offset

SEED = 14
TEXTS = ("这家酒店服务很好", "房间很差")
MEMBERS = ("albert_edge.json", "labels.txt", "vocab.txt")
SRC = str(Path(__file__).resolve().parents[1] / "src")


@dataclass(frozen=True)
class Case:
    """One damage: ``target`` is a sample file key; ``member`` a pack member or None for the whole file."""

    target: str
    kind: str          # "flip" | "truncate"
    region: str        # "any" | "head" | "tail" | "pack" | a member name
    seed: int

    @property
    def id(self) -> str:
        return f"{self.target}-{self.region}-{self.kind}-{self.seed}"


def _cases() -> list[Case]:
    cases = []
    n = 0
    for target, flips, truncations in (("fp32_tflite", 60, 15), ("int8_tflite", 60, 15), ("fp32_onnx", 45, 10)):
        for i in range(flips):
            cases.append(Case(target, "flip", ("any", "head", "tail", "pack")[i % 4], n))
            n += 1
        for _ in range(truncations):
            cases.append(Case(target, "truncate", "any", n))
            n += 1
    for target, per_member in (("fp32_tflite", 24), ("fp32_onnx", 10)):
        for member in MEMBERS:
            for i in range(per_member):
                cases.append(Case(target, "truncate" if i % 4 == 3 else "flip", member, n))
                n += 1
    return cases


CASES = _cases()


def _flip(data: bytes, lo: int, hi: int, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(lo, hi)] ^= 1 << rng.randrange(8)
    return bytes(out)


def _damage(data: bytes, lo: int, hi: int, kind: str, rng: random.Random) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(lo, hi)]
    return _flip(data, lo, hi, rng)


def _tflite_members(data: bytes) -> tuple[bytes, dict[str, bytes]]:
    start = tflite_pack_offset(data)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return data[:start], {info.filename: zf.read(info) for info in zf.infolist()}


def _tflite_with_members(flat: bytes, members: dict[str, bytes]) -> bytes:
    """The flatbuffer with ``members`` appended as a valid ZIP_STORED archive (CRCs match the damage)."""
    buf = io.BytesIO()
    buf.write(flat)
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, blob in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), blob)
    return buf.getvalue()


def _onnx_with_members(data: bytes, damage) -> bytes:
    onnx = pytest.importorskip("onnx")
    model = onnx.load_from_string(data)
    props = {p.key: p.value for p in model.metadata_props}
    props = damage(props)
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, props)
    return model.SerializeToString()


def damaged_bytes(case: Case, original: bytes) -> bytes:
    """The damaged file for ``case`` (deterministic in ``case.seed``)."""
    rng = random.Random(SEED * 100_003 + case.seed)
    size = len(original)
    if case.region in MEMBERS:
        if case.target.endswith("tflite"):
            flat, members = _tflite_members(original)
            blob = members[case.region]
            members[case.region] = _damage(blob, 0, len(blob), case.kind, rng)
            return _tflite_with_members(flat, members)

        def damage(props: dict[str, str]) -> dict[str, str]:
            blob = props[case.region].encode("utf-8")
            props[case.region] = _damage(blob, 0, len(blob), case.kind, rng).decode("utf-8", "replace")
            return props
        return _onnx_with_members(original, damage)
    graph_end = tflite_pack_offset(original) if case.target.endswith("tflite") else size
    if case.kind == "truncate":
        return original[: rng.randrange(1, size)]
    lo, hi = {
        "any": (0, size),
        "head": (0, min(65536, graph_end)),
        "tail": (max(0, graph_end - 65536), graph_end),
        # .tflite: the appended zip; .onnx: the metadata_props (the pack) at the end of the file.
        "pack": (graph_end, size) if graph_end < size else (max(0, size - 150_000), size),
    }[case.region]
    return _flip(original, lo, hi, rng)


@pytest.fixture(scope="module")
def originals(sample_models) -> dict[str, bytes]:
    return {
        "fp32_tflite": sample_models.fp32_tflite.read_bytes(),
        "int8_tflite": sample_models.int8_tflite.read_bytes(),
        "fp32_onnx": sample_models.fp32_onnx.read_bytes(),
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _write_case(case: Case, originals: dict[str, bytes], workdir: Path) -> tuple[Path, str]:
    path = workdir / f"{case.id}.{'onnx' if case.target.endswith('onnx') else 'tflite'}"
    data = damaged_bytes(case, originals[case.target])
    path.write_bytes(data)
    return path, hashlib.sha256(data).hexdigest()


def _check_outcome(case: Case, path: Path, code: int, out: str, err: str) -> None:
    assert code in (0, 2), f"{case.id}: exit {code}: {err}"
    assert "Traceback" not in err, f"{case.id}: {err}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"{case.id}: {err}"
        assert lines[0].startswith("albert-edge predict: error: ") and str(path) in lines[0], f"{case.id}: {err}"
        assert out == ""
    else:
        assert case.kind != "truncate" or case.region in MEMBERS, f"{case.id}: a truncated model ran"
        assert err == "", f"{case.id}: {err}"
        rows = [line.split("\t") for line in out.splitlines()]
        assert len(rows) == 2 and all(len(r) == 3 and r[2] == t for r, t in zip(rows, TEXTS)), f"{case.id}: {out}"
        assert all(0.0 <= float(r[1]) <= 1.0 for r in rows)


@pytest.mark.slow  # the sample's real export (sample_models), a few hundred predict runs
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_damaged_model_file_is_refused_in_one_line_or_runs_normally(case, originals, workdir, capfd, monkeypatch):
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    path, digest = _write_case(case, originals, workdir)
    try:
        code = main(["predict", str(path), *TEXTS])
        captured = capfd.readouterr()
        _check_outcome(case, path, code, captured.out, captured.err)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{case.id}: the input file changed"
        assert sorted(p.name for p in workdir.iterdir()) == sorted(["logs", path.name]), f"{case.id}: files left behind"
    finally:
        path.unlink()
        for log in logs.iterdir():
            log.unlink()


SUBPROCESS_CASES = [c for c in CASES if c.seed in (1, 2, 76, 77, 150, 200, 260)]


@pytest.mark.slow  # the sample's real export (sample_models), in fresh processes
@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[c.id for c in SUBPROCESS_CASES])
def test_damaged_model_file_in_a_real_process(case, originals, workdir):
    """As a user runs it: C-level writes to fd 2 and crashes would show here, not in-process."""
    path, digest = _write_case(case, originals, workdir)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run([sys.executable, "-m", "albert_edge", "predict", str(path), *TEXTS],
                              capture_output=True, env=env, timeout=300)
        _check_outcome(case, path, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    finally:
        path.unlink()


ANDROID_CASES = [c for c in CASES if c.target != "fp32_onnx" and c.seed in (1, 3, 80, 230)]


@pytest.mark.slow  # the sample's real export (sample_models)
@pytest.mark.parametrize("case", ANDROID_CASES, ids=[c.id for c in ANDROID_CASES])
def test_damaged_model_file_given_to_android_assets(case, originals, workdir, capfd, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(workdir))
    path, digest = _write_case(case, originals, workdir)
    try:
        code = main(["android-assets", str(path), str(workdir / "assets")])
        err = capfd.readouterr().err
        assert code in (0, 2) and "Traceback" not in err, f"{case.id}: exit {code}: {err}"
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and str(path) in err
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    finally:
        path.unlink()


def test_the_suite_has_a_few_hundred_cases_over_every_target_and_member():
    assert len(CASES) >= 300
    assert {c.target for c in CASES} == {"fp32_tflite", "int8_tflite", "fp32_onnx"}
    assert {c.region for c in CASES} >= {"any", "head", "tail", "pack", *MEMBERS}
