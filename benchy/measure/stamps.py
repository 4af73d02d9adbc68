"""A trial's timestamps and sample counts, as the hot loops fill them (:class:`Stamps`, :class:`Series`,
:class:`Constant`), and the :class:`~benchy.core.results.TrialResult` built from them (numpy, no torch).

``stamps[i]`` is when batch ``i`` is handed out, ``stamps[n]`` when the trial's clock stops;
period ``i`` (``stamps[i]`` to ``stamps[i+1]``) holds one training step and one fetch.
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..core.results import PERIOD_CODE, TrialResult, samples_typecode
from ..core.schedule import TrialSpec

Pauses = List[Tuple[int, float]]  # (period, seconds) of benchy's own work inside a trial, taken out of it

# A stamp not taken yet. Found by identity (``buf.index(UNSET)``), so a session can tell how
# many batches a suspended trial has handed out without any per-step bookkeeping.
UNSET = float("nan")

# Values a hot loop writes into a plain list before they move into a typed array (see Series).
CHUNK = 4096
# Per-step sample counts while a trial runs: 4 bytes each ('I'), made smaller when it ends.
_COUNTS = "I" if array("I").itemsize >= 4 else "Q"


def _zeros(code: str, length: int) -> array[Any]:
    return array(code, [0]) * max(0, length)


def _view(values: array[Any]) -> np.ndarray[Any, Any]:
    """A numpy view of a typed array (no copy; let it go before the array is resized)."""
    return np.frombuffer(values, dtype=np.dtype(values.typecode)) if len(values) else np.zeros(0, np.dtype(values.typecode))


class Stamps:
    """The timestamps of up to ``periods + 1`` hand-outs, kept as the periods between them: 4 bytes a period
    (``float32``: a nanosecond in a 10 ms period). The loop stores each stamp into ``buf`` (a list store is the
    cheapest a loop can make); :meth:`flush` turns them into periods at each chunk's end, outside the trial's time.
    ``split`` (FULL): ``asks`` too, kept as each period's wait for data (``waits``).
    """

    __slots__ = ("_blank", "ask", "asks", "buf", "done", "end", "first", "last", "periods", "waits")

    def __init__(self, periods: int, split: bool = False) -> None:
        self.periods: array[float] = _zeros(PERIOD_CODE, periods)
        self.waits: Optional[array[float]] = _zeros(PERIOD_CODE, periods) if split else None
        self.ask = UNSET  # ask ``done - 1``, as a time
        self._blank: List[float] = [UNSET] * CHUNK
        self.buf: List[float] = list(self._blank)
        self.asks: Optional[List[float]] = list(self._blank) if split else None
        self.done = 0
        self.first = UNSET  # stamp 0, as a time
        self.last = UNSET  # stamp ``done - 1``, as a time
        self.end = UNSET  # the clock's stop (:meth:`stop`)

    def start(self, value: float) -> None:
        self.first = self.last = value
        self.done = 1

    def flush(self, count: int) -> None:
        if count <= 0:
            return
        d = self.done
        taken = np.array(self.buf[:count], dtype=np.float64)
        periods = _view(self.periods)
        if d == 0:
            self.first = float(taken[0])
        else:
            periods[d - 1] = taken[0] - self.last
        np.subtract(taken[1:], taken[:-1], out=periods[d : d + count - 1], casting="same_kind")
        asks = self.asks
        if asks is not None and self.waits is not None:
            waits = _view(self.waits)
            asked = np.array(asks[:count], dtype=np.float64)
            if d > 0:
                waits[d - 1] = taken[0] - self.ask
            np.subtract(taken[1:], asked[:-1], out=waits[d : d + count - 1], casting="same_kind")
            self.ask = float(asked[-1])
            asks[:count] = self._blank[:count]
            del waits
        del periods
        self.buf[:count] = self._blank[:count]
        self.last = float(taken[-1])
        self.done = d + count

    def stop(self, index: int, value: float) -> None:
        """The clock stopped at ``value``, as stamp ``index``: the one after the last moved (``done``), or in
        place of the last moved (``done - 1``: a loop whose final stamp is taken again after the device sync)."""
        periods = self.periods
        if index == self.done and index > 0:
            periods[index - 1] = value - self.last
            if self.waits is not None:
                self.waits[index - 1] = value - self.ask
        elif index == self.done - 1 and index > 0:
            periods[index - 1] = periods[index - 1] + (value - self.last)
            self.last = value
        else:
            raise ValueError(f"a trial's stop is stamp {self.done - 1} or {self.done} (stamps moved: {self.done}), not {index}")
        self.end = value

    def get(self, i: int) -> float:
        """Stamp ``i`` as a time (below ``done``: the last moved less the periods since)."""
        d = self.done
        if i >= d:
            return self.buf[i - d]
        if i == d - 1:
            return self.last
        return self.last - float(np.sum(_view(self.periods)[i : d - 1], dtype=np.float64))

    def period(self, i: int) -> float:
        return float(self.periods[i]) if i + 1 < self.done else self.get(i + 1) - self.get(i)

    def written(self) -> int:
        """How many stamps were taken (the first blank slot of ``buf``)."""
        try:
            return self.done + self.buf.index(UNSET)
        except ValueError:
            return self.done + len(self.buf)

    def grow(self, stamps: int) -> None:
        if len(self.periods) < stamps - 1:
            self.periods.extend(_zeros(PERIOD_CODE, stamps - 1 - len(self.periods)))
        if self.waits is not None and len(self.waits) < stamps - 1:
            self.waits.extend(_zeros(PERIOD_CODE, stamps - 1 - len(self.waits)))

    def settle(self, count: int) -> None:
        """Move what the loop wrote, up to ``count`` stamps in all (a trial that ended early)."""
        self.flush(min(count, len(self.periods) + 1) - self.done)


class Series:
    """Per-batch sample counts, written into ``buf`` and flushed into ``data`` as :class:`Stamps` are."""

    __slots__ = ("_blank", "buf", "data", "done")

    def __init__(self, length: int) -> None:
        self.data: array[int] = _zeros(_COUNTS, length)
        self._blank: List[int] = [0] * CHUNK
        self.buf: List[int] = list(self._blank)
        self.done = 0

    def __len__(self) -> int:
        return len(self.data)

    def flush(self, count: int) -> None:
        if count > 0:
            start = self.done
            self.data[start : start + count] = array(_COUNTS, self.buf[:count])
            self.buf[:count] = self._blank[:count]
            self.done = start + count

    def set(self, i: int, value: int) -> None:
        if i < self.done:
            self.data[i] = value
        else:
            self.buf[i - self.done] = value

    def total(self, low: int, high: int) -> float:
        if high <= self.done:
            return float(sum(self.data[low:high]))
        head = float(sum(self.data[low : self.done])) if low < self.done else 0.0
        return head + float(sum(self.buf[max(0, low - self.done) : high - self.done]))

    def grow(self, length: int) -> None:
        if len(self.data) < length:
            self.data.extend(_zeros(_COUNTS, length - len(self.data)))

    def settle(self, count: int) -> None:
        """Move what the loop wrote to ``data``, up to ``count`` values in all (a trial that ended early)."""
        self.flush(min(count, len(self.data)) - self.done)

    def values(self, n: int) -> np.ndarray[Any, Any]:
        return _view(self.data)[:n]

    def release(self) -> None:
        self.data = array(_COUNTS)


class Constant:
    """Per-batch sample counts, the same for every batch but those :meth:`set` (a pass's short last batch)."""

    __slots__ = ("buf", "done", "length", "other", "value")

    def __init__(self, length: int, value: int) -> None:
        self.length, self.value = length, value
        self.other: Dict[int, int] = {}
        self.buf: List[int] = []
        self.done = 0

    def __len__(self) -> int:
        return self.length

    def flush(self, count: int) -> None: ...

    def set(self, i: int, value: int) -> None:
        if value == self.value:
            self.other.pop(i, None)
        else:
            self.other[i] = value

    def total(self, low: int, high: int) -> float:
        return float(self.value * (high - low) + sum(v - self.value for i, v in self.other.items() if low <= i < high))

    def grow(self, length: int) -> None:
        self.length = max(self.length, length)

    def settle(self, count: int) -> None: ...

    def values(self, n: int) -> np.ndarray[Any, Any]:
        """The first ``n`` counts (made here: the smallest integer type that holds them)."""
        found = [self.value, *(v for i, v in self.other.items() if i < n)]
        out = np.full(n, self.value, dtype=np.dtype(samples_typecode(found)))
        for i, v in self.other.items():
            if i < n:
                out[i] = v
        return out

    def release(self) -> None:
        self.other = {}


Counts = Union[Series, Constant]


def size_buffer(n: int, constant: Optional[int]) -> Counts:
    """The ``n`` per-batch sample counts: written by the loop, or ``constant`` for every batch."""
    return Series(n) if constant is None else Constant(n, constant)


def build_result(
    spec: TrialSpec,
    stamps: Stamps,
    sizes: Counts,
    pauses: Pauses,
    periods: Optional[int] = None,
    fetched: Optional[float] = None,
    gaps: Optional[Pauses] = None,
    drop: Sequence[int] = (),
) -> TrialResult:
    """A :class:`TrialResult` over the first ``periods`` periods less those in ``drop``, from the series the loop
    filled. ``fetched`` (FULL): when the last fetch returned, before the closing sync (the step's work, not the
    loader's); ``gaps``: benchy's own time inside FULL's wait part, taken out of the period and its wait.

    The result takes over the series' own arrays (nothing per step is allocated): build it last.
    """
    n = len(sizes) if periods is None else periods
    step_seconds = stamps.periods
    stamps.periods = array(PERIOD_CODE)
    steps = _view(step_seconds)[:n]
    waits: Optional[np.ndarray[Any, Any]] = None
    kept: Optional[array[float]] = None
    if stamps.waits is not None and n > 0:
        kept, stamps.waits = stamps.waits, array(PERIOD_CODE)
        waits = _view(kept)[:n]
        if fetched is not None:
            waits[n - 1] -= stamps.end - fetched
        for k, seconds in gaps or ():
            if 0 <= k < n:
                steps[k] -= seconds
                waits[k] -= seconds
    for k, seconds in pauses:
        if 0 <= k < n:
            steps[k] -= seconds
    counts_all = sizes.values(n)
    counts = _zeros(samples_typecode(counts_all), n)
    view = _view(counts)
    view[:] = counts_all
    del counts_all
    sizes.release()
    dropped = sorted({k for k in drop if 0 <= k < n})
    started = stamps.first if math.isfinite(stamps.first) else None
    if dropped and started is not None:
        first = next((k for k in range(n) if k not in dropped), n)  # the first period kept
        started += float(steps[:first].sum(dtype=np.float64))
    m = n - len(dropped)
    for compacted in (steps, view, waits):
        if compacted is not None:
            compact(compacted, dropped, n)
    del compacted
    steps, view = steps[:m], view[:m]
    split: Dict[str, Any] = {}
    if waits is not None and kept is not None and m > 0 and np.isfinite(waits[:m]).all():
        waits = waits[:m]
        scratch = np.array(waits)  # the medians partition a copy: the waits are kept in order
        split = {
            "wait_seconds": float(waits.sum(dtype=np.float64)),
            "wait_median": float(np.median(scratch, overwrite_input=True)),
        }
        np.subtract(steps, waits, out=scratch)
        split["work_median"] = float(np.median(scratch, overwrite_input=True))
        del scratch
    seconds, samples = float(steps.sum(dtype=np.float64)), int(view.sum(dtype=np.int64))
    del steps, view, waits  # the views of the result's arrays, so that they can shrink
    del step_seconds[m:], counts[m:]
    if split:
        assert kept is not None
        del kept[m:]
        split["step_waits"] = kept
    return TrialResult(
        spec=spec,
        samples=samples,
        seconds=seconds,
        step_seconds=step_seconds,
        step_samples=counts,
        started=started,
        **split,
    )


def part_round(start: int, stop: int, cycle: int) -> range:
    """The periods of ``start`` to ``stop`` (excluded) past its last whole round of ``cycle``: those left out."""
    whole = max(0, stop - start) // max(1, cycle) * max(1, cycle)
    return range(start + whole, max(start + whole, stop))


_BLOCK = 1 << 16  # values moved at a time when periods are dropped (a block's temporary copy at most)


def compact(values: np.ndarray[Any, Any], dropped: Sequence[int], n: int) -> None:
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


# A SYNTHETIC first period shorter than this share of the median period holds no step.
LOOKAHEAD_SHARE = 0.25
