"""The CLI's one error boundary: one line and an exit code for any failure; chatter to a log; quiet EPIPE."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.runtime_models import write_models

import albert_edge.cli.predict_cmd as predict_cmd
from albert_edge.cli import main

SRC = str(Path(__file__).resolve().parents[1] / "src")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("bag"))


def _cli(*argv: str, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "albert_edge", *argv], input=stdin, capture_output=True,
                          env={**ENV, **(env or {})}, timeout=120)


def _shell(command_line: str) -> subprocess.CompletedProcess:
    """``python -m albert_edge COMMAND_LINE`` through sh, for redirections such as ``>&-``."""
    return subprocess.run(["sh", "-c", f'"{sys.executable}" -m albert_edge {command_line}'],
                          capture_output=True, env=ENV, timeout=120)


def _raising(exc: BaseException):
    def run(args):
        raise exc
    return run


def test_an_unexpected_exception_is_one_line_saying_it_is_a_bug_exit_1(models, monkeypatch, capfd):
    monkeypatch.setattr(predict_cmd, "run", _raising(TypeError("boom")))
    assert main(["predict", str(models["tflite"]), "好"]) == 1
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("albert-edge predict: error: internal error (TypeError: boom)")
    assert "bug" in err and "--debug" in err


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_before_or_after_the_subcommand_shows_the_traceback(models, monkeypatch, capfd, where):
    monkeypatch.setattr(predict_cmd, "run", _raising(TypeError("boom")))
    argv = ["predict", str(models["tflite"]), "好"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    assert main(argv) == 1
    err = capfd.readouterr().err
    assert "Traceback (most recent call last)" in err and err.rstrip().splitlines()[-1].startswith("albert-edge predict: error:")


def test_a_full_disk_is_a_user_error_with_the_file_and_a_hint(models, monkeypatch, capfd):
    monkeypatch.setattr(predict_cmd, "run", _raising(OSError(errno.ENOSPC, "No space left on device", "/out/x.tflite")))
    assert main(["predict", str(models["tflite"]), "好"]) == 2
    err = capfd.readouterr().err.strip()
    assert err == "albert-edge predict: error: /out/x.tflite: No space left on device; free some disk space and rerun"


def test_interpreter_chatter_stays_off_stderr_unless_verbose(models):
    quiet = _cli("predict", str(models["tflite"]), "好")
    assert quiet.returncode == 0 and quiet.stderr == b""
    loud = _cli("predict", str(models["tflite"]), "好", "--verbose")
    assert loud.returncode == 0 and b"XNNPACK" in loud.stderr


def test_closed_stdout_pipe_ends_quietly(models):
    texts = ("很好\n" * 20000).encode()
    proc = subprocess.Popen([sys.executable, "-m", "albert_edge", "predict", str(models["tflite"])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    proc.stdin.write(texts)
    proc.stdin.close()
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert b"Traceback" not in err and b"BrokenPipe" not in err and err == b""


def test_options_may_sit_between_model_and_texts(models, capsys):
    assert main(["predict", str(models["tflite"]), "--threads", "1", "很好", "--json", "很差"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


@pytest.mark.parametrize("encoding", [None, "utf-8"])
def test_invalid_utf8_on_stdin_is_refused_like_a_file(models, encoding):
    proc = _cli("predict", str(models["tflite"]), stdin=b"\xe5\xa5\xbd\n\xff\xfe\n",
                env={"PYTHONIOENCODING": encoding} if encoding else None)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "albert-edge predict: error: <stdin>: not valid UTF-8 (invalid start byte at byte 4)"


def test_invalid_utf8_in_an_argument_is_refused(models):
    proc = _cli("predict", str(models["tflite"]), "好", os.fsdecode(b"a\xffb"))
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("albert-edge predict: error: TEXT argument 2: not valid UTF-8")


def test_a_line_of_only_nul_names_the_file_and_line(models, tmp_path, capfd):
    path = tmp_path / "in.txt"
    path.write_bytes("很好\n\x00\n".encode())
    assert main(["predict", str(models["tflite"]), "--file", str(path)]) == 2
    err = capfd.readouterr().err.strip()
    assert err.startswith(f"albert-edge predict: error: {path}:2: ") and "no tokens" in err and "\n" not in err


def test_a_closed_stdout_is_a_user_error_not_a_bug(models):
    proc = _shell(f'predict "{models["tflite"]}" 好 >&-')
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == ("albert-edge predict: error: standard output is closed; "
                                            "nothing could be printed (redirect it to a file instead)")


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_an_absurd_thread_count_is_refused_before_the_interpreter_sees_it(models, capfd, fmt):
    """100,000 threads: LiteRT segfaulted at exit and ONNX Runtime hung creating them. The option layer
    (option_ranges.THREADS, the runtime's own bound) refuses it while parsing."""
    with pytest.raises(SystemExit) as info:
        main(["predict", str(models[fmt]), "好", "--threads", "100000"])
    assert info.value.code == 2
    assert capfd.readouterr().err.strip() == ("albert-edge predict: error: argument --threads: '100000': expected a "
                                              "positive integer (at most 256) (see albert-edge predict --help)")


@pytest.mark.parametrize("option", ["--threads", "--batch-size"])
def test_zero_threads_or_batch_size_is_a_usage_error(models, capsys, option):
    with pytest.raises(SystemExit) as info:
        main(["predict", str(models["tflite"]), "好", option, "0"])
    assert info.value.code == 2 and f"argument {option}: '0': expected a positive integer" in capsys.readouterr().err


def test_an_unwritable_temp_dir_only_loses_the_chatter_log(models):
    proc = _cli("predict", str(models["tflite"]), "好", env={"TMPDIR": "/proc/no-such-dir"})
    assert proc.returncode == 0 and proc.stderr == b"" and proc.stdout.decode().startswith("pos\t")


def test_a_closed_stdin_without_texts_is_a_user_error(models):
    proc = _shell(f'predict "{models["tflite"]}" <&-')
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == ("albert-edge predict: error: <stdin>: standard input is closed; "
                                            "give TEXT arguments or --file")
