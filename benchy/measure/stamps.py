"""A trial's timestamps and what they mean: the series the hot loops fill (:class:`Series`, 8
bytes a stamp), how far an epoch trial got, and the :class:`~benchy.core.results.TrialResult`
built from them once the trial ends (glue between the loops of :mod:`benchy.measure.trial` and
the result model; numpy, no torch).

``stamps[i]`` is when batch ``i`` is handed out, ``stamps[n]`` when the trial's clock stops;
period ``i`` (``stamps[i]`` to ``stamps[i+1]``) holds one training step and one fetch.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.results import TrialResult, samples_typecode
from ..core.schedule import TrialSpec

__all__ = [
    "CHUNK",
    "LOOKAHEAD_SHARE",
    "UNSET",
    "Pauses",
    "Series",
    "build_result",
    "fetches_ahead",
    "handed_out",
    "size_buffer",
    "stamp_buffer",
    "without_first_period",
]

Pauses = List[Tuple[int, float]]  # (period, seconds) of benchy's own work inside a trial, taken out of it

# A stamp not taken yet. Found by identity (``buf.index(UNSET)``), so a session can tell how
# many batches a suspended trial has handed out without any per-step bookkeeping.
UNSET = float("nan")

# Values a hot loop writes into a plain list before they move into a typed array (see Series).
CHUNK = 4096
# Per-step sample counts while a trial runs: 4 bytes each ('I'), made smaller when it ends.
_COUNTS = "I" if array("I").itemsize >= 4 else "Q"


class Series:
    """``length`` values a hot loop writes one at a time, held in 8 (or 4) bytes each.

    The loop stores into ``buf``, a list of :data:`CHUNK` slots (a list store is the cheapest
    store a loop can make); at each chunk's end :meth:`flush` moves them into ``data``, a typed
    array, and blanks ``buf`` again, outside the trial's time (a pause). A list of floats costs
    32 bytes a value (the slot and the float object), so a trial's stamps took 32 bytes a batch
    until it ended; now they take 8, and the list stays 4096 slots long. Value ``i`` is
    ``data[i]`` below ``done`` and ``buf[i - done]`` from there. ``buffered=False`` (a count the
    same for every batch): ``data`` only, written by :meth:`set`.
    """

    __slots__ = ("_blank", "_fill", "buf", "buffered", "data", "done")

    def __init__(self, length: int, code: str = "d", fill: Any = UNSET, buffered: bool = True) -> None:
        self.data: array[Any] = array(code, [fill]) * length
        self._fill = fill
        self.buffered = buffered
        self._blank: List[Any] = [fill] * (CHUNK if buffered else 0)
        self.buf: List[Any] = list(self._blank)
        self.done = 0

    def __len__(self) -> int:
        return len(self.data)

    def flush(self, count: int) -> None:
        """Move ``buf[:count]`` into ``data`` (from ``done`` on) and blank those slots."""
        if count > 0 and self.buffered:
            start = self.done
            self.data[start : start + count] = array(self.data.typecode, self.buf[:count])
            self.buf[:count] = self._blank[:count]
            self.done = start + count

    def get(self, i: int) -> Any:
        return self.data[i] if i < self.done or not self.buffered else self.buf[i - self.done]

    __getitem__ = get  # value ``i`` (a reporter reads ``stamps[i]``)

    def set(self, i: int, value: Any) -> None:
        if i < self.done or not self.buffered:
            self.data[i] = value
        else:
            self.buf[i - self.done] = value

    def total(self, low: int, high: int) -> float:
        """The sum of values ``low`` to ``high - 1``."""
        if not self.buffered or high <= self.done:
            return float(sum(self.data[low:high]))
        head = float(sum(self.data[low : self.done])) if low < self.done else 0.0
        return head + float(sum(self.buf[max(0, low - self.done) : high - self.done]))

    def written(self) -> int:
        """How many stamps were taken (a stamp series: the first blank slot of ``buf``)."""
        try:
            return self.done + self.buf.index(UNSET)
        except ValueError:
            return self.done + len(self.buf)

    def release(self) -> None:
        """Let the values go (the result is built): ``written()`` still tells how far the loop got."""
        self.data = array(self.data.typecode)

    def grow(self, length: int) -> None:
        """At least ``length`` values (the new ones blank): a window that spans epochs needs more."""
        if len(self.data) < length:
            self.data.extend(array(self.data.typecode, [self._fill]) * (length - len(self.data)))

    def settle(self, count: int) -> None:
        """Move what the loop wrote to ``data``, up to ``count`` values in all (a trial that ended early)."""
        self.flush(min(count, len(self.data)) - self.done)


def stamp_buffer(n: int) -> Series:
    """The ``n + 1`` timestamps of a trial, all :data:`UNSET`."""
    return Series(n + 1)


def size_buffer(n: int, constant: Optional[int]) -> Series:
    """The ``n`` per-batch sample counts: written by the loop, or ``constant`` for every batch."""
    return Series(n, _COUNTS, 0 if constant is None else constant, buffered=constant is None)


def handed_out(stamps: Series, n: int) -> int:
    """How many of its ``n`` batches an epoch trial has handed out so far (C speed)."""
    return min(stamps.written(), n)


def build_result(
    spec: TrialSpec,
    stamps: Series,
    sizes: Series,
    pauses: Pauses,
    periods: Optional[int] = None,
    asks: Optional[Series] = None,
    fetched: Optional[float] = None,
    gaps: Optional[Pauses] = None,
    drop: Sequence[int] = (),
) -> TrialResult:
    """A :class:`TrialResult` over the first ``periods`` periods (default: all of them) less those in ``drop``
    (a window's periods left out), from the series the loop filled (moved into their typed arrays by the caller).

    FULL passes ``asks``: ``asks[i]`` is when the loop asked for the batch after batch ``i``,
    splitting period ``i`` into the step (``stamps[i]`` to ``asks[i]``) and the wait for data
    (``asks[i]`` to ``stamps[i + 1]``); ``fetched`` is when the last fetch returned, before the
    device sync that closes the trial (the sync is the step's work, not the loader's).
    ``pauses``: benchy's own time inside the step part of a period (periodic lines, and the
    series' moves in IO and SYNTHETIC), taken out of the period; ``gaps``: its time inside the
    wait part (FULL's series moves), taken out of the period and its wait.

    Memory: the step times are computed into the result's own array, the waits in place in
    ``asks``' array and the step parts in ``stamps``', the periods dropped by moving the kept ones forward
    in place, so nothing per step is allocated here beyond what the result keeps (8 bytes for the time,
    1 to 8 for the count, 4 for a FULL period's wait). The series are used up: build the result last.
    """
    n = len(sizes) if periods is None else periods
    times = np.frombuffer(stamps.data, dtype=np.float64)[: n + 1]
    step_seconds, steps = _typed("d", n)
    np.subtract(times[1:], times[:-1], out=steps)
    for k, seconds in pauses:
        if 0 <= k < n:
            steps[k] -= seconds
    counts_all = np.frombuffer(sizes.data, dtype=np.dtype(sizes.data.typecode))[:n]
    counts, view = _typed(samples_typecode(counts_all), n)
    view[:] = counts_all
    waits: Optional[np.ndarray[Any, Any]] = None
    if asks is not None and n > 0:
        waits = np.frombuffer(asks.data, dtype=np.float64)[:n]
        np.subtract(times[1:], waits, out=waits)  # in place: asks are not needed after this
        if fetched is not None:
            waits[n - 1] -= times[n] - fetched
        for k, seconds in gaps or ():
            if 0 <= k < n:
                steps[k] -= seconds
                waits[k] -= seconds
    dropped = sorted({k for k in drop if 0 <= k < n})
    started = _finite(times[0])
    if dropped and started is not None:
        first = next((k for k in range(n) if k not in dropped), n)  # the first period kept
        started += float(steps[:first].sum())
    m = n - len(dropped)
    for compacted in (steps, view, waits):
        if compacted is not None:
            _compact(compacted, dropped, n)
    del compacted
    steps, view = steps[:m], view[:m]
    split: Dict[str, Any] = {}
    if waits is not None and m > 0 and np.isfinite(waits[:m]).all():
        waits = waits[:m]
        wait_seconds = float(waits.sum())
        kept, kept_view = _typed("f", m)  # each period's wait, for the timeline (4 bytes a step)
        kept_view[:] = waits
        del kept_view
        work = times[1 : m + 1]  # in place: the stamps are not needed after this either (stamps[0] is)
        np.subtract(steps, waits, out=work)
        split = {
            "wait_seconds": wait_seconds,
            "wait_median": float(np.median(waits, overwrite_input=True)),
            "work_median": float(np.median(work, overwrite_input=True)),
            "step_waits": kept,
        }
    seconds, samples = float(steps.sum()), int(view.sum(dtype=np.int64))
    del steps, view, times, waits  # the views of the result's arrays, so that they can shrink
    if m < n:
        del step_seconds[m:], counts[m:]
    return TrialResult(
        spec=spec,
        samples=samples,
        seconds=seconds,
        step_seconds=step_seconds,
        step_samples=counts,
        started=started,
        **split,
    )


_BLOCK = 1 << 16  # values moved at a time when periods are dropped (a block's temporary copy at most)


def _compact(values: np.ndarray[Any, Any], dropped: Sequence[int], n: int) -> None:
    """Move the first ``n`` values less those at ``dropped`` (sorted) to the front, in order, in place."""
    if not dropped:
        return
    at = dropped[0]
    for j, k in enumerate(dropped):
        start, end = k + 1, dropped[j + 1] if j + 1 < len(dropped) else n
        for s in range(start, end, _BLOCK):
            size = min(_BLOCK, end - s)
            values[at : at + size] = values[s : s + size]
            at += size


def _finite(value: Any) -> Optional[float]:
    value = float(value)
    return value if np.isfinite(value) else None


def _typed(code: str, n: int) -> Tuple[array[Any], np.ndarray[Any, Any]]:
    """A typed array of ``n`` zeros, exactly its size, and a numpy view of it to fill."""
    out = array(code, [0]) * n
    return out, np.frombuffer(out, dtype=np.dtype(code)) if n else np.zeros(0, dtype=np.dtype(code))


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
        started=None if result.started is None else result.started + result.step_seconds[0],
        # The loop asks for batch k + 1 before step k: the moment it asks splits nothing.
        step_waits=None,
        wait_seconds=None,
        wait_median=None,
        work_median=None,
    )
