"""How much CPU other processes took from this one while it timed something (``/proc/stat``).

Why: a speed comparison measured while neighbours held the CPUs decides nothing, and the signals a
process sees of itself cannot tell a neighbour from its own threads: LiteRT at 2 threads waited 20-27 %
of its bursts on an idle 2-core machine (its own thread pools), and the load average counts the timing
command itself (quantize on an idle 2-core machine read 2.0-2.1 while timing its 2-thread rounds and
called itself contended). The machine's busy CPU time minus this process's own is what the others took.
The bench's worker (``bench_latency.worker``) and quantize's timing (``quantize.pipeline``) share it.
A timing process is also a neighbour of the next one: ``settle_own_threads`` waits for its pools to go quiet.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

#: Neighbours leaving a timing this share (or more) short of its threads' CPUs make it contended.
CONTENTION_SHARE = 0.10


def machine_busy_s() -> float | None:
    """CPU seconds every process together has used on this process's CPUs (``/proc/stat``), steal included;
    None where there is no ``/proc/stat``. Counted in clock ticks: exact over many bursts, not one."""
    try:
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        with open("/proc/stat") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    ticks, found = 0, False
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu" or (cpus is not None and int(name[3:]) not in cpus):
            continue
        # user nice system idle iowait irq softirq steal: everything but idle and iowait was busy.
        values = [int(v) for v in fields[:8]]
        ticks += sum(values) - values[3] - values[4]
        found = True
    return ticks / os.sysconf("SC_CLK_TCK") if found else None


def usable_cpus() -> list[int]:
    """CPUs this process may run on (respects taskset/cgroups), sorted."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def leaves_too_few(held: float, cpus: int, threads: int, share: float) -> bool:
    """Whether neighbours holding ``held`` CPUs on average left fewer than ``threads`` (less ``share`` of them)
    of the ``cpus`` free: a timing at that thread count then measured the neighbours too."""
    return cpus - held < min(threads, cpus) * (1.0 - share)


@dataclass
class CpuWindow:
    """Start it, time something in this process, ``stop()``: the CPUs other processes held meanwhile.

    This process's own CPU time (all its threads) is taken out; children are not, so a child of this
    process that works during the window counts as a neighbour (it does compete for the CPUs).
    """

    busy: float | None = None
    own: float = 0.0
    opened: float = 0.0

    def start(self) -> "CpuWindow":
        self.busy, self.own, self.opened = machine_busy_s(), _own_cpu_s(), time.perf_counter()
        return self

    def stop(self) -> float | None:
        """Average CPUs the others held over the window (>= 0), or None without ``/proc/stat``."""
        busy, own, wall = machine_busy_s(), _own_cpu_s(), time.perf_counter() - self.opened
        if busy is None or self.busy is None or wall <= 0:
            return None
        return max(0.0, ((busy - self.busy) - (own - self.own)) / wall)


def _own_cpu_s() -> float:
    """This process's CPU seconds, all threads (``os.times``: also where ``resource`` is missing, Windows)."""
    times = os.times()
    return times.user + times.system


def settle_own_threads(quiet_share: float = 0.05, window_s: float = 0.005, limit_s: float = 0.25) -> float:
    """Wait until this process's own threads have stopped using the CPUs; the seconds waited.

    Why: ONNX Runtime's intra-op pool spins for ~50 ms after a run (0.4-1.8 CPUs in 5 ms windows, measured
    on the sample's fp32 file at 2 threads), so in the bench, where configurations run their bursts in turn
    in processes of their own, the LiteRT burst that followed an ORT burst on an idle 2-core machine read
    0.40-0.54 CPUs held by others and was called contended (record 0255). A worker that settles before it
    reports its burst hands the next one a quiet machine, as an app running one model has; its own timing
    keeps the pool's default spinning. Quiet: under ``quiet_share`` of one CPU over a ``window_s`` window
    (the waiting thread itself sleeps); gives up after ``limit_s``.
    """
    start = wall = time.perf_counter()
    cpu = time.process_time()
    while wall - start < limit_s:
        time.sleep(window_s)
        cpu_now, wall_now = time.process_time(), time.perf_counter()
        if cpu_now - cpu <= quiet_share * (wall_now - wall):
            return wall_now - start
        cpu, wall = cpu_now, wall_now
    return wall - start
