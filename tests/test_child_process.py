"""A stage run in a child process leaves the parent's progress heartbeat free to write (issue #36: a log
line at least every 10 s, also while LiteRT's converter holds the GIL for seconds in one call).

No timing is asserted: the heartbeat is made fast (0.3 s) and the stage long (3 s), and the checks are on
which lines were written and in what order.
"""

from __future__ import annotations

import io

import pytest

from albert_edge import progress
from albert_edge.convert.child_process import IN_PROCESS_ENV, call_in_child
from tests.support.gil import fail, hold_gil

STAGE = "building tflite:int8_fc (4/8)"


def _stage_lines(monkeypatch, run) -> list[str]:
    """The lines a log gets while ``run()`` is the stage under way (heartbeat every 0.3 s, no hold)."""
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(progress, "HOLD_SECONDS", 0.0)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.3)
    with progress.session("quantize"):
        progress.step(STAGE)
        assert run() == "done"
        progress.step("judging")
    return stream.getvalue().splitlines()


def test_a_gil_holding_stage_in_a_child_lets_the_heartbeat_write_in_order(monkeypatch):
    monkeypatch.delenv(IN_PROCESS_ENV, raising=False)
    call_in_child(hold_gil, 0.0)  # the child's start-up is not part of the stage
    lines = _stage_lines(monkeypatch, lambda: call_in_child(hold_gil, 3.0))
    beats = [line for line in lines if line.startswith(f"albert-edge quantize: {STAGE} ... ")]
    finished = [i for i, line in enumerate(lines) if line.startswith(f"albert-edge quantize: {STAGE} (")]
    assert len(beats) >= 2 and len(finished) == 1, lines
    assert all(lines.index(beat) < finished[0] for beat in beats)  # said while it ran, then its summary
    seconds = [int(beat.split(" ... ")[1].split(" s so far")[0]) for beat in beats]
    assert seconds == sorted(seconds)


def test_the_same_stage_in_this_process_silences_the_heartbeat(monkeypatch):
    """What the child is for: run here, the stage holds the GIL and at most one late line gets out."""
    lines = _stage_lines(monkeypatch, lambda: hold_gil(3.0))
    assert len([line for line in lines if " s so far" in line]) <= 1, lines


def test_an_error_in_the_child_is_raised_here_as_itself(monkeypatch):
    monkeypatch.delenv(IN_PROCESS_ENV, raising=False)
    with pytest.raises(ValueError, match="bad variant"):
        call_in_child(fail, "bad variant")
    assert call_in_child(hold_gil, 0.0) == "done"  # the child survives an exception


def test_in_process_switch_runs_the_call_here(monkeypatch):
    import os

    monkeypatch.setenv(IN_PROCESS_ENV, "1")
    assert call_in_child(os.getpid) == os.getpid()
    monkeypatch.delenv(IN_PROCESS_ENV)
    assert call_in_child(os.getpid) != os.getpid()


def test_started_calls_run_in_order_while_this_process_goes_on(monkeypatch):
    from albert_edge.convert.child_process import result, start_in_child

    monkeypatch.delenv(IN_PROCESS_ENV, raising=False)
    first, second = start_in_child(hold_gil, 0.5), start_in_child(fail, "second")
    assert not first.done()  # returned before the child finished: this process may work meanwhile
    assert result(first) == "done"
    with pytest.raises(ValueError, match="second"):
        result(second)


def test_the_child_reads_relative_paths_from_the_caller_s_directory_at_each_call(monkeypatch, tmp_path):
    """The child outlives the directory it was started in: a relative path handed over after the caller changed
    directory (pytest's chdir, a service's) was read from the old one. The full suite failed on it once: the
    sample's documented quantize, ``examples/albert_tiny_zh_sentiment``, was "not a TF1 checkpoint" there."""
    import os

    monkeypatch.delenv(IN_PROCESS_ENV, raising=False)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "here.txt").write_text("second", encoding="utf-8")
    monkeypatch.chdir(first)
    assert call_in_child(os.getcwd) == str(first)   # the child may have been started from anywhere before
    monkeypatch.chdir(second)
    assert call_in_child(os.path.isfile, "here.txt")
    assert call_in_child(os.getcwd) == str(second)
