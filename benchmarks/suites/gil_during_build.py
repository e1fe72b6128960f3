"""Does LiteRT's interpreter build let another Python thread run? (issue #39, the first answer)

Why: the app's own work (pack, tokenizer, pack-vs-graph checks) could hide behind the interpreter's build on a
second core only if the build releases the GIL. This counts how far a Python thread gets *while* each build step
runs, against how far it gets beside a sleep (which releases the GIL), with a 0.1 ms switch interval so a thread
waiting for a released GIL gets it at once. A rate near 1 means the step released the GIL; near 0, it held it.

    python -m benchmarks.suites.gil_during_build MODEL.tflite [--rounds 5] [--threads 2]

Prints one JSON object: per step, the counter's rate beside it relative to its solo rate, and the step's ms
(medians over fresh interpreters in this process).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable


class _Counter:
    """A Python thread incrementing a number until stopped: how much Python another thread lets run."""

    def __init__(self) -> None:
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.count += 1

    def __enter__(self) -> _Counter:
        self._thread.start()
        time.sleep(0.002)   # running before the step starts
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def counted(step: Callable[[], object]) -> tuple[float, float]:
    """(counter increments per ms while ``step`` ran, the step's ms)."""
    with _Counter() as counter:
        before, start = counter.count, time.perf_counter()
        step()
        elapsed, after = time.perf_counter() - start, counter.count
    return (after - before) / (elapsed * 1e3), elapsed * 1e3


def measure(model: str, rounds: int, threads: int) -> dict:
    from ai_edge_litert.interpreter import Interpreter

    sys.setswitchinterval(1e-4)
    rates: dict[str, list[float]] = {"solo": [], "construct": [], "allocate_tensors": []}
    times: dict[str, list[float]] = {"construct": [], "allocate_tensors": []}
    for _ in range(rounds):
        rates["solo"].append(counted(lambda: time.sleep(0.006))[0])
        built: list = []
        rate, ms = counted(lambda: built.append(Interpreter(model_path=model, num_threads=threads)))
        rates["construct"].append(rate)
        times["construct"].append(ms)
        rate, ms = counted(built[0].allocate_tensors)
        rates["allocate_tensors"].append(rate)
        times["allocate_tensors"].append(ms)
    solo = statistics.median(rates["solo"])
    return {"model": model, "rounds": rounds, "threads": threads,
            "counter_rate_vs_solo": {k: round(statistics.median(v) / solo, 3) for k, v in rates.items() if k != "solo"},
            "step_ms": {k: round(statistics.median(v), 2) for k, v in times.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.model, args.rounds, args.threads), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
