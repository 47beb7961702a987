"""The times every reference run of the parity benchmarks reports, measured one way for all of them."""

from __future__ import annotations

import time


class LoopClock:
    """Started as the round loop starts; ``half()`` at the loop's middle round; ``seconds()`` at its end gives the
    loop's wall and CPU seconds, the wall seconds of its second half (the steady rate) and of the whole process
    since ``process_start`` (a ``time.perf_counter()`` taken when the process began its work)."""

    def __init__(self, process_start: float):
        self.process_start = process_start
        self.start, self.cpu_start, self.middle = time.perf_counter(), time.process_time(), None

    def half(self) -> None:
        self.middle = time.perf_counter()

    def seconds(self) -> dict[str, float]:
        end = time.perf_counter()
        return {
            "loop_seconds": end - self.start,
            "cpu_seconds": time.process_time() - self.cpu_start,
            "steady_seconds": end - (self.middle or self.start),
            "process_seconds": end - self.process_start,
        }
