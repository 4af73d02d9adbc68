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

Each window is written once, annotated with NVTX ranges (one per trial, one per step while
the loop holds the batch, one per fetch, the index as a payload); the lines marked ``# nvtx``
are its annotations. The plain variant, used whenever no tool such as Nsight Systems is
attached, is built from the same source at import with those lines made ``pass`` (which
compiles to nothing), so the two cannot drift and the plain loop pays nothing for them (a
shared ``if`` per step would cost more than the 20 ns the plain loop may spend on annotations).
Every fake-clock test runs over both (``tests/measure/test_trial.py``).

A trial ends with an :data:`~benchy.core.results.Outcome`: :func:`io_trial` returns its
result; an epoch trial (a generator the training loop consumes) hands its outcome to
``settle`` once, when it finishes, is closed, or fails.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any, Callable, Dict, Generator, Optional, Tuple

from ..core.results import Counted, Interruption, Outcome, TrialResult
from ..core.schedule import TrialSpec
from .source import Source
from .stamps import Pauses, Series, build_result, handed_out, size_buffer, stamp_buffer

__all__ = [
    "STOPPED",
    "TOO_SHORT",
    "WINDOWS",
    "Reporter",
    "Settle",
    "full_trial",
    "io_trial",
    "synthetic_trial",
]

Clock = Callable[[], float]
_NO_BATCH = object()
# report(spec, i, stamps, sizes, pauses): called after stamps[i] is taken; appends its own
# duration to ``pauses`` as (i, seconds).
Reporter = Callable[[TrialSpec, int, Series, Series, Pauses], None]
Counter = Callable[[Any], int]
Settle = Callable[[Outcome], None]  # an epoch trial's outcome, handed over once

STOPPED = ("the training loop stopped asking for batches after {k} of {n} (a break, an exception in the "
           "step, or the epoch's iterator was dropped)")
TOO_SHORT = ("the loop took its only batch (nbatches: 1) and never asked for a second one, which the "
             "trial's window needs; use nbatches >= 2")


def _closed(spec: TrialSpec, stamps: Series, sizes: Series, pauses: Pauses, asks: Optional[Series] = None,
            gaps: Optional[Pauses] = None) -> Outcome:
    """The loop closed or dropped the trial's iterator: it counts if all batches were handed out."""
    n = spec.nbatches
    handed = handed_out(stamps, n)
    stamps.settle(handed)  # what the loop wrote into the series' lists, into their arrays
    sizes.settle(handed)
    if asks is not None:
        asks.settle(handed - 1)  # the ask after the last batch handed out was never made
    if handed >= n and n >= 2:
        result = build_result(spec, stamps, sizes, pauses, periods=n - 1, asks=asks, gaps=gaps)
        for series in (stamps, sizes, asks):
            if series is not None:
                series.release()
        return Counted(result, True)
    if handed >= n:
        return Interruption(spec, handed, TOO_SHORT)
    return Interruption(spec, handed, STOPPED.format(k=handed, n=n), dropped=True)


def _move(clock: Clock, pauses: Pauses, period: int, count: int, *series: Series) -> None:
    """At a chunk's end: move the loop's ``count`` values of each series into its array, the time
    it takes recorded as benchy's own in ``period`` (taken out of the trial)."""
    start = clock()
    for values in series:
        values.flush(count)
    pauses.append((period, clock() - start))


def _open_trial(ranges: Any, spec: TrialSpec) -> int:
    """Open the trial's range and the range of its first fetch (payload 0); the depth, 2."""
    ranges.push(ranges.trial(spec))
    ranges.fetch.payload = 0
    ranges.push(ranges.fetch)
    return 2


def _close_ranges(pop: Callable[[], None], depth: int, keep: int) -> int:
    """Pop NVTX ranges until ``keep`` remain open; the new depth."""
    while depth > keep:
        pop()
        depth -= 1
    return depth


def _first_report(report: Optional[Reporter], freq: int, n: int) -> int:
    """Index of the first step that reports, or -1 (never)."""
    return freq if (report is not None and 0 < freq < n) else -1


def _following(current: int, freq: int, n: int) -> int:
    """The next reporting step after ``current``; -1 once it would reach the trial's end."""
    following = current + freq
    return following if following < n else -1


# --- the windows, each written once (annotated; the plain variants are derived below) ------------


def _io_annotated(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    report: Optional[Reporter],
    freq: int,
    begin: Optional[Callable[[], None]],
    constant: Optional[int],
    ranges: Any,
) -> TrialResult:
    n = spec.nbatches
    stamps = stamp_buffer(n)
    each = constant is None
    sizes = size_buffer(n, constant)  # sizes[k]: the batch received at stamps[k + 1]
    sbuf, zbuf, chunk = stamps.buf, sizes.buf, len(stamps.buf)
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    push, pop, fetch_attr = ranges.push, ranges.pop, ranges.fetch  # nvtx
    depth = 0  # nvtx
    try:
        depth = _open_trial(ranges, spec)  # nvtx
        batch = source.fetch()
        nxt = source.next_function()
        pop()  # nvtx
        depth = 1  # nvtx
        (begin or sync)()
        stamps.data[0] = clock()
        stamps.done = 1
        for c0 in range(1, n + 1, chunk):  # stamp c0 + k is buf[k]; size c0 - 1 + k is zbuf[k]
            m = min(chunk, n + 1 - c0)
            rk = next_report - c0
            for k in range(m):
                fetch_attr.payload = c0 + k  # nvtx
                push(fetch_attr)  # nvtx
                try:
                    batch = nxt()
                except StopIteration:
                    if not each and c0 + k >= 2:
                        sizes.set(c0 + k - 2, counter(batch))  # it ended its pass
                    nxt, batch = source.new_pass()
                pop()  # nvtx
                if each:
                    try:
                        zbuf[k] = counter(batch)  # count
                    except _MISS:
                        zbuf[k] = counter(batch)
                sbuf[k] = clock()
                if k == rk:  # report: the line's time, from this stamp on, is taken out of the trial
                    next_report = _following(next_report, freq, n)
                    rk = next_report - c0
                    report(spec, c0 + k, stamps, sizes, pauses)  # type: ignore[misc]
            _move(clock, pauses, min(c0 + m, n) - 1, m, stamps, sizes)
        sync()
        stamps.data[n] = clock()
        if not each:
            sizes.set(n - 1, counter(batch))  # whether it ends its pass shows only in the next trial
        source.keep(batch)
    finally:
        depth = _close_ranges(pop, depth, 0)  # nvtx
    result = build_result(spec, stamps, sizes, pauses)
    stamps.release()
    sizes.release()
    return result


def _synthetic_annotated(
    spec: TrialSpec,
    get_batch: Callable[[], Any],
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    settle: Settle,
    report: Optional[Reporter],
    freq: int,
    begin: Optional[Callable[[], None]],
    stamps: Series,
    ranges: Any,
) -> Generator[Any, None, None]:
    n = spec.nbatches
    pauses: Pauses = []
    sizes = size_buffer(0, 0)
    sbuf, chunk = stamps.buf, len(stamps.buf)
    next_report = _first_report(report, freq, n)
    push, pop, step_attr = ranges.push, ranges.pop, ranges.step  # nvtx
    depth = 0  # nvtx
    try:
        depth = _open_trial(ranges, spec)  # nvtx
        batch = get_batch()
        pop()  # nvtx
        depth = 1  # nvtx
        sizes = size_buffer(n, counter(batch))
        (begin or sync)()
        for c0 in range(0, n, chunk):  # stamp c0 + k is buf[k]
            m = min(chunk, n - c0)
            rk = next_report - c0
            for k in range(m):
                sbuf[k] = clock()
                if k == rk:  # report: the line's time, from this stamp on, is taken out of the trial
                    next_report = _following(next_report, freq, n)
                    rk = next_report - c0
                    report(spec, c0 + k, stamps, sizes, pauses)  # type: ignore[misc]
                step_attr.payload = c0 + k  # nvtx
                push(step_attr)  # nvtx
                depth = 2  # nvtx
                yield batch
                pop()  # nvtx
                depth = 1  # nvtx
            _move(clock, pauses, c0 + m - 1, m, stamps)
        sync()
        stamps.data[n] = clock()
    except GeneratorExit:
        depth = _close_ranges(pop, depth, 0)  # nvtx
        settle(_closed(spec, stamps, sizes, pauses))
        raise
    except BaseException as err:
        depth = _close_ranges(pop, depth, 0)  # nvtx
        settle(Interruption(spec, handed_out(stamps, n), f"{type(err).__name__} raised: {err}", error=True))
        raise
    finally:
        depth = _close_ranges(pop, depth, 0)  # nvtx
    result = build_result(spec, stamps, sizes, pauses)
    stamps.release()  # before the outcome is handed over: the last trial's summary runs inside it
    sizes.release()
    settle(Counted(result))


def _full_annotated(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    settle: Settle,
    report: Optional[Reporter],
    freq: int,
    begin: Optional[Callable[[], None]],
    stamps: Series,
    constant: Optional[int],
    ranges: Any,
) -> Generator[Any, None, None]:
    n = spec.nbatches
    asks = stamp_buffer(n - 1)  # asks[i]: the loop asks for the batch after batch i (the step ended)
    each = constant is None
    sizes = size_buffer(n, constant)
    sbuf, abuf, zbuf, chunk = stamps.buf, asks.buf, sizes.buf, len(stamps.buf)
    pauses: Pauses = []
    gaps: Pauses = []  # the series' moves, in the wait part of a period
    next_report = _first_report(report, freq, n)
    push, pop, step_attr, fetch_attr = ranges.push, ranges.pop, ranges.step, ranges.fetch  # nvtx
    depth = 0  # nvtx
    try:
        depth = _open_trial(ranges, spec)  # nvtx
        batch = source.fetch()
        nxt = source.next_function()
        pop()  # nvtx
        depth = 1  # nvtx
        last = n - 1
        (begin or sync)()
        for c0 in range(0, n, chunk):  # batch c0 + k: its stamp, ask and size are buf[k]
            m = min(chunk, n - c0)
            rk = next_report - c0
            for k in range(m):
                if each:
                    try:
                        zbuf[k] = counter(batch)  # count
                    except _MISS:
                        zbuf[k] = counter(batch)
                sbuf[k] = clock()
                if k == rk:  # report: the line's time, from this stamp on, is taken out of the trial
                    next_report = _following(next_report, freq, n)
                    rk = next_report - c0
                    report(spec, c0 + k, stamps, sizes, pauses)  # type: ignore[misc]
                step_attr.payload = c0 + k  # nvtx
                push(step_attr)  # nvtx
                depth = 2  # nvtx
                yield batch
                abuf[k] = clock()
                pop()  # nvtx
                fetch_attr.payload = c0 + k + 1  # nvtx
                push(fetch_attr)  # nvtx
                # After the last step this fetches the batch after the trial's last one, so the
                # window holds n fetches as well as n steps; it is kept for the next FULL trial.
                try:
                    batch = nxt()
                except StopIteration:
                    if not each:
                        sizes.set(c0 + k, counter(batch))  # it ended its pass
                    if c0 + k == last:  # the pass ended with the trial: stop the clock, no new pass
                        batch = _NO_BATCH
                        break
                    nxt, batch = source.new_pass()
                pop()  # nvtx
                depth = 1  # nvtx
            depth = _close_ranges(pop, depth, 1)  # nvtx
            _move(clock, gaps, c0 + m - 1, m, stamps, asks, sizes)
        fetched = clock()
        sync()
        stamps.data[n] = clock()
        if batch is not _NO_BATCH:
            source.keep(batch)
    except GeneratorExit:
        # A yielded batch that was never returned counts as handed out (the loop held it).
        depth = _close_ranges(pop, depth, 0)  # nvtx
        settle(_closed(spec, stamps, sizes, pauses, asks, gaps))
        raise
    except BaseException as err:
        depth = _close_ranges(pop, depth, 0)  # nvtx
        settle(Interruption(spec, handed_out(stamps, n), f"the data loader raised {type(err).__name__}: {err}",
                            error=True))
        raise
    finally:
        depth = _close_ranges(pop, depth, 0)  # nvtx
    result = build_result(spec, stamps, sizes, pauses, asks=asks, fetched=fetched, gaps=gaps)
    for series in (stamps, asks, sizes):  # before the outcome is handed over: the last trial's summary runs inside it
        series.release()
    settle(Counted(result))


_MARK = "# nvtx"
_COUNT_MARK = "# count"
_REPORT_MARK = "# report:"
# What an inline count may raise on a batch of another structure: then the counter's call.
_MISS = (AttributeError, IndexError, KeyError, TypeError)


def _variant(annotated: Callable[..., Any], nvtx: bool, count: Optional[str], report: bool = True
             ) -> Callable[..., Any]:
    """A window compiled from ``annotated``'s source: without NVTX, every line marked ``# nvtx``
    made ``pass`` (which compiles to nothing); with ``count`` (a counter's ``inline``
    expression, e.g. ``batch[0].shape[0]``), the lines marked ``# count`` compute it in place
    of calling the counter (the call remains where it raises); without ``report``, the
    periodic line's test (marked ``# report:``) is ``if False:``, which compiles to nothing.
    Same signature, globals and line numbers as the annotated function."""
    lines, first = inspect.getsourcelines(annotated)
    source = textwrap.dedent("".join(lines))
    kept = ["" for _ in range(first - 1)]  # the same line numbers as the file, for tracebacks
    for line in source.splitlines():
        stripped = line.rstrip()
        if not nvtx and stripped.endswith(_MARK):
            line = line[: len(line) - len(line.lstrip())] + "pass"
        elif count is not None and stripped.endswith(_COUNT_MARK):
            line = line.replace("counter(batch)", count)
        elif not report and _REPORT_MARK in line:
            line = line[: len(line) - len(line.lstrip())] + "if False:"
        kept.append(line)
    name = annotated.__name__.replace("_annotated", "_plain" if not nvtx else "_annotated") + (
        "_inline" if count is not None else "") + ("" if report else "_quiet")
    code = compile("\n".join(kept).replace(f"def {annotated.__name__}(", f"def {name}(", 1) + "\n",
                   inspect.getsourcefile(annotated) or "<benchy.measure.trial>", "exec")
    namespace: Dict[str, Any] = {}
    exec(code, annotated.__globals__, namespace)
    made: Callable[..., Any] = namespace[name]
    made.__qualname__ = name
    return made


class _NoRanges:
    """Ranges that record nothing: the fallback where the package's source cannot be read."""

    def push(self, attr: Any) -> None:
        return None

    def pop(self) -> None:
        return None

    def trial(self, spec: TrialSpec) -> Any:
        return None

    def __init__(self) -> None:
        self.step: Any = _Payload()
        self.fetch: Any = _Payload()


class _Payload:
    payload = 0


_SOURCE_READABLE = True
_VARIANTS: Dict[Tuple[str, bool, Optional[str], bool], Callable[..., Any]] = {}


def _window(annotated: Callable[..., Any], nvtx: bool, count: Optional[str] = None, report: bool = True
            ) -> Callable[..., Any]:
    """The window to run: ``annotated`` itself (NVTX, no inline count, periodic lines), else its
    compiled variant (made once per combination). Where the package's source cannot be read (a
    zipped or compiled-only install) the annotated window runs, with no-op ranges when NVTX is off."""
    global _SOURCE_READABLE
    if nvtx and count is None and report:
        return annotated
    key = (annotated.__name__, nvtx, count, report)
    found = _VARIANTS.get(key)
    if found is not None:
        return found
    if _SOURCE_READABLE:
        try:
            found = _VARIANTS[key] = _variant(annotated, nvtx, count, report)
            return found
        except (OSError, TypeError):
            _SOURCE_READABLE = False
    if nvtx:
        return annotated
    none = _NoRanges()
    return lambda *args: annotated(*args[:-1], none)


_io_plain = _window(_io_annotated, False)
_synthetic_plain = _window(_synthetic_annotated, False)
_full_plain = _window(_full_annotated, False)

# Each window's (plain, annotated) variant: what the tests compare.
WINDOWS: Dict[str, Tuple[Callable[..., Any], Callable[..., Any]]] = {
    "IO": (_io_plain, _io_annotated),
    "SYNTHETIC": (_synthetic_plain, _synthetic_annotated),
    "FULL": (_full_plain, _full_annotated),
}


def _inline(counter: Counter) -> Optional[str]:
    return getattr(counter, "inline", None)


# --- the entry points ---------------------------------------------------------------------------


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
    ranges: Any = None,
) -> TrialResult:
    """Drain ``spec.nbatches`` batches from the loader alone (no training step).

    ``constant``: every batch but the last of a pass holds this many samples (a DataLoader's
    batch sampler with the default collate), so only those last batches are counted; a pass's
    last batch shows itself by the StopIteration that follows it. ``ranges``: the NVTX ranges
    (:func:`~benchy.measure.profiling.nvtx_ranges`) while a tool is attached, else None.
    """
    run = _window(_io_annotated, ranges is not None, _inline(counter), _first_report(report, freq, spec.nbatches) >= 0)
    result: TrialResult = run(spec, source, counter, clock, sync, report, freq, begin, constant, ranges)
    return result


def synthetic_trial(
    spec: TrialSpec,
    get_batch: Callable[[], Any],
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    settle: Settle,
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
    stamps: Optional[Series] = None,
    ranges: Any = None,
) -> Generator[Any, None, None]:
    """Yield the one cached batch ``spec.nbatches`` times: the training step alone."""
    run = _window(_synthetic_annotated, ranges is not None, None, _first_report(report, freq, spec.nbatches) >= 0)
    stamps = stamp_buffer(spec.nbatches) if stamps is None else stamps
    gen: Generator[Any, None, None] = run(spec, get_batch, counter, clock, sync, settle, report, freq, begin, stamps,
                                          ranges)
    return gen


def full_trial(
    spec: TrialSpec,
    source: Source,
    counter: Counter,
    clock: Clock,
    sync: Callable[[], None],
    settle: Settle,
    report: Optional[Reporter] = None,
    freq: int = 0,
    begin: Optional[Callable[[], None]] = None,
    stamps: Optional[Series] = None,
    constant: Optional[int] = None,
    ranges: Any = None,
) -> Generator[Any, None, None]:
    """Yield ``spec.nbatches`` real batches: loading and training together.

    ``constant``: as for :func:`io_trial`; batch ``i``'s last-of-pass StopIteration comes
    inside the window (at the fetch of batch ``i + 1``), so every count is exact.
    """
    run = _window(_full_annotated, ranges is not None, _inline(counter), _first_report(report, freq, spec.nbatches) >= 0)
    stamps = stamp_buffer(spec.nbatches) if stamps is None else stamps
    gen: Generator[Any, None, None] = run(spec, source, counter, clock, sync, settle, report, freq, begin, stamps,
                                          constant, ranges)
    return gen
