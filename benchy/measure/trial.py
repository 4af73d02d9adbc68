"""The hot loops: the IO trial over benchy's own batches, and the loop's epoch with its windows
(no printing, no torch import; what a trial times: docs/guide/what-is-measured.md).

**IO** (:func:`io_trial`) drains ``n`` batches by itself, from receiving one batch to receiving ``n`` more. A
period that holds a new pass's start-up is left out (the start-up is measured on its own), and so is each stretch's
part of a round past its whole rounds.

**An epoch** (:func:`epoch_loop`) is one ``iter()`` of a wrapper. It hands out *segments*, each chosen by the
:class:`Placer` at a boundary: plain batches, the cached batch untimed, or a stretch of a SYNTHETIC or FULL window.
Within a window a period (``stamps[i]`` to ``stamps[i+1]``) holds one step and, in FULL, one fetch. A cached
hand-out takes the place of one batch of the pass, which the placer drops before the next real hand-out, so every
epoch has the pass's own number of steps. Everything else (sync, barrier, statistics, printing, collectives)
happens at segment boundaries; a periodic line's own duration is taken out of the window.

Each loop is one plain function for every setting (docs/development.md): NVTX ranges pushed under ``if nvtx:``
and popped on every exit; a counter call per batch (a pass's last only, given a ``constant``).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable, Generator, Iterator, List, Optional, Protocol, Tuple, Union

from ..core.results import TrialResult
from ..core.schedule import TrialSpec
from .source import NO_BATCH, Source
from .stamps import Counts, Pauses, Stamps, build_result, part_round, size_buffer
from .window import WindowRun

Clock = Callable[[], float]
Counter = Callable[[Any], int]

# Segment kinds: what the next stretch of an epoch hands out.
END, PLAIN, CACHED, SYNTHETIC, FULL = 0, 1, 2, 3, 4


@dataclasses.dataclass(frozen=True)
class IOArgs:
    """One IO trial's arguments. ``constant``: every batch but a pass's last holds this many samples, so only
    those last batches are counted. ``ranges``: the NVTX ranges while a tool is attached, else None."""

    spec: TrialSpec
    source: Source
    counter: Counter
    clock: Clock
    sync: Callable[[], None]
    report: Optional[Callable[[TrialSpec, int, Stamps, Counts, Pauses], None]] = None
    freq: int = 0
    begin: Optional[Callable[[], None]] = None
    constant: Optional[int] = None
    ranges: Any = None
    drain: Optional[Callable[[], None]] = None  # takes the batches the workers hold ready, right before the clock


@dataclasses.dataclass(frozen=True)
class Segment:
    """The next stretch of an epoch, as the placer decided it at a boundary.

    ``steps``: hand-outs (-1: until the epoch ends; PLAIN only); ``finishes``: running all ``steps`` finishes the
    window; ``resume``: the window ran in an earlier segment (only a device sync, not the window's ``begin``)."""

    kind: int
    steps: int = -1
    window: Optional[WindowRun] = None
    batch: Any = None
    finishes: bool = False
    resume: bool = False


class EpochState:
    """One epoch of the training loop, shared by its loop and the placer; the loop writes it at boundaries only."""

    def __init__(self, inner: Iterator[Any], limit: int, made: float) -> None:
        self.inner = inner  # the loader's own iterator for this pass, made at the wrapper's iter()
        self.inner_next: Callable[[], Any] = inner.__next__
        self.limit = limit  # the pass's batches, as far as known (the loader's len(); -1: unknown)
        self.made = made  # the clock when the pass was made (its start-up runs from here)
        self.handed = 0  # batches handed out in this epoch
        self.pending: Any = NO_BATCH  # a batch of this pass fetched and not handed out yet
        # The placer's: batches of the pass that cached hand-outs took the place of, not yet taken from it
        # (taken before the next real hand-out, so that the pass is consumed as the plain loop consumes it),
        # and where the running cached segment began (-1: the running segment hands out real batches).
        self.owed = 0
        self.cached_from = -1
        self.exhausted = False  # the pass ended (StopIteration)
        self.short = 0  # the placer's: hand-outs past the pass's end (a cached stretch ran beyond it)
        self.closed = False  # the loop let go of the iterator
        self.role = 0  # the placer's: 0 undecided, 1 the loop's epoch, 2 a side iterator (a peek)
        self.index = 0  # the placer's: which epoch of the benchmark this is (1 = the first)
        self.queue_ready = False  # the loader's ready batches were taken since the queue last filled
        self.settled = False  # the placer's: the pass's first steps (its workers' start) went by untimed
        self.side_from = 0  # the placer's: a side iterator's note of the loop's progress
        self.window: Optional[WindowRun] = None  # the window whose segment runs now, if any
        # The wrapper, kept alive while the epoch is out: a loop over a temporary wrapper
        # (``for x in Wrapper(...)``) must not free it, and with it its workers, part-way.
        self.holder: Any = None


class Placer(Protocol):
    """The session side of an epoch: chooses each segment, and hears how the epoch ended."""

    def segment(self, epoch: EpochState) -> Segment: ...

    def closed(self, epoch: EpochState, segment: Optional[Segment], count: int) -> None: ...

    def failed(self, epoch: EpochState, segment: Segment, error: BaseException) -> None: ...


@dataclasses.dataclass(frozen=True)
class EpochArgs:
    state: EpochState
    placer: Placer
    clock: Clock


def _move(clock: Clock, pauses: Pauses, period: int, count: int, *series: Union[Stamps, Counts]) -> None:
    """At a chunk's end: flush each series, the time it takes recorded as benchy's own in ``period``."""
    start = clock()
    for values in series:
        values.flush(count)
    pauses.append((period, clock() - start))


def _hooks(ranges: Any) -> Tuple[Any, Any, Any, Any]:
    if ranges is None:
        return None, None, None, None
    return ranges.push, ranges.pop, ranges.step, ranges.fetch


def _close(ranges: Any, depth: int) -> int:
    for _ in range(depth):
        ranges.pop()
    return 0


def _following(current: int, freq: int, n: int) -> int:
    following = current + freq
    return following if following < n else -1


def io_trial(args: IOArgs) -> TrialResult:
    """Drain ``spec.nbatches`` batches from the source alone (no training step)."""
    spec, source, counter, clock, sync = args.spec, args.source, args.counter, args.clock, args.sync
    report, freq, begin, constant, drain, ranges = args.report, args.freq, args.begin, args.constant, args.drain, args.ranges
    nvtx = ranges is not None
    push, pop, _, fetch_attr = _hooks(ranges)
    depth = 0  # NVTX ranges open
    n = spec.nbatches
    stamps = Stamps(n)
    each = constant is None
    sizes = size_buffer(n, constant)  # sizes[k]: the batch received at stamps[k + 1]
    sbuf, zbuf, chunk = stamps.buf, sizes.buf, len(stamps.buf)
    pauses: Pauses = []
    next_report = freq if (report is not None and 0 < freq < n) else -1  # the first step that reports (-1: none)
    began = -1  # the fetch whose batch was the first of the running pass, when it began in this trial
    crossed: List[int] = []  # the stamps whose batch was a new pass's first (its period holds the pass's start-up)
    try:
        if nvtx:
            push(ranges.trial(spec))
            depth = 1
        # Before the fetch the clock starts after: the workers make nothing ahead while it runs (the sampler's baseline
        # takes milliseconds with many workers: a trial begun after it started on a part of a round made meanwhile).
        (begin or sync)()
        if drain is not None:
            drain()
        if nvtx:
            fetch_attr.payload = 0
            push(fetch_attr)
            depth = 2
        batch = source.fetch()
        nxt = source.next_function()
        if nvtx:
            pop()
            depth = 1
        stamps.start(clock())
        for c0 in range(1, n + 1, chunk):  # stamp c0 + k is buf[k]; size c0 - 1 + k is zbuf[k]
            m = min(chunk, n + 1 - c0)
            rk = next_report - c0
            for k in range(m):
                if nvtx:
                    fetch_attr.payload = c0 + k
                    push(fetch_attr)
                    depth = 2
                try:
                    batch = nxt()
                except StopIteration:
                    if not each and c0 + k >= 2:
                        sizes.set(c0 + k - 2, counter(batch))  # it ended its pass
                    if began >= 0:
                        source.pass_length(c0 + k - began)  # a whole pass, seen in this trial
                    began = c0 + k
                    crossed.append(began)
                    nxt, batch = source.new_pass()
                if nvtx:
                    pop()
                    depth = 1
                if each:
                    zbuf[k] = counter(batch)
                sbuf[k] = clock()
                if k == rk:  # the periodic line: its time, from this stamp on, is taken out of the trial
                    next_report = _following(next_report, freq, n)
                    rk = next_report - c0
                    report(spec, c0 + k, stamps, sizes, pauses)  # type: ignore[misc]
            _move(clock, pauses, min(c0 + m, n) - 1, m, stamps, sizes)
        sync()
        stamps.stop(n, clock())  # in place of the last hand-out's stamp: the device sync is the trial's
        if not each:
            sizes.set(n - 1, counter(batch))  # whether it ends its pass shows only in the next trial
        source.keep(batch)
    finally:
        depth = _close(ranges, depth)
    return build_result(spec, stamps, sizes, pauses, drop=_left_out(crossed, n, spec.cycle))


def _left_out(crossed: List[int], n: int, cycle: int) -> List[int]:
    """An IO trial's periods left out: each that holds a new pass's start-up, and each stretch's part of a round."""
    if not crossed:
        return []
    drop: List[int] = []
    ends: List[int] = []
    start = 0
    for stamp in crossed + [n + 1]:
        end = min(stamp - 1, n)  # the period that ends at this stamp holds the start-up
        drop.extend(part_round(start, end, cycle))
        if end < n:
            ends.append(end)
        start = end + 1
    if len(set(drop + ends)) >= n:  # passes shorter than a round (their length unknown ahead): period by period
        return ends
    return drop + ends


def epoch_loop(args: EpochArgs) -> Generator[Any, None, None]:
    """The generator the training loop gets for one epoch: the segments its placer chooses, one after another."""
    ep, placer, clock = args.state, args.placer, args.clock
    decide = placer.segment
    inner_next = ep.inner_next
    handed = ep.handed
    seg: Optional[Segment] = None
    k = 0  # hand-outs of the running PLAIN or CACHED segment (a window's are in its series)
    ranges: Any = None  # the running window's NVTX ranges, and how many of them are open
    depth = 0
    try:
        while True:
            ep.handed = handed
            seg = None
            seg = decide(ep)  # benchy's own choice: what it raises is its own, not the loader's
            kind = seg.kind
            k = 0
            if kind == END:
                return
            if kind == PLAIN:
                count = seg.steps
                if count < 0 and ep.pending is NO_BATCH:
                    yield from ep.inner  # the rest of the pass, as the loader gives it
                    ep.exhausted = True
                    continue
                if count == 0:
                    continue
                if count < 0:
                    count = sys.maxsize
                batch, ep.pending = ep.pending, NO_BATCH
                if batch is NO_BATCH:
                    try:
                        batch = inner_next()
                    except StopIteration:
                        ep.exhausted = True
                        continue
                while True:
                    k += 1
                    handed += 1
                    yield batch
                    if k >= count:
                        break
                    try:
                        batch = inner_next()
                    except StopIteration:
                        ep.exhausted = True
                        break
                continue
            if kind == CACHED:
                batch = seg.batch
                for _ in range(seg.steps):
                    k += 1
                    handed += 1
                    yield batch
                continue
            w = seg.window
            assert w is not None
            a = w.args
            stamps, sizes, pauses = w.stamps, w.sizes, w.pauses
            sbuf, chunk = stamps.buf, len(stamps.buf)
            report, freq, n = a.report, a.freq, w.n
            ranges = a.ranges
            nvtx = ranges is not None
            push, pop, step_attr, fetch_attr = _hooks(ranges)
            count = seg.steps
            base = stamps.done
            end = base + count
            next_report = w.next_report
            if kind == SYNTHETIC:
                batch = seg.batch
                if nvtx:
                    push(ranges.trial(a.spec))
                    depth = 1
                (a.sync if seg.resume else a.begin)()
                for c0 in range(base, end, chunk):  # stamp c0 + k is buf[k]
                    m = min(chunk, end - c0)
                    rk = next_report - c0
                    for k in range(m):
                        sbuf[k] = clock()
                        if k == rk:  # the periodic line: its time, from this stamp on, is taken out of the trial
                            next_report = _following(next_report, freq, n)
                            rk = next_report - c0
                            report(w, c0 + k)  # type: ignore[misc]
                        if nvtx:
                            step_attr.payload = c0 + k
                            push(step_attr)
                            depth = 2
                        yield batch
                        if nvtx:
                            pop()
                            depth = 1
                    _move(clock, pauses, c0 + m - 1, m, stamps)
                handed += count
                w.next_report = next_report
                if seg.finishes:
                    a.sync()
                    w.finish_at = clock()
                depth = _close(ranges, depth)
                continue
            # FULL
            abuf, zbuf = stamps.asks, sizes.buf
            assert abuf is not None
            counter, each, gaps = a.counter, a.constant is None, w.gaps
            if nvtx:
                push(ranges.trial(a.spec))
                depth = 1
            batch, ep.pending = ep.pending, NO_BATCH
            # Before the fetch the clock starts after, where there is one: the workers make nothing ahead meanwhile.
            (a.sync if seg.resume else a.begin)()
            if batch is NO_BATCH:
                if nvtx:
                    fetch_attr.payload = base
                    push(fetch_attr)
                    depth = 2
                try:
                    batch = inner_next()
                except StopIteration:
                    ep.exhausted = True
                    depth = _close(ranges, depth)
                    continue
                if nvtx:
                    pop()
                    depth = 1
            for c0 in range(base, end, chunk):  # batch c0 + k: its stamp, ask and size are buf[k]
                m = min(chunk, end - c0)
                rk = next_report - c0
                for k in range(m):
                    if each:
                        zbuf[k] = counter(batch)
                    sbuf[k] = clock()
                    if k == rk:  # the periodic line: its time, from this stamp on, is taken out of the trial
                        next_report = _following(next_report, freq, n)
                        rk = next_report - c0
                        report(w, c0 + k)  # type: ignore[misc]
                    if nvtx:
                        step_attr.payload = c0 + k
                        push(step_attr)
                        depth = 2
                    yield batch
                    abuf[k] = clock()
                    if nvtx:
                        pop()
                        fetch_attr.payload = c0 + k + 1
                        push(fetch_attr)
                    # After the step this fetches the next batch, so each period holds a fetch as well
                    # as a step; after the window's last step, the batch is the epoch's next one.
                    try:
                        batch = inner_next()
                    except StopIteration:
                        if not each:
                            sizes.set(c0 + k, counter(batch))  # it ended its pass
                        batch = NO_BATCH
                        ep.exhausted = True
                        m = k + 1
                        if nvtx:
                            pop()
                            depth = 1
                        break
                    if nvtx:
                        pop()
                        depth = 1
                _move(clock, gaps, c0 + m - 1, m, stamps, sizes)
                if batch is NO_BATCH:
                    break
            done = stamps.done - base
            handed += done
            w.next_report = next_report
            if seg.finishes and done == count and batch is not NO_BATCH:  # a period ended by the pass's end holds
                w.fetched = clock()  # no fetch: left out with the stretch's last, and the window goes on
                a.sync()
                w.finish_at = clock()
            ep.pending = batch
            depth = _close(ranges, depth)
    except GeneratorExit:
        # The loop let go of the iterator (a break, a temporary one for a peek, one it replaced): a
        # batch yielded and never returned counts as handed out (the loop held it).
        depth = _close(ranges, depth)
        ep.handed = handed  # a window's running segment: its series tell how far it went
        placer.closed(ep, seg, k)
        raise
    except BaseException as err:
        depth = _close(ranges, depth)
        if seg is not None:  # the loader raised in a segment (an error in a choice is benchy's own)
            ep.handed = handed
            placer.failed(ep, seg, err)
        raise


def watched_pass(
    inner: Iterator[Any], clock: Clock, done: Callable[[int, float, float], None], length: Optional[int] = None
) -> Generator[Any, None, None]:
    """A pass of the loop after the schedule, as the loader gives it, with the watch's sums (core.watch): its first
    batch untimed (the loader's start-up), then the steps' time and their time in ``next()``; ``done(steps, seconds,
    wait)`` once, when the loop asks for the pass's last batch where its ``length`` is known (a loop that counts its
    steps, as Lightning's does, never asks past it: the last step, whose end no ask marks, is left out), else at the
    pass's end. A pass the loop leaves part-way is not an epoch, and tells nothing."""
    inner_next = inner.__next__
    try:
        batch = inner_next()
    except StopIteration:
        return
    yield batch
    start = t0 = clock()
    steps, wait = 0, 0.0
    last = length - 2 if length is not None and length >= 3 else -1  # the steps before the ask for the last batch
    while True:
        if steps == last:
            done(steps, t0 - start, wait)
        try:
            batch = inner_next()
        except StopIteration:
            break
        t1 = clock()
        wait += t1 - t0
        steps += 1
        yield batch
        t0 = clock()
    if steps < last or last < 0:
        done(steps, t0 - start, wait)
