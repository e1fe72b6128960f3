"""An interrupted output swap leaves the whole old set or the whole new set (issue #27, cause 1).

``OutputSet.commit`` renames file by file. A Ctrl-C between two renames, a failing rename, or a
SIGKILL half-way used to leave the new model beside the old report. Signals are now held during
the swap and delivered after it; anything that cannot be held is rolled back (at once, or by the
next run in the folder). Fast: no models, only small files.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from albert_edge.errors import OutputError
from albert_edge.outputs.output_set import OutputSet, clean_leftovers

OLD = {"model_fp32.tflite": b"old model", "model_int8.tflite": b"old int8", "report.json": b"old report"}
NEW = {"model_fp32.tflite": b"new model", "model_int8.tflite": b"new int8", "report.json": b"new report"}


@pytest.fixture(autouse=True)
def _sigint_raises_keyboard_interrupt():
    """Python's own SIGINT handler, as in a terminal: a job started in the background by a
    non-interactive shell (nohup, ``cmd &``) inherits SIGINT ignored, and these tests would see that."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def write_set(directory: Path, files: dict[str, bytes]) -> None:
    with OutputSet(directory) as staged:
        for name, data in files.items():
            staged.write_bytes(name, data)


def visible(directory: Path) -> dict[str, bytes]:
    """The files a reader of the folder sees (hidden staging folders and the manifest aside)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if not p.name.startswith(".")}


def hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".") and p.name != ".albert-edge-outputs.json")


def after_first_rename_into(directory: Path, monkeypatch, action) -> None:
    """Patch os.replace so that ``action()`` runs right after the first staged file lands in ``directory``."""
    real = os.replace
    fired = []

    def replace(src, dst, *args, **kwargs):
        result = real(src, dst, *args, **kwargs)
        if Path(dst).parent == directory and Path(src).parent != directory and not fired:
            fired.append(dst)
            action()
        return result

    monkeypatch.setattr(os, "replace", replace)


def test_ctrl_c_between_two_renames_is_delivered_after_the_whole_new_set(tmp_path, monkeypatch):
    write_set(tmp_path, OLD)
    after_first_rename_into(tmp_path, monkeypatch, lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        write_set(tmp_path, NEW)
    monkeypatch.undo()
    assert visible(tmp_path) == NEW
    assert hidden(tmp_path) == []


def test_sigterm_during_the_swap_reaches_the_previous_handler_after_it(tmp_path, monkeypatch):
    write_set(tmp_path, OLD)
    seen: list[dict[str, bytes]] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(visible(tmp_path)))
    try:
        after_first_rename_into(tmp_path, monkeypatch, lambda: os.kill(os.getpid(), signal.SIGTERM))
        write_set(tmp_path, NEW)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [NEW]  # delivered once, and only when the set was whole
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_rename_that_fails_half_way_rolls_back_to_the_old_set(tmp_path, monkeypatch):
    write_set(tmp_path, OLD)

    def fail():
        raise OSError(errno.EIO, "Input/output error")

    after_first_rename_into(tmp_path, monkeypatch, fail)
    with pytest.raises(OutputError, match="cannot write"):
        write_set(tmp_path, NEW)
    monkeypatch.undo()
    assert visible(tmp_path) == OLD
    assert hidden(tmp_path) == []


def test_a_new_file_placed_before_the_failure_is_removed_again(tmp_path, monkeypatch):
    write_set(tmp_path, {"report.json": b"old report"})

    def fail():
        raise OSError(errno.EIO, "Input/output error")

    after_first_rename_into(tmp_path, monkeypatch, fail)
    with pytest.raises(OutputError):
        write_set(tmp_path, NEW)
    monkeypatch.undo()
    assert visible(tmp_path) == {"report.json": b"old report"}


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from albert_edge.outputs.output_set import OutputSet

    directory = Path(sys.argv[1])
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        result = real(src, dst, *args, **kwargs)
        if Path(dst).parent == directory and Path(src).parent != directory:
            os.kill(os.getpid(), signal.SIGKILL)  # cannot be held: the power went out
        return result

    os.replace = replace
    with OutputSet(directory) as staged:
        for name in ("model_fp32.tflite", "model_int8.tflite", "report.json"):
            staged.write_bytes(name, b"new " + name.encode())
""")


def test_a_writer_killed_mid_swap_is_rolled_back_by_the_next_run(tmp_path):
    write_set(tmp_path, OLD)
    child = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], check=False,
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert hidden(tmp_path), "the killed writer left its staging folder"
    clean_leftovers(tmp_path)  # what the next run in this folder does first
    assert visible(tmp_path) == OLD
    assert hidden(tmp_path) == []
    write_set(tmp_path, NEW)  # and that run then works as usual
    assert visible(tmp_path) == NEW


def test_the_roll_back_leaves_a_file_the_user_put_there_after_the_kill(tmp_path):
    write_set(tmp_path, {"report.json": b"old report"})
    child = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], check=False,
                           capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert (tmp_path / "model_fp32.tflite").read_bytes() == b"new model_fp32.tflite"  # placed, then killed
    mine = tmp_path / "mine.tmp"
    mine.write_bytes(b"the user's own file")
    os.replace(mine, tmp_path / "model_fp32.tflite")
    clean_leftovers(tmp_path)
    assert visible(tmp_path) == {"model_fp32.tflite": b"the user's own file", "report.json": b"old report"}
