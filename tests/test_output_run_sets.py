"""A run owns its set, and only its set (issue #37, causes 1 and 2, and the end-of-swap signal race).

* The next run of a command into a folder replaces exactly the previous run's set: the files that
  run wrote and this one does not are removed in the same swap; files it did not write (the user's,
  another command's) are never touched.
* A set may hold files in sub-folders (``variants/``); a sub-folder a removal empties goes too.
* A single file never replaces a folder.
* A signal at any step of the swap is delivered only once the new set and its manifest are whole.
Fast: no models, only small files.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from albert_edge.errors import OutputError
from albert_edge.outputs.claim import MANIFEST, read_manifest
from albert_edge.outputs.output_set import OutputSet


def write_set(directory: Path, files: dict[str, bytes], writer: str = "quantize", replaces: bool = True) -> None:
    with (OutputSet(directory, writer) if replaces else OutputSet(directory, writer, replaces=False)) as staged:
        for name, data in files.items():
            staged.write_bytes(name, data)


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` a reader sees, by relative path (hidden entries aside)."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts)}


DYNAMIC = {"model_fp32.tflite": b"fp32 a", "model_dynamic_int8.tflite": b"dyn", "model_dynamic_int8.onnx": b"dyn o",
           "quantize_report.json": b"report a"}
FP16 = {"model_fp32.tflite": b"fp32 b", "model_fp16.tflite": b"fp16", "quantize_report.json": b"report b"}


def test_the_next_run_replaces_exactly_the_previous_runs_set(tmp_path):
    (tmp_path / "notes.txt").write_bytes(b"mine")
    write_set(tmp_path, {"conversion_report.json": b"convert's"}, writer="convert")
    write_set(tmp_path, DYNAMIC)
    write_set(tmp_path, FP16)
    assert tree(tmp_path) == {**FP16, "notes.txt": b"mine", "conversion_report.json": b"convert's"}
    assert read_manifest(tmp_path) == {"conversion_report.json": "convert", **{name: "quantize" for name in FP16}}


def test_a_set_may_hold_files_in_a_sub_folder_and_its_removal_prunes_the_folder(tmp_path):
    write_set(tmp_path, {"model.tflite": b"a", "variants/model_int8.tflite": b"v", "report.json": b"r"})
    assert tree(tmp_path)["variants/model_int8.tflite"] == b"v"
    (tmp_path / "variants" / "mine.txt").write_bytes(b"mine")  # the user's file in the sub-folder stays
    write_set(tmp_path, {"model.tflite": b"b", "report.json": b"r2"})
    assert tree(tmp_path) == {"model.tflite": b"b", "report.json": b"r2", "variants/mine.txt": b"mine"}
    (tmp_path / "variants" / "mine.txt").unlink()
    write_set(tmp_path, {"model.tflite": b"c", "variants/model_int4.tflite": b"4", "report.json": b"r3"})
    write_set(tmp_path, {"model.tflite": b"d", "report.json": b"r4"})
    assert not (tmp_path / "variants").exists()


def test_a_sub_folder_name_held_by_a_users_file_is_refused_before_any_rename(tmp_path):
    (tmp_path / "variants").write_bytes(b"the user's file named variants")
    with pytest.raises(OutputError, match="is not a folder"):
        write_set(tmp_path, {"model.tflite": b"a", "variants/model_int8.tflite": b"v"})
    assert tree(tmp_path) == {"variants": b"the user's file named variants"}


def test_a_name_outside_the_folder_is_refused(tmp_path):
    with pytest.raises(ValueError), OutputSet(tmp_path, "quantize") as staged:
        staged.write_bytes("../escape.tflite", b"x")
    assert not (tmp_path.parent / "escape.tflite").exists()


def test_a_single_file_writer_adds_files_run_by_run(tmp_path):
    write_set(tmp_path, {"a.tflite": b"a"}, writer="repack", replaces=False)
    write_set(tmp_path, {"b.tflite": b"b"}, writer="repack", replaces=False)
    assert tree(tmp_path) == {"a.tflite": b"a", "b.tflite": b"b"}


def test_a_file_never_replaces_a_folder_even_one_albert_edge_wrote(tmp_path):
    out = tmp_path / "out"
    write_set(out, DYNAMIC)
    (out / "notes.txt").write_bytes(b"mine")
    before = tree(tmp_path)
    with pytest.raises(OutputError, match="is a folder"):
        write_set(tmp_path, {"out": b"one model"}, writer="repack", replaces=False)
    assert tree(tmp_path) == before


def test_a_previous_set_file_the_user_replaced_by_a_folder_is_not_removed(tmp_path):
    write_set(tmp_path, DYNAMIC)
    (tmp_path / "model_dynamic_int8.onnx").unlink()
    (tmp_path / "model_dynamic_int8.onnx").mkdir()
    (tmp_path / "model_dynamic_int8.onnx" / "mine.txt").write_bytes(b"mine")
    write_set(tmp_path, FP16)
    assert tree(tmp_path) == {**FP16, "model_dynamic_int8.onnx/mine.txt": b"mine"}


def _count_swap_steps(tmp_path: Path, monkeypatch) -> int:
    """How many renames one swap of FP16 over DYNAMIC makes (each is a step a signal can follow)."""
    calls = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda *a, **k: (calls.append(a), real(*a, **k))[1])
    write_set(tmp_path, FP16)
    monkeypatch.undo()
    return len(calls)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_any_step_of_the_swap_is_delivered_after_the_whole_set(tmp_path, monkeypatch, signum):
    write_set(tmp_path / "probe", DYNAMIC)
    steps = _count_swap_steps(tmp_path / "probe", monkeypatch)
    assert steps >= len(FP16) + 3  # the files, the removals, the manifest, the journal
    for step in range(steps):
        out = tmp_path / f"step{step}"
        write_set(out, DYNAMIC)
        seen: list[dict[str, bytes]] = []
        real = os.replace
        count = [0]

        def replace(*args, **kwargs):
            result = real(*args, **kwargs)
            count[0] += 1
            if count[0] == step + 1:
                os.kill(os.getpid(), signum)
            return result

        previous = signal.signal(signum, lambda s, f: seen.append(tree(out)) or (_ for _ in ()).throw(KeyboardInterrupt))
        monkeypatch.setattr(os, "replace", replace)
        try:
            with pytest.raises(KeyboardInterrupt):
                write_set(out, FP16)
        finally:
            monkeypatch.undo()
            signal.signal(signum, previous)
        assert seen == [FP16], step  # the handler ran once, on the whole new set
        assert tree(out) == FP16, step
        assert set(read_manifest(out)) == set(FP16), step
        assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [MANIFEST], step
