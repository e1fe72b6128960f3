"""Progress on stderr: step lines without a terminal (only on success), nothing with --no-progress, a
redrawn line on a terminal that is wiped before an error, and errors still one line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from tests.support.bench_models import shared_models

from albert_edge import progress
from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.tf1 import write_tf1_checkpoint

SMALL = AlbertConfig(vocab_size=40, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=24, max_position_embeddings=32, embedding_order="project_then_add")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(35)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("progress_ckpt")
    write_tf1_checkpoint(random_weights(SMALL, num_labels=2, seed=3), directory / "model.ckpt", scheme="brightmart")
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory / "model.ckpt"


def test_convert_without_a_terminal_prints_one_line_per_step(checkpoint, tmp_path, capsys):
    assert main(["convert", str(checkpoint), "--out", str(tmp_path / "out"), "--formats", "tflite,onnx",
                 "--max-seq-len", "16", "--labels", "neg,pos"]) == 0
    # A step that takes over 10 s on a loaded machine also says it is still running; those lines aside:
    lines = [line for line in capsys.readouterr().err.splitlines() if " s so far, at " not in line]
    assert [line.split(" (")[0] for line in lines] == [
        f"albert-edge convert: read {checkpoint}",
        "albert-edge convert: numpy reference outputs for the parity samples",
        "albert-edge convert: export and check tflite fp32",
        "albert-edge convert: export and check onnx fp32",
        "albert-edge convert: write files",
    ]
    assert all(line.endswith(" s)") for line in lines)


def test_no_progress_prints_nothing_on_stderr(checkpoint, tmp_path, capsys):
    assert main(["convert", str(checkpoint), "--out", str(tmp_path / "out"), "--formats", "tflite",
                 "--max-seq-len", "16", "--labels", "neg,pos", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_an_error_after_some_steps_is_still_one_line(checkpoint, tmp_path, capsys):
    # The labels are refused after the checkpoint was read (a step that began): the held lines are dropped.
    assert main(["convert", str(checkpoint), "--out", str(tmp_path / "out"), "--labels", "a,b,c"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("albert-edge convert: error:"), lines


def test_bench_reports_its_rounds_as_one_line(tmp_path, capsys):
    models = shared_models()
    assert main(["bench", str(models["fp32"]), "--threads", "1", "--seq-len", "6", "--runs", "2", "--warmup", "0",
                 "--rounds", "2", "--out", str(tmp_path / "report")]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("albert-edge bench: bench rounds: 2/2 round ("), lines


def test_bench_with_no_progress_can_still_add_rounds_until_its_time_cap(tmp_path, capsys):
    """--no-progress once crashed the adaptive rounds (its silent bar had no total to grow)."""
    models = shared_models()
    out = tmp_path / "report"
    assert main(["bench", str(models["fp32"]), str(models["int8"]), "--threads", "1", "--seq-len", "6", "--runs", "2",
                 "--warmup", "0", "--rounds", "2", "--max-seconds", "0.5", "--target-precision", "0.000001", "--no-progress",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().err == ""
    group = json.loads((out / "report.json").read_text())["stability"]["groups"][0]
    # A tiny target keeps the intervals from ever reaching it; once the fastest is told apart from the
    # other file with the baseline among them, the verdict is settled (analysis.verdict_settled), and a
    # 1e-6 target is out of reach of any cap.
    assert group["rounds"] > 2 and group["stopped"] in ("time cap", "verdict settled",
                                                        "verdict out of reach before the time cap"), group


def test_a_silent_bar_keeps_and_grows_its_total():
    silent = progress.bar(3, desc="x", show=False)
    silent.total += 1
    silent.update(4)
    assert (silent.total, silent.n) == (4, 4)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_status_line_is_redrawn_and_wiped_before_an_error(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with pytest.raises(ValueError), progress.session("convert"):
        progress.step("export tflite fp32")
        progress.step("write files")
        raise ValueError("boom")
    text = terminal.getvalue()
    assert "\r\x1b[Kalbert-edge convert: export tflite fp32 ..." in text
    assert text.endswith("\r\x1b[K") and "\n" not in text  # the error line will start on a clean line


def test_without_tqdm_a_terminal_bar_is_one_redrawn_line(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)  # import tqdm -> ImportError
    with progress.session("bench"):
        bar = progress.bar(2, desc="rounds", unit="round")
        bar.update()
        bar.update()
        bar.close()
    text = terminal.getvalue()
    assert "rounds: 1/2 round" in text and "rounds: 2/2 round" in text and "\n" not in text


def test_clear_wipes_the_status_line_before_results_are_printed(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.session("convert"):
        progress.step("write files")
        progress.clear()
        drawn = terminal.getvalue()
    assert drawn.endswith("albert-edge convert: write files ...\r\x1b[K")
    assert terminal.getvalue() == drawn  # nothing left to wipe or report at the end


class _Clock:
    """A fake clock: the tests move it, nothing sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def run(self, seconds: int) -> None:
        """``seconds`` pass, the heartbeat thread looking once a second (as it does)."""
        for _ in range(seconds):
            self.now += 1
            progress.beat()


def _log(monkeypatch) -> tuple[io.StringIO, _Clock]:
    """stderr as a log file (not a terminal) and the fake clock (set in the test: pytest's capture
    replaces sys.stderr after the fixtures ran)."""
    stream, clock = io.StringIO(), _Clock()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(progress, "_clock", clock)
    # conftest turns both off; the hold as shipped, the heartbeat at a round 10 s (shipped: 8 s, for margin)
    monkeypatch.setattr(progress, "HOLD_SECONDS", 10.0)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 10.0)
    return stream, clock


def test_a_long_stage_in_a_log_writes_a_line_at_least_every_ten_seconds(monkeypatch):
    stream, clock = _log(monkeypatch)
    with progress.session("quantize"):
        progress.step("building variants (auto, tflite)")
        clock.run(4)
        progress.step("judging tflite:int8_fc (3/8) on up to 1749 rows")
        clock.run(35)
        written = stream.getvalue().splitlines()  # while the stage still runs
        assert written[0] == "albert-edge quantize: building variants (auto, tflite) (4.0 s, at 4 s)"
        beats = [line for line in written if "so far" in line]
        assert beats[0] == "albert-edge quantize: judging tflite:int8_fc (3/8) on up to 1749 rows ... 10 s so far, at 14 s"
        assert len(beats) == 3  # at 10, 20 and 30 s of the stage
    assert stream.getvalue().splitlines()[-1].endswith("(35.0 s, at 39 s)")


def test_a_counted_loop_in_a_log_says_how_far_it_is(monkeypatch):
    stream, clock = _log(monkeypatch)
    with progress.session("bench"):
        rounds = progress.bar(30, desc="bench rounds", unit="round")
        clock.run(3)
        rounds.update(5)
        clock.run(9)
        rounds.update(1)
        clock.run(10)
        assert stream.getvalue().splitlines() == ["albert-edge bench: bench rounds: 5/30 round ... 10 s so far, at 10 s",
                                                  "albert-edge bench: bench rounds: 6/30 round ... 20 s so far, at 20 s"]
        rounds.close()


def test_lines_of_the_first_ten_seconds_are_held_then_written_as_they_come(monkeypatch):
    stream, clock = _log(monkeypatch)
    with progress.session("convert"):
        progress.step("read checkpoint")
        clock.run(3)
        progress.step("export tflite fp32")
        clock.run(3)
        progress.step("export onnx fp32")
        assert stream.getvalue() == ""  # a bad input refused now would still be the one line on stderr
        clock.run(5)
        progress.step("write files")
        assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == [
            "albert-edge convert: read checkpoint", "albert-edge convert: export tflite fp32",
            "albert-edge convert: export onnx fp32"]


def test_a_failure_after_the_hold_keeps_the_lines_already_written(monkeypatch):
    stream, clock = _log(monkeypatch)
    with pytest.raises(ValueError), progress.session("quantize"):
        progress.step("timing 9 variants")
        clock.run(12)
        raise ValueError("boom")
    assert stream.getvalue().splitlines() == ["albert-edge quantize: timing 9 variants ... 10 s so far, at 10 s"]


def test_the_heartbeat_thread_writes_while_the_command_is_busy(monkeypatch):
    """A real run of the session's thread (short intervals): a busy step is reported without any call."""
    import time

    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setattr(progress, "HOLD_SECONDS", 0.0)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.5)
    with progress.session("quantize"):
        progress.step("judging tflite:fp32 (1/1)")
        deadline = time.monotonic() + 10
        while "so far" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert "albert-edge quantize: judging tflite:fp32 (1/1) ... " in stream.getvalue()


def test_held_lines_are_written_when_the_hold_ends_not_at_the_next_line(monkeypatch):
    """A demo log went 16 s without a line: the first 10 s were held until the next heartbeat 8 s later."""
    stream, clock = _log(monkeypatch)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 8.0)
    with progress.session("demo"):
        progress.step("read sample")
        clock.run(9)
        assert stream.getvalue() == ""  # held: an early bad-input error would still be the one line
        clock.run(1)
        assert stream.getvalue().splitlines() == ["albert-edge demo: read sample ... 8 s so far, at 8 s"]
        clock.run(6)
        assert stream.getvalue().splitlines()[-1] == "albert-edge demo: read sample ... 16 s so far, at 16 s"
