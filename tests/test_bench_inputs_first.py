"""``bench`` reads every input before the first timed round (issue #36, item 4).

A bad ``--eval`` file was read only after 200 s of timing. Now the drift (which reads the eval file in
the task's own format, opens every model and the reference) runs first, and the backends' interpreters
are checked: each bad input is one line, exit 2, before any worker process starts.
"""

from __future__ import annotations

import pytest

from tests.support.bench_models import shared_models

from albert_edge.bench_latency import runner
from albert_edge.cli import main


@pytest.fixture
def no_workers(monkeypatch):
    """Fail the test if a timing worker is started."""
    started = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError("a timing worker was started before the inputs were checked")

    monkeypatch.setattr(runner, "WorkerProcess", refuse)
    return started


def _bench(tmp_path, *extra: str) -> list[str]:
    models = shared_models()
    return ["bench", str(models["fp32"]), str(models["int8"]), "--threads", "1", "--seq-len", "6", "--runs", "3",
            "--warmup", "1", "--rounds", "1", "--out", str(tmp_path / "report"), "--no-progress", *extra]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_an_eval_file_with_an_unknown_label_fails_before_any_worker(tmp_path, capsys, no_workers):
    bad = tmp_path / "eval.tsv"
    bad.write_text("pos\tgood words\nmaybe\tthird label\n", encoding="utf-8")
    assert main(_bench(tmp_path, "--eval", str(bad))) == 2
    line = _one_line(capsys)
    assert str(bad) in line and "maybe" in line
    assert not no_workers and not (tmp_path / "report" / "report.json").exists()


def test_a_missing_eval_file_fails_before_any_worker(tmp_path, capsys, no_workers):
    assert main(_bench(tmp_path, "--eval", str(tmp_path / "absent.tsv"))) == 2
    assert "absent.tsv" in _one_line(capsys)
    assert not no_workers


def test_an_eval_file_that_is_not_text_fails_before_any_worker(tmp_path, capsys, no_workers):
    bad = tmp_path / "eval.tsv"
    bad.write_bytes(b"pos\t\xff\xfe\x00 not utf-8\n")
    assert main(_bench(tmp_path, "--eval", str(bad))) == 2
    assert str(bad) in _one_line(capsys)
    assert not no_workers


def test_a_backend_whose_interpreter_is_missing_fails_before_any_worker(tmp_path, capsys, no_workers, monkeypatch):
    import albert_edge.runtime.backends as backends

    monkeypatch.setattr(backends, "available_backends", lambda: ["onnxruntime"])
    assert main(_bench(tmp_path, "--backend", "litert")) == 2
    assert "--backend litert: its interpreter is not installed" in _one_line(capsys)
    assert not no_workers


def test_a_good_eval_file_is_measured_before_the_timing_starts(tmp_path, capsys, monkeypatch):
    order = []
    from albert_edge.bench_latency import drift

    real_drift, real_worker = drift.measure_drift, runner.WorkerProcess
    monkeypatch.setattr(drift, "measure_drift", lambda *a, **k: order.append("drift") or real_drift(*a, **k))
    monkeypatch.setattr(runner, "WorkerProcess", lambda *a, **k: order.append("worker") or real_worker(*a, **k))
    assert main(_bench(tmp_path, "--eval", str(shared_models()["eval"]))) == 0
    assert order[0] == "drift" and "worker" in order
