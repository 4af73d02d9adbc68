"""The emulated step: a calibrated amount of CPU work, then a wait."""

from __future__ import annotations

import time

import pytest

from benchy.measure.emulate import EmulatedStep


def test_it_hands_the_batch_on_and_refuses_more_cpu_than_time() -> None:
    batch = object()
    assert EmulatedStep(0.0, 0.0)(batch) is batch
    with pytest.raises(ValueError, match="0 <= cpu <= seconds"):
        EmulatedStep(0.001, 0.002)


def test_its_cpu_part_is_cpu_time_of_this_thread() -> None:
    step = EmulatedStep(0.02, 0.02)
    began = time.thread_time()
    step(None)
    used = time.thread_time() - began
    # A wait would use next to none (the work is calibrated: about 20 ms alone). margin: a count of work units, so its
    # CPU time is about 20 ms whatever the load (a slower core stretches its wall time, not its CPU time): 4x the 5 ms.
    assert used > 0.005
    sleeper = EmulatedStep(0.02, 0.0)
    began = time.thread_time()
    sleeper(None)
    assert time.thread_time() - began < 0.005  # margin: a 20 ms sleep uses microseconds of CPU, under any load
