"""The per-step time distribution of a mode: percentiles, stalls, and whether stalls are periodic (pure).

A *stall* is a period longer than :data:`STALL_FACTOR` times the mode's median. Stalls that repeat every
``num_workers`` steps are the sign of a starved worker pool: the loop takes the batches the workers made in one
round and then waits for the next.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import msgspec
import numpy as np

from .record import Count, Number, Record
from .results import TrialResult

STALL_FACTOR = 3.0  # a period over this many times its trial's median is a stall
MIN_CYCLES = 3  # a period must repeat at least this many times within a trial
MAX_PERIOD = 64
COVER = 0.8  # periodic: at most half of the phases of a cycle hold this share of the stalls ...
REGULAR = 0.6  # ... and each of those phases stalls in at least this share of the cycles


class StepProfile(Record, frozen=True):
    """Percentiles of the periods (seconds) pooled over a mode's counted trials, and its stalls."""

    steps: Count
    p50: float = msgspec.field(name="p50_s")
    p90: float = msgspec.field(name="p90_s")
    p99: float = msgspec.field(name="p99_s")
    stalls: Count
    stall_share: Number  # the stalled periods' share of the trials' time
    stall_period: Optional[Count]  # stalls every this many steps, when they are periodic
    stall_factor: Number = STALL_FACTOR  # a period over this many times its trial's median is a stall


def percentiles(arrays: Sequence[np.ndarray[Any, np.dtype[np.float32]]], levels: Sequence[float]) -> List[float]:
    """``numpy.percentile``'s (linear) percentiles of ``arrays`` pooled, NaNs left out, without pooling them: each
    order statistic is found by bisection (about 32 counting passes), so millions of periods need no copy."""
    counted = [(a, int(np.count_nonzero(~np.isnan(a)))) for a in arrays]
    n = sum(k for _, k in counted)
    if n == 0:
        return [float("nan")] * len(levels)
    bounds = (  # the keys of the smallest and the largest value: where each bisection starts
        _key(min(np.float32(np.nanmin(a)) for a, k in counted if k)),
        _key(max(np.float32(np.nanmax(a)) for a, k in counted if k)),
    )
    out = []
    for level in levels:
        at = level / 100 * (n - 1)
        low = int(np.floor(at))
        lower = _kth(arrays, low, bounds)
        upper = _kth(arrays, min(low + 1, n - 1), bounds) if at > low else lower
        out.append(lower + (upper - lower) * (at - low))
    return out


def _key(value: np.float32) -> int:
    """An integer that orders single-precision numbers as their values do."""
    bits = int(np.array(value, dtype=np.float32).view(np.int32))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFF) - 1


def _value(key: int) -> np.float32:
    bits = key if key >= 0 else (-key - 1) | -0x80000000
    return np.float32(np.array(bits, dtype=np.int32).view(np.float32).item())


def _kth(arrays: Sequence[np.ndarray[Any, np.dtype[np.float32]]], k: int, bounds: Tuple[int, int]) -> float:
    """The ``k``-th smallest (from 0) of the non-NaN values of ``arrays`` pooled, between the keys ``bounds``."""
    lo, hi = bounds
    while lo < hi:  # the smallest key whose value has more than k values at or below it
        mid = (lo + hi) // 2
        at_or_below = sum(int(np.count_nonzero(a <= _value(mid))) for a in arrays)
        lo, hi = (lo, mid) if at_or_below > k else (mid + 1, hi)
    return float(_value(lo))


def step_profile(trials: Sequence[TrialResult]) -> Optional[StepProfile]:
    """The distribution of the trials' periods; None without any period."""
    arrays = [t.periods() for t in trials if len(t.step_seconds)]
    if not arrays:
        return None
    p50, p90, p99 = percentiles(arrays, (50, 90, 99))
    steps = sum(len(a) for a in arrays)
    stalls, stall_time, total = 0, 0.0, 0.0
    periods_found: List[Optional[int]] = []
    for periods in arrays:
        total += float(periods.sum(dtype=np.float64))
        if not p50 > 0:
            continue
        stalled = periods > STALL_FACTOR * p50
        count = int(stalled.sum())
        stalls += count
        stall_time += float(periods[stalled].sum(dtype=np.float64))
        if count >= MIN_CYCLES:
            periods_found.append(_trial_period(stalled))
    return StepProfile(steps, p50, p90, p99, stalls, stall_time / total if total > 0 else 0.0, _agreed(periods_found))


def _trial_period(stalled: np.ndarray[Any, Any]) -> Optional[int]:
    """The shortest cycle of ``k >= 2`` steps in which the stalls keep their place: at most half of the cycle's
    phases hold most stalls, and each of them stalls in most cycles (a slow stretch, or stalls at random, are not)."""
    n = len(stalled)
    for k in range(2, min(MAX_PERIOD, n // MIN_CYCLES) + 1):
        cycles = n // k
        per_phase = np.sort(stalled[: cycles * k].reshape(cycles, k).sum(axis=0))[::-1]
        held = int(np.searchsorted(np.cumsum(per_phase), COVER * per_phase.sum())) + 1
        if held <= k // 2 and per_phase[held - 1] >= REGULAR * cycles:
            return k
    return None


def _agreed(found: List[Optional[int]]) -> Optional[int]:
    """The period at least half of the trials with stalls show."""
    values = [k for k in found if k is not None]
    if not values:
        return None
    best = max(set(values), key=values.count)
    return best if 2 * values.count(best) >= len(found) else None
