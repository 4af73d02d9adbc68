"""A trial's timestamps and what they mean: the buffer the hot loops fill, how far an epoch trial
got, and the :class:`~benchy.core.results.TrialResult` built from them once the trial ends (glue
between the loops of :mod:`benchy.measure.trial` and the result model; numpy, no torch).

``stamps[i]`` is when batch ``i`` is handed out, ``stamps[n]`` when the trial's clock stops;
period ``i`` (``stamps[i]`` to ``stamps[i+1]``) holds one training step and one fetch.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..core.results import TrialResult
from ..core.schedule import TrialSpec

__all__ = ["LOOKAHEAD_SHARE", "UNSET", "Pauses", "build_result", "fetches_ahead", "handed_out", "stamp_buffer",
           "without_first_period"]

Pauses = List[Tuple[int, float]]  # (step, seconds) of each periodic line, taken out of the trial

# A stamp not taken yet. Found by identity (``stamps.index(UNSET)``), so a session can tell
# how many batches a suspended trial has handed out without any per-step bookkeeping.
UNSET = float("nan")


def stamp_buffer(n: int) -> List[float]:
    """The ``n + 1`` timestamps of a trial, all :data:`UNSET`."""
    return [UNSET] * (n + 1)


def handed_out(stamps: List[float], n: int) -> int:
    """How many of its ``n`` batches an epoch trial has handed out so far (O(n), C speed)."""
    try:
        return min(stamps.index(UNSET), n)
    except ValueError:
        return n


def build_result(spec: TrialSpec, stamps: List[float], sizes: List[int], pauses: Pauses,
                 periods: Optional[int] = None, asks: Optional[List[float]] = None,
                 fetched: Optional[float] = None) -> TrialResult:
    """A :class:`TrialResult` over the first ``periods`` periods (default: all of them).

    The lists the hot loop filled (its fastest store) become 16 bytes per step here, once.
    FULL passes ``asks``: ``asks[i]`` is when the loop asked for the batch after batch ``i``,
    splitting period ``i`` into the step (``stamps[i]`` to ``asks[i]``, periodic-line time
    taken out) and the wait for data (``asks[i]`` to ``stamps[i + 1]``); ``fetched`` is when
    the last fetch returned, before the device sync that closes the trial (the sync is
    the step's work, not the loader's).
    """
    n = len(sizes) if periods is None else periods
    times = np.array(stamps[: n + 1], dtype=np.float64)
    steps = np.diff(times)
    for k, seconds in pauses:
        if 0 <= k < n:
            steps[k] -= seconds
    counts = np.array(sizes[:n], dtype=np.int64)
    split: Dict[str, Any] = {}
    if asks is not None and n > 0:
        waits = times[1:] - np.array(asks[:n], dtype=np.float64)
        if fetched is not None and n == len(sizes):
            waits[n - 1] -= times[n] - fetched
        if np.isfinite(waits).all():
            work = steps - waits
            split = {"wait_seconds": float(waits.sum()), "wait_median": float(np.median(waits)),
                     "work_median": float(np.median(work))}
    return TrialResult(
        spec=spec,
        samples=int(counts.sum()),
        seconds=float(steps.sum()),
        step_seconds=_compact(steps, "d"),
        step_samples=_compact(counts, "q"),
        **split,
    )


def _compact(values: np.ndarray[Any, Any], code: str) -> array[Any]:
    """``values`` as an array of exactly their size (``array(code, bytes)`` keeps 1/16 spare)."""
    out = array(code, [0]) * len(values)
    if len(values):
        np.frombuffer(out, dtype=values.dtype)[:] = values
    return out


# A SYNTHETIC first period shorter than this share of the median period holds no step.
LOOKAHEAD_SHARE = 0.25


def fetches_ahead(result: TrialResult) -> bool:
    """True when a SYNTHETIC trial shows a loop that asks for batch ``k + 1`` before step ``k``.

    Such a loop (a CUDA prefetcher such as timm's ``PrefetchLoader`` or Apex's
    ``data_prefetcher``, or Lightning with a loader that has no ``len()``) asks for batch 2
    right after receiving batch 1, so the trial's first period holds no step and each window
    holds one step fewer than periods. SYNTHETIC shows it plainly: its first period is then only the
    generator's own hand-over, far below the median period.
    """
    steps = result.step_seconds
    if len(steps) < 3:
        return False
    rest = np.frombuffer(steps, dtype=np.float64)[1:]
    median = float(np.partition(rest, len(rest) // 2)[len(rest) // 2])
    return median > 0 and steps[0] < LOOKAHEAD_SHARE * median


def without_first_period(result: TrialResult) -> TrialResult:
    """The trial over its periods ``1 .. n-1``: every one of them holds one step and one fetch."""
    return dataclasses.replace(
        result,
        samples=result.samples - result.step_samples[0],
        seconds=result.seconds - result.step_seconds[0],
        step_seconds=result.step_seconds[1:],
        step_samples=result.step_samples[1:],
        # The loop asks for batch k + 1 before step k: the moment it asks splits nothing.
        wait_seconds=None,
        wait_median=None,
        work_median=None,
    )
