"""Contention is what other processes took from the CPUs while this one timed something (``/proc/stat``),
not the load average, which counts the timing command's own threads: quantize on an idle 2-core machine
read 2.0-2.1 while timing at 2 threads and said this machine could not decide."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from albert_edge.neighbours import CONTENTION_SHARE, CpuWindow, leaves_too_few, machine_busy_s

needs_proc_stat = pytest.mark.skipif(machine_busy_s() is None, reason="no /proc/stat")


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_this_process_own_cpu_time_is_taken_out(monkeypatch):
    """3 CPU-seconds busy on the machine over 1.5 s, 2 of them this process's own threads: the others held 2/3
    of a CPU. (Arithmetic on fixed counters: a real spin here would read the other test worker as a neighbour.)"""
    import albert_edge.neighbours as neighbours

    counters = iter([(10.0, 1.0, 100.0), (13.0, 3.0, 101.5)])
    monkeypatch.setattr(neighbours, "machine_busy_s", lambda: state["busy"])
    monkeypatch.setattr(neighbours, "_own_cpu_s", lambda: state["own"])
    monkeypatch.setattr(neighbours.time, "perf_counter", lambda: state["now"])
    state: dict = {}
    state.update(zip(("busy", "own", "now"), next(counters)))
    window = CpuWindow().start()
    state.update(zip(("busy", "own", "now"), next(counters)))
    assert window.stop() == pytest.approx(2 / 3)


@needs_proc_stat
def test_a_busy_process_beside_it_is_counted():
    hog = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"])
    try:
        time.sleep(0.5)  # the hog past its interpreter start
        window = CpuWindow().start()
        time.sleep(1.5)
        held = window.stop()
    finally:
        hog.kill()
        hog.wait()
    assert held is not None and held > 0.6, held


def test_the_rule_asks_for_the_threads_cpus_free():
    assert not leaves_too_few(0.05, 2, 2, CONTENTION_SHARE)   # idle: both CPUs free for 2 threads
    assert leaves_too_few(1.0, 2, 2, CONTENTION_SHARE)        # one hog: one CPU for 2 threads
    assert not leaves_too_few(1.0, 2, 1, CONTENTION_SHARE)    # one hog, 1 thread: a CPU to itself
    assert leaves_too_few(1.9, 2, 1, CONTENTION_SHARE)        # two hogs


def test_quantize_verdict_decides_from_the_neighbours_not_its_own_load():
    from albert_edge.quantize.report import _timing_contended

    idle = {"threads": 2, "neighbour_cores": 0.04, "usable_cpus": 2, "load_average": [1.9, 2.1], "logical_cores": 2}
    busy, _ = _timing_contended(idle)
    assert not busy  # its own 2 threads put the load average at 2.1: not a neighbour
    hog = dict(idle, neighbour_cores=0.95)
    busy, why = _timing_contended(hog)
    assert busy and why == "other processes held 0.9 of 2 CPUs"
    old = {"threads": 2, "load_average": [2.5, 2.6], "logical_cores": 2}  # a report without /proc/stat figures
    assert _timing_contended(old) == (True, "load average 2.6 on 2 logical cores")


def _fake_clocks(monkeypatch, cpu_per_window: list[float], window: float = 0.005) -> dict:
    """process_time/perf_counter/sleep driven by a script: each sleep is one window, in which this
    process's threads used the next CPU-seconds of ``cpu_per_window`` (0 once the script is over)."""
    import albert_edge.neighbours as neighbours

    state = {"cpu": 0.0, "now": 0.0, "sleeps": 0}

    def sleep(seconds: float) -> None:
        used = cpu_per_window[state["sleeps"]] if state["sleeps"] < len(cpu_per_window) else 0.0
        state.update(cpu=state["cpu"] + used, now=state["now"] + seconds, sleeps=state["sleeps"] + 1)

    monkeypatch.setattr(neighbours.time, "process_time", lambda: state["cpu"])
    monkeypatch.setattr(neighbours.time, "perf_counter", lambda: state["now"])
    monkeypatch.setattr(neighbours.time, "sleep", sleep)
    return state


def test_settling_waits_until_the_own_pool_stops_spinning(monkeypatch):
    """An ORT-like pool spinning 1.0, 0.6, 0.3 CPUs over three 5 ms windows, then quiet: the wait ends at the
    first quiet window (the fourth), not before and not at the limit."""
    from albert_edge.neighbours import settle_own_threads

    state = _fake_clocks(monkeypatch, [0.005, 0.003, 0.0015])
    assert settle_own_threads(window_s=0.005) == pytest.approx(0.020)
    assert state["sleeps"] == 4


def test_settling_gives_up_at_its_limit_and_returns_at_once_when_quiet(monkeypatch):
    from albert_edge.neighbours import settle_own_threads

    state = _fake_clocks(monkeypatch, [0.005] * 1000)   # a pool that never stops
    assert settle_own_threads(window_s=0.005, limit_s=0.048) == pytest.approx(0.05)   # the window past the limit ends it
    assert state["sleeps"] == 10
    state = _fake_clocks(monkeypatch, [])
    assert settle_own_threads(window_s=0.005) == pytest.approx(0.005)
