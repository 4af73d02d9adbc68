"""The emulated step: a calibrated stand-in for the training step, for the emulated-step trials.

As MLPerf Storage emulates an accelerator, :class:`EmulatedStep` replaces the step by what the run measured of it,
made ``k`` times faster: its CPU share as a fixed amount of CPU work (calibrated once: on a busy machine it takes
longer, as the step's own would), the rest as a wait. As the copy of a ``CopyingSource`` it makes a FULL loop.
"""

from __future__ import annotations

import statistics
import time
import timeit
from typing import Any


class EmulatedStep:
    """``seconds`` a batch: ``cpu`` seconds' worth of CPU work (as measured alone), then a wait for the rest."""

    CHUNK = 200  # loop iterations a unit of work

    def __init__(self, seconds: float, cpu: float) -> None:
        if not (seconds >= 0 and 0 <= cpu <= seconds + 1e-12):
            raise ValueError(f"an emulated step needs 0 <= cpu <= seconds, got cpu={cpu!r}, seconds={seconds!r}")
        self.seconds = float(seconds)
        self.cpu = float(cpu)
        self.units = round(cpu / self.unit_seconds()) if cpu > 0 else 0

    @classmethod
    def unit_seconds(cls) -> float:
        """CPU seconds of one unit of work on this thread (the median of a few tries)."""
        found = timeit.repeat(lambda: _work(200), timer=time.thread_time, repeat=7, number=1)
        return max(statistics.median(found) / 200, 1e-9)

    def __call__(self, batch: Any) -> Any:
        _work(self.units)
        rest = self.seconds - self.cpu
        if rest > 0:
            time.sleep(rest)
        return batch


def _work(units: int) -> None:
    chunk = EmulatedStep.CHUNK
    for _ in range(units):
        total = 0
        for j in range(chunk):
            total += j
