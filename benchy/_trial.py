"""The hot loops: one timed trial over a batch source (no printing, no torch import).

Each trial records one timestamp per batch into a preallocated list: ``stamps[i]`` is
when batch ``i`` is handed out, ``stamps[n]`` when the trial's clock stops. Period ``i``
(``stamps[i]`` to ``stamps[i+1]``) holds one training step and one fetch, so a trial of
``n`` batches spans exactly ``n`` periods:

* SYNTHETIC: the clock runs from handing out the cached batch the first time to the loop
  asking for batch ``n + 1`` (no fetches at all).
* FULL: from handing out batch 1 to the loop asking for batch ``n + 1`` *and* the batch
  after the last one being ready; that batch is kept for the next FULL trial. Stopping
  at the request alone would leave ``n`` steps but only ``n - 1`` fetches in the window
  and overstate an IO-bound throughput by up to ``1/n``.
* IO: from receiving one batch to receiving ``n`` more; the ``n`` received inside the
  window are counted.

Everything else (device sync, the optional barrier ``begin``, statistics, printing,
collectives) happens at trial boundaries; the periodic report runs every ``report_freq``
steps and its own duration is measured and taken out of the trial's time.
"""

from __future__ import annotations

from typing import Any, Callable, Generator, List, Optional, Tuple

from ._results import TrialResult
from ._schedule import Mode, TrialSpec
from ._source import BatchSource

__all__ = [
    "io_trial", "synthetic_trial", "full_trial", "io_trial_annotated", "epoch_trial_annotated",
    "build_result", "Reporter",
]

Clock = Callable[[], float]
_NO_BATCH = object()
Pauses = List[Tuple[int, float]]
# report(spec, i, stamps, sizes, pauses): called after stamps[i] is taken; appends its own
# duration to ``pauses`` as (i, seconds).
Reporter = Callable[[TrialSpec, int, List[float], List[int], Pauses], None]
Counter = Callable[[Any], int]


def build_result(spec: TrialSpec, stamps: List[float], sizes: List[int], pauses: Pauses) -> TrialResult:
    """A :class:`TrialResult` from the raw stamps, sizes and reporting pauses."""
    n = len(sizes)
    steps = [stamps[k + 1] - stamps[k] for k in range(n)]
    for k, seconds in pauses:
        if 0 <= k < n:
            steps[k] -= seconds
    return TrialResult(
        spec=spec,
        samples=sum(sizes),
        seconds=sum(steps),
        step_seconds=tuple(steps),
        step_samples=tuple(sizes),
    )


def _first_report(report: Optional[Reporter], freq: int, n: int) -> int:
    """Index of the first step that reports, or -1 (never)."""
    return freq if (report is not None and 0 < freq < n) else -1


def _following(current: int, freq: int, n: int) -> int:
    """The next reporting step after ``current``; -1 once it would reach the trial's end."""
    following = current + freq
    return following if following < n else -1


def io_trial(
    spec: TrialSpec,
    source: BatchSource,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
) -> TrialResult:
    """Drain ``spec.nbatches`` batches from the loader alone (no training step)."""
    n = spec.nbatches
    stamps = [0.0] * (n + 1)
    sizes = [0] * n  # sizes[k]: the batch received at the end of period k (at stamps[k + 1])
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
            nxt, batch = source.new_pass()
        sizes[j - 1] = counter(batch)
        stamps[j] = clock()
        if j == next_report:
            report(spec, j, stamps, sizes, pauses)  # type: ignore[misc]
            next_report = _following(next_report, freq, n)
    sync()
    stamps[n] = clock()
    source.keep(batch)
    return build_result(spec, stamps, sizes, pauses)


def synthetic_trial(
    spec: TrialSpec,
    source: BatchSource,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: Callable[[TrialResult], None],
    on_abort: Callable[[TrialSpec, int, str], None],
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
) -> Generator[Any, None, None]:
    """Yield one real batch ``spec.nbatches`` times: the training step alone."""
    n = spec.nbatches
    stamps = [0.0] * (n + 1)
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    i = 0
    try:
        batch = source.fetch()
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
        on_abort(spec, i, "the training loop stopped asking for batches (break, or an exception in the step)")
        raise
    except BaseException as err:
        on_abort(spec, i, f"{type(err).__name__} raised: {err}")
        raise
    on_done(build_result(spec, stamps, sizes, pauses))


def full_trial(
    spec: TrialSpec,
    source: BatchSource,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: Callable[[TrialResult], None],
    on_abort: Callable[[TrialSpec, int, str], None],
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
) -> Generator[Any, None, None]:
    """Yield ``spec.nbatches`` real batches: loading and training together."""
    n = spec.nbatches
    stamps = [0.0] * (n + 1)
    sizes = [0] * n
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    i = 0
    try:
        batch = source.fetch()
        nxt = source.next_function()
        last = n - 1
        (begin or sync)()
        for i in range(n):
            sizes[i] = counter(batch)
            stamps[i] = clock()
            if i == next_report:
                report(spec, i, stamps, sizes, pauses)  # type: ignore[misc]
                next_report = _following(next_report, freq, n)
            yield batch
            # After the last step this fetches the batch after the trial's last one, so the
            # window holds n fetches as well as n steps; it is kept for the next FULL trial.
            try:
                batch = nxt()
            except StopIteration:
                if i == last:  # the pass ended with the trial: stop the clock, no new pass
                    batch = _NO_BATCH
                    break
                nxt, batch = source.new_pass()
        sync()
        stamps[n] = clock()
        if batch is not _NO_BATCH:
            source.keep(batch)
    except GeneratorExit:
        on_abort(spec, i, "the training loop stopped asking for batches (break, or an exception in the step)")
        raise
    except BaseException as err:
        on_abort(spec, i, f"the data loader raised {type(err).__name__}: {err}")
        raise
    on_done(build_result(spec, stamps, sizes, pauses))


# --- annotated variants: used only while an NVTX tool is attached -------------------------
#
# Same windows and records as the loops above, plus NVTX ranges: one per trial, one per
# step (open while the training loop holds the batch) and one per fetch, the index as a
# payload. ``depth`` counts open ranges so that every exit (end of the loop, a break, an
# exception in the loader or the step) closes exactly what was opened.


def io_trial_annotated(
    spec: TrialSpec,
    source: BatchSource,
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
    stamps = [0.0] * (n + 1)
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
    source: BatchSource,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    on_done: Callable[[TrialResult], None],
    on_abort: Callable[[TrialSpec, int, str], None],
    report: Optional[Reporter],
    freq: int,
    ranges: Any,
    begin: Optional[Callable[[], None]] = None,
) -> Generator[Any, None, None]:
    """:func:`synthetic_trial` or :func:`full_trial` (by ``spec.mode``) with NVTX ranges."""
    synthetic = spec.mode is Mode.SYNTHETIC
    push, pop, step_attr, fetch_attr = ranges.push, ranges.pop, ranges.step, ranges.fetch
    n = spec.nbatches
    stamps = [0.0] * (n + 1)
    sizes = [0] * n
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    i = 0
    depth = 0
    try:
        push(ranges.trial(spec))
        depth = 1
        fetch_attr.payload = 0
        push(fetch_attr)
        depth = 2
        batch = source.fetch()
        nxt = None if synthetic else source.next_function()
        pop()
        depth = 1
        if synthetic:
            sizes = [counter(batch)] * n
        (begin or sync)()
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
            pop()
            depth = 1
            i += 1
            if i == n:
                break
            if not synthetic:
                fetch_attr.payload = i
                push(fetch_attr)
                depth = 2
                try:
                    batch = nxt()  # type: ignore[misc]
                except StopIteration:
                    nxt, batch = source.new_pass()
                pop()
                depth = 1
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
        sync()
        stamps[n] = clock()
        pop()
        depth = 0
    except GeneratorExit:
        on_abort(spec, i, "the training loop stopped asking for batches (break, or an exception in the step)")
        raise
    except BaseException as err:
        on_abort(spec, i, f"the data loader raised {type(err).__name__}: {err}")
        raise
    finally:
        while depth:
            pop()
            depth -= 1
    on_done(build_result(spec, stamps, sizes, pauses))
