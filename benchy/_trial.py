"""The hot loops: one timed trial over a batch source (no printing, no torch import).

Each trial records one timestamp per batch into a preallocated list: ``stamps[i]`` is
when batch ``i`` is handed out, ``stamps[n]`` when the trial's clock stops. Period ``i``
(``stamps[i]`` to ``stamps[i+1]``) holds one training step and one fetch, so a trial of
``n`` batches spans exactly ``n`` periods:

* SYNTHETIC: the clock runs from handing out the cached batch the first time to the loop
  asking for batch ``n + 1`` (no fetches at all). The batch is the same object in every
  SYNTHETIC trial (``get_batch`` returns the session's one cached batch).
* FULL: from handing out batch 1 to the loop asking for batch ``n + 1`` *and* the batch
  after the last one being ready; that batch is kept for the next FULL trial. Stopping
  at the request alone would leave ``n`` steps but only ``n - 1`` fetches in the window
  and overstate an IO-bound throughput by up to ``1/n``.
* IO: from receiving one batch to receiving ``n`` more; the ``n`` received inside the
  window are counted.

A loop sized by ``len()`` takes exactly ``n`` batches and never asks for batch ``n + 1``.
When such a trial's iterator is closed or dropped after handing out all ``n`` batches, the
trial still counts, over its first ``n - 1`` periods (``stamps[0]`` to ``stamps[n-1]``:
``n - 1`` steps, ``n - 1`` fetches and the samples of batches ``1 .. n-1``); with ``n = 1``
there is no such period and the trial is reported as not counted.

Everything else (device sync, the optional barrier ``begin``, statistics, printing,
collectives) happens at trial boundaries; the periodic report runs every ``report_freq``
steps and its own duration is measured and taken out of the trial's time.

Each loop exists twice: plain, and annotated with NVTX ranges (used only while a tool such
as Nsight Systems is attached). A shared ``if`` per step would cost more than the 20 ns the
plain loop may spend on annotations, so the two are kept apart and every fake-clock test
runs over both (``tests/test_trial.py``); what is not per-step is shared below.
"""

from __future__ import annotations

import dataclasses
from array import array
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

import numpy as np

from ._results import TrialResult
from ._schedule import Mode, TrialSpec
from ._source import Source

__all__ = [
    "STOPPED",
    "TOO_SHORT",
    "UNSET",
    "Reporter",
    "build_result",
    "epoch_trial_annotated",
    "fetches_ahead",
    "full_trial",
    "handed_out",
    "io_trial",
    "io_trial_annotated",
    "synthetic_trial",
    "without_first_period",
]

Clock = Callable[[], float]
_NO_BATCH = object()
Pauses = List[Tuple[int, float]]
# report(spec, i, stamps, sizes, pauses): called after stamps[i] is taken; appends its own
# duration to ``pauses`` as (i, seconds).
Reporter = Callable[[TrialSpec, int, List[float], List[int], Pauses], None]
Counter = Callable[[Any], int]
OnDone = Callable[[TrialResult, bool], None]  # (result, closed early: counted over n - 1 periods)
OnAbort = Callable[[TrialSpec, int, str], None]

# A stamp not taken yet. Found by identity (``stamps.index(UNSET)``), so a session can tell
# how many batches a suspended trial has handed out without any per-step bookkeeping.
UNSET = float("nan")

STOPPED = ("the training loop stopped asking for batches after {k} of {n} (a break, an exception in the "
           "step, or the epoch's iterator was dropped)")
TOO_SHORT = ("the loop took its only batch (nbatches: 1) and never asked for a second one, which the "
             "trial's window needs; use nbatches >= 2")


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


def _closed(spec: TrialSpec, stamps: List[float], sizes: List[int], pauses: Pauses, handed: int,
            on_done: OnDone, on_abort: OnAbort, asks: Optional[List[float]] = None) -> None:
    """The loop closed or dropped the trial's iterator: count it if all batches were handed out."""
    n = spec.nbatches
    if handed >= n and n >= 2:
        on_done(build_result(spec, stamps, sizes, pauses, periods=n - 1, asks=asks), True)
    elif handed >= n:
        on_abort(spec, handed, TOO_SHORT)
    else:
        on_abort(spec, handed, STOPPED.format(k=handed, n=n))


def _first_report(report: Optional[Reporter], freq: int, n: int) -> int:
    """Index of the first step that reports, or -1 (never)."""
    return freq if (report is not None and 0 < freq < n) else -1


def _following(current: int, freq: int, n: int) -> int:
    """The next reporting step after ``current``; -1 once it would reach the trial's end."""
    following = current + freq
    return following if following < n else -1


def io_trial(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
    constant: Optional[int] = None,
) -> TrialResult:
    """Drain ``spec.nbatches`` batches from the loader alone (no training step).

    ``constant``: every batch but the last of a pass holds this many samples (a DataLoader's
    batch sampler with the default collate), so only those last batches are counted; a pass's
    last batch shows itself by the StopIteration that follows it.
    """
    n = spec.nbatches
    stamps = stamp_buffer(n)
    each = constant is None
    sizes = [0 if constant is None else constant] * n  # sizes[k]: the batch received at stamps[k + 1]
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    batch = source.fetch()
    nxt = source.next_function()
    (begin or sync)()
    stamps[0] = clock()
    for j in range(1, n + 1):
        try:
            batch = nxt()
        except StopIteration:
            if not each and j >= 2:
                sizes[j - 2] = counter(batch)  # it ended its pass
            nxt, batch = source.new_pass()
        if each:
            sizes[j - 1] = counter(batch)
        stamps[j] = clock()
        if j == next_report:
            report(spec, j, stamps, sizes, pauses)  # type: ignore[misc]
            next_report = _following(next_report, freq, n)
    sync()
    stamps[n] = clock()
    if not each:
        sizes[n - 1] = counter(batch)  # whether it ends its pass shows only in the next trial
    source.keep(batch)
    return build_result(spec, stamps, sizes, pauses)


def synthetic_trial(
    spec: TrialSpec,
    get_batch: Callable[[], Any],
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: OnDone,
    on_abort: OnAbort,
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
    stamps: Optional[List[float]] = None,
) -> Generator[Any, None, None]:
    """Yield the one cached batch ``spec.nbatches`` times: the training step alone."""
    n = spec.nbatches
    stamps = stamp_buffer(n) if stamps is None else stamps
    pauses: Pauses = []
    sizes: List[int] = []
    next_report = _first_report(report, freq, n)
    i = -1
    try:
        batch = get_batch()
        sizes = [counter(batch)] * n
        (begin or sync)()
        for i in range(n):
            stamps[i] = clock()
            if i == next_report:
                report(spec, i, stamps, sizes, pauses)  # type: ignore[misc]
                next_report = _following(next_report, freq, n)
            yield batch
        sync()
        stamps[n] = clock()
    except GeneratorExit:
        _closed(spec, stamps, sizes, pauses, i + 1, on_done, on_abort)
        raise
    except BaseException as err:
        on_abort(spec, i + 1, f"{type(err).__name__} raised: {err}")
        raise
    on_done(build_result(spec, stamps, sizes, pauses), False)


def full_trial(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: OnDone,
    on_abort: OnAbort,
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
    stamps: Optional[List[float]] = None,
    constant: Optional[int] = None,
) -> Generator[Any, None, None]:
    """Yield ``spec.nbatches`` real batches: loading and training together.

    ``constant``: as for :func:`io_trial`; batch ``i``'s last-of-pass StopIteration comes
    inside the window (at the fetch of batch ``i + 1``), so every count is exact.
    """
    n = spec.nbatches
    stamps = stamp_buffer(n) if stamps is None else stamps
    asks = stamp_buffer(n)  # asks[i]: the loop asks for the batch after batch i (the step ended)
    each = constant is None
    sizes = [0 if constant is None else constant] * n
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    i = -1
    try:
        batch = source.fetch()
        nxt = source.next_function()
        last = n - 1
        (begin or sync)()
        for i in range(n):
            if each:
                sizes[i] = counter(batch)
            stamps[i] = clock()
            if i == next_report:
                report(spec, i, stamps, sizes, pauses)  # type: ignore[misc]
                next_report = _following(next_report, freq, n)
            yield batch
            asks[i] = clock()
            # After the last step this fetches the batch after the trial's last one, so the
            # window holds n fetches as well as n steps; it is kept for the next FULL trial.
            try:
                batch = nxt()
            except StopIteration:
                if not each:
                    sizes[i] = counter(batch)  # it ended its pass
                if i == last:  # the pass ended with the trial: stop the clock, no new pass
                    batch = _NO_BATCH
                    break
                nxt, batch = source.new_pass()
        fetched = clock()
        sync()
        stamps[n] = clock()
        if batch is not _NO_BATCH:
            source.keep(batch)
    except GeneratorExit:
        _closed(spec, stamps, sizes, pauses, i + 1, on_done, on_abort, asks)
        raise
    except BaseException as err:
        on_abort(spec, i + 1, f"the data loader raised {type(err).__name__}: {err}")
        raise
    on_done(build_result(spec, stamps, sizes, pauses, asks=asks, fetched=fetched), False)


# --- annotated variants: used only while an NVTX tool is attached -------------------------
#
# Same windows and records as the loops above, plus NVTX ranges: one per trial, one per
# step (open while the training loop holds the batch) and one per fetch, the index as a
# payload. ``depth`` counts open ranges so that every exit (end of the loop, a break, an
# exception in the loader or the step) closes exactly what was opened.


def io_trial_annotated(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    report: Optional[Reporter],
    freq: int,
    ranges: Any,
    begin: Optional[Callable[[], None]] = None,
) -> TrialResult:
    """:func:`io_trial` with a trial range and a range per fetch."""
    push, pop, fetch_attr = ranges.push, ranges.pop, ranges.fetch
    n = spec.nbatches
    stamps = stamp_buffer(n)
    sizes = [0] * n
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    depth = 0
    try:
        push(ranges.trial(spec))
        depth = 1
        fetch_attr.payload = 0
        push(fetch_attr)
        depth = 2
        batch = source.fetch()
        nxt = source.next_function()
        pop()
        depth = 1
        (begin or sync)()
        stamps[0] = clock()
        for i in range(n):
            fetch_attr.payload = i + 1
            push(fetch_attr)
            depth = 2
            try:
                batch = nxt()
            except StopIteration:
                nxt, batch = source.new_pass()
            pop()
            depth = 1
            sizes[i] = counter(batch)
            stamps[i + 1] = clock()
            if i + 1 == next_report:
                report(spec, i + 1, stamps, sizes, pauses)  # type: ignore[misc]
                next_report = _following(next_report, freq, n)
        sync()
        stamps[n] = clock()
        source.keep(batch)
        pop()
        depth = 0
    finally:
        while depth:
            pop()
            depth -= 1
    return build_result(spec, stamps, sizes, pauses)


def epoch_trial_annotated(
    spec: TrialSpec,
    source: Source,
    get_batch: Optional[Callable[[], Any]],
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: OnDone,
    on_abort: OnAbort,
    report: Optional[Reporter],
    freq: int,
    ranges: Any,
    begin: Optional[Callable[[], None]] = None,
    stamps: Optional[List[float]] = None,
) -> Generator[Any, None, None]:
    """:func:`synthetic_trial` or :func:`full_trial` (by ``spec.mode``) with NVTX ranges.

    SYNTHETIC takes its batch from ``get_batch``; FULL fetches from ``source``.
    """
    synthetic = spec.mode is Mode.SYNTHETIC
    push, pop, step_attr, fetch_attr = ranges.push, ranges.pop, ranges.step, ranges.fetch
    n = spec.nbatches
    stamps = stamp_buffer(n) if stamps is None else stamps
    asks = stamp_buffer(n)  # FULL: the loop asks for the batch after batch i (see full_trial)
    sizes = [0] * n
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    i = -1
    depth = 0
    fetched = None
    try:
        push(ranges.trial(spec))
        depth = 1
        fetch_attr.payload = 0
        push(fetch_attr)
        depth = 2
        if synthetic:
            batch = get_batch()  # type: ignore[misc]
            nxt = None
        else:
            batch = source.fetch()
            nxt = source.next_function()
        pop()
        depth = 1
        if synthetic:
            sizes = [counter(batch)] * n
        (begin or sync)()
        i = 0
        while True:
            if not synthetic:
                sizes[i] = counter(batch)
            stamps[i] = clock()
            if i == next_report:
                report(spec, i, stamps, sizes, pauses)  # type: ignore[misc]
                next_report = _following(next_report, freq, n)
            step_attr.payload = i
            push(step_attr)
            depth = 2
            yield batch
            asks[i] = clock()
            pop()
            depth = 1
            if i == n - 1:
                break
            if not synthetic:
                fetch_attr.payload = i + 1
                push(fetch_attr)
                depth = 2
                try:
                    batch = nxt()  # type: ignore[misc]
                except StopIteration:
                    nxt, batch = source.new_pass()
                pop()
                depth = 1
            i += 1
        if not synthetic:
            fetch_attr.payload = n
            push(fetch_attr)
            depth = 2
            try:
                source.keep(nxt())  # type: ignore[misc]
            except StopIteration:
                pass
            pop()
            depth = 1
            fetched = clock()
        sync()
        stamps[n] = clock()
        pop()
        depth = 0
    except GeneratorExit:
        # A yielded batch that was never returned counts as handed out (the loop held it).
        handed = i + 1
        while depth:
            pop()
            depth -= 1
        _closed(spec, stamps, sizes, pauses, handed, on_done, on_abort, None if synthetic else asks)
        raise
    except BaseException as err:
        what = f"{type(err).__name__} raised: {err}" if synthetic else f"the data loader raised {type(err).__name__}: {err}"
        while depth:
            pop()
            depth -= 1
        on_abort(spec, i + 1, what)
        raise
    finally:
        while depth:
            pop()
            depth -= 1
    on_done(build_result(spec, stamps, sizes, pauses, asks=None if synthetic else asks, fetched=fetched), False)
