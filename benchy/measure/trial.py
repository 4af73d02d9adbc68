"""The hot loops: the IO trial over benchy's own batches, and the loop's epoch with its windows
(no printing, no torch import).

**IO** (:func:`io_trial`) drains ``n`` batches from a batch source by itself: from receiving one
batch to receiving ``n`` more; the ``n`` received inside the window are counted. Where a pass ends inside
it, the period that holds the next pass's start-up (its ``iter()``, its workers' first batches) is left out
(the loader's start-up is measured on its own), and so is the part of a round of the loader's workers
(``spec.cycle``) that each stretch holds past its whole rounds.

**An epoch** (:func:`epoch_loop`) is what the training loop iterates: one per ``iter()`` of a
wrapper, over a pass of the loader made at that ``iter()``, as the plain loader makes it. It hands
out *segments*, each chosen by the session (the :class:`Machine`) at a boundary: plain batches, the
cached batch untimed (the FLOPs' counted step), or a stretch of a SYNTHETIC or FULL *window*
(:mod:`benchy.measure.window`). Within a window, ``stamps[i]`` is when hand-out ``i`` was made, so
a period (``stamps[i]`` to ``stamps[i+1]``) holds one step and, in FULL, one fetch:

* SYNTHETIC hands out the one cached batch; the loader is not asked for anything (its workers
  finish what they had queued and wait). The clock stops when the loop asks for the batch after
  the window's last.
* FULL hands out the epoch's own batches; after each step it fetches the next, so the window's last
  period holds a fetch too, and that batch is handed out next (it is the epoch's next batch).

The epoch ends where the loader's pass ends: a cached hand-out takes the place of one batch of the
pass, which the machine takes from the pass (and drops) before the next real hand-out, so every epoch
has the pass's own number of steps and consumes it as the plain loop does.

Everything else (device sync, the optional barrier, statistics, printing, collectives, the choice
of the next segment) happens at segment boundaries; a periodic line runs every ``report_freq``
steps and its own duration is measured and taken out of the window.

Each loop is written once, annotated with NVTX ranges (one per trial segment, one per step while
the loop holds the batch, one per fetch, the index as a payload); the lines marked ``# nvtx`` are
its annotations. The plain variant, used whenever no tool such as Nsight Systems is attached, is
built from the same source at import with those lines made ``pass`` (which compiles to nothing),
so the two cannot drift and the plain loop pays nothing for them. Every fake-clock test runs over
both (``tests/measure/test_trial.py``). Each loop takes one frozen value of its arguments, bound to
locals on its first lines.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import textwrap
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Protocol, Tuple, Union

from ..core.results import TrialResult
from ..core.schedule import TrialSpec
from .source import Source
from .stamps import Counts, Pauses, Stamps, build_result, part_round, size_buffer
from .window import WindowRun

__all__ = [
    "CACHED",
    "END",
    "FULL",
    "NO_BATCH",
    "PLAIN",
    "SYNTHETIC",
    "EpochArgs",
    "EpochState",
    "IOArgs",
    "Machine",
    "Segment",
    "epoch_loop",
    "io_trial",
    "loop_variant",
]

Clock = Callable[[], float]
Counter = Callable[[Any], int]
NO_BATCH: Any = object()  # no batch pending

# Segment kinds: what the next stretch of an epoch hands out.
END, PLAIN, CACHED, SYNTHETIC, FULL = 0, 1, 2, 3, 4


@dataclasses.dataclass(frozen=True)
class IOArgs:
    """One IO trial's arguments. ``constant``: every batch but the last of a pass holds this many
    samples (a DataLoader's batch sampler with the default collate), so only those last batches are
    counted; a pass's last batch shows itself by the StopIteration that follows it. ``ranges``: the
    NVTX ranges (:func:`~benchy.measure.profiling.nvtx_ranges`) while a tool is attached, else None. ``drain``:
    run last before the fetch the clock starts after (the workers' ready batches taken, untimed)."""

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
    """The next stretch of an epoch, as the machine decided it at a boundary.

    ``steps``: hand-outs (-1: until the epoch ends; PLAIN only); ``window``: the SYNTHETIC or FULL
    window it continues; ``batch``: the cached batch (CACHED, SYNTHETIC); ``finishes``: running all
    ``steps`` finishes the window (its clock stops after the last); ``resume``: the window ran in an
    earlier segment (only a device sync before the first stamp, not the window's ``begin``);
    ``delegate``: an epoch loop of another variant that runs this segment (a window whose ranges the
    running variant does not push)."""

    kind: int
    steps: int = -1
    window: Optional[WindowRun] = None
    batch: Any = None
    finishes: bool = False
    resume: bool = False
    delegate: Optional[Iterator[Any]] = None


class EpochState:
    """One epoch of the training loop (one ``iter()`` of a wrapper), shared by its loop and the
    machine; the loop writes it at segment boundaries only."""

    __slots__ = (
        "__weakref__",
        "annotated",
        "cached_from",
        "closed",
        "exhausted",
        "handed",
        "holder",
        "index",
        "inner",
        "inner_next",
        "limit",
        "made",
        "owed",
        "pending",
        "queue_ready",
        "role",
        "settled",
        "short",
        "side_from",
        "window",
    )

    def __init__(self, inner: Iterator[Any], limit: int, made: float, annotated: bool) -> None:
        self.inner = inner  # the loader's own iterator for this pass, made at the wrapper's iter()
        self.inner_next: Callable[[], Any] = inner.__next__
        self.limit = limit  # the pass's batches, as far as known (the loader's len(); -1: unknown)
        self.made = made  # the clock when the pass was made (its start-up runs from here)
        self.annotated = annotated  # the loop pushes NVTX ranges (else a window with ranges is delegated)
        self.handed = 0  # batches handed out in this epoch
        self.pending: Any = NO_BATCH  # a batch of this pass fetched and not handed out yet
        # The machine's: batches of the pass that cached hand-outs took the place of, not yet taken from it
        # (taken before the next real hand-out, so that the pass is consumed as the plain loop consumes it),
        # and where the running cached segment began (-1: the running segment hands out real batches).
        self.owed = 0
        self.cached_from = -1
        self.exhausted = False  # the pass ended (StopIteration)
        self.short = 0  # the machine's: hand-outs past the pass's end (a cached stretch ran beyond it)
        self.closed = False  # the loop let go of the iterator
        self.role = 0  # the machine's: 0 undecided, 1 the loop's epoch, 2 a side iterator (a peek)
        self.index = 0  # the machine's: which epoch of the benchmark this is (1 = the first)
        self.queue_ready = False  # the loader's ready batches were taken since the queue last filled
        self.settled = False  # the machine's: the pass's first steps (its workers' start) went by untimed
        self.side_from = 0  # the machine's: a side iterator's note of the loop's progress
        self.window: Optional[WindowRun] = None  # the window whose segment runs now, if any
        # The wrapper, kept alive while the epoch is out: a loop over a temporary wrapper
        # (``for x in Wrapper(...)``) must not free it, and with it its workers, part-way.
        self.holder: Any = None


class Machine(Protocol):
    """The session side of an epoch: chooses each segment, and hears how the epoch ended."""

    def segment(self, epoch: EpochState) -> Segment: ...

    def closed(self, epoch: EpochState, segment: Optional[Segment], count: int) -> None: ...

    def failed(self, epoch: EpochState, segment: Segment, error: BaseException) -> None: ...


@dataclasses.dataclass(frozen=True)
class EpochArgs:
    """One epoch loop's arguments."""

    state: EpochState
    machine: Machine
    clock: Clock


def _move(clock: Clock, pauses: Pauses, period: int, count: int, *series: Union[Stamps, Counts]) -> None:
    """At a chunk's end: move the loop's ``count`` values of each series into its array, the time
    it takes recorded as benchy's own in ``period`` (taken out of the trial)."""
    start = clock()
    for values in series:
        values.flush(count)
    pauses.append((period, clock() - start))


def _close_ranges(pop: Callable[[], None], depth: int, keep: int) -> int:
    """Pop NVTX ranges until ``keep`` remain open; the new depth."""
    while depth > keep:
        pop()
        depth -= 1
    return depth


def _first_report(report: Any, freq: int, n: int) -> int:
    """Index of the first step that reports, or -1 (never)."""
    return freq if (report is not None and 0 < freq < n) else -1


def _following(current: int, freq: int, n: int) -> int:
    """The next reporting step after ``current``; -1 once it would reach the trial's end."""
    following = current + freq
    return following if following < n else -1


class _NoRanges:
    """Ranges that record nothing (the annotated loop running a window without a tool attached)."""

    def __init__(self) -> None:
        self.step: Any = _Payload()
        self.fetch: Any = _Payload()

    def push(self, attr: Any) -> None:
        return None

    def pop(self) -> None:
        return None

    def trial(self, spec: TrialSpec) -> Any:
        return None


class _Payload:
    payload = 0


NO_RANGES = _NoRanges()


# --- the loops, each written once (annotated; the plain variants are derived below) --------------


def _io_annotated(args: IOArgs) -> TrialResult:
    spec, source, counter, clock, sync = args.spec, args.source, args.counter, args.clock, args.sync
    report, freq, begin, constant, drain = args.report, args.freq, args.begin, args.constant, args.drain
    ranges = args.ranges or NO_RANGES  # nvtx
    n = spec.nbatches
    stamps = Stamps(n)
    each = constant is None
    sizes = size_buffer(n, constant)  # sizes[k]: the batch received at stamps[k + 1]
    sbuf, zbuf, chunk = stamps.buf, sizes.buf, len(stamps.buf)
    pauses: Pauses = []
    next_report = _first_report(report, freq, n)
    began = -1  # the fetch whose batch was the first of the running pass, when it began in this trial
    crossed: List[int] = []  # the stamps whose batch was a new pass's first (its period holds the pass's start-up)
    push, pop, fetch_attr = ranges.push, ranges.pop, ranges.fetch  # nvtx
    depth = 0  # nvtx
    try:
        push(ranges.trial(spec))  # nvtx
        depth = 1  # nvtx
        # Before the fetch the clock starts after: the workers make nothing ahead while it runs (the sampler's baseline
        # takes milliseconds with many workers: a trial begun after it started on a part of a round made meanwhile).
        (begin or sync)()
        if drain is not None:
            drain()
        fetch_attr.payload = 0  # nvtx
        push(fetch_attr)  # nvtx
        depth = 2  # nvtx
        batch = source.fetch()
        nxt = source.next_function()
        pop()  # nvtx
        depth = 1  # nvtx
        stamps.start(clock())
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
                    if began >= 0:
                        source.pass_length(c0 + k - began)  # a whole pass, seen in this trial
                    began = c0 + k
                    crossed.append(began)
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
        stamps.stop(n, clock())  # in place of the last hand-out's stamp: the device sync is the trial's
        if not each:
            sizes.set(n - 1, counter(batch))  # whether it ends its pass shows only in the next trial
        source.keep(batch)
    finally:
        depth = _close_ranges(pop, depth, 0)  # nvtx
    return build_result(spec, stamps, sizes, pauses, drop=_left_out(crossed, n, spec.cycle))


def _left_out(crossed: List[int], n: int, cycle: int) -> List[int]:
    """An IO trial's periods left out: each that holds a new pass's start-up (it ends at a stamp in ``crossed``),
    and each stretch's part of a round past its whole rounds (the last stretch's too: it may begin part-way)."""
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


def _epoch_annotated(args: EpochArgs) -> Generator[Any, None, None]:
    ep, machine, clock = args.state, args.machine, args.clock
    decide = machine.segment
    inner_next = ep.inner_next
    handed = ep.handed
    seg: Optional[Segment] = None
    k = 0  # hand-outs of the running PLAIN or CACHED segment (a window's are in its series)
    pop = NO_RANGES.pop  # nvtx
    depth = 0  # nvtx
    try:
        while True:
            ep.handed = handed
            seg = None
            seg = decide(ep)  # benchy's own choice: what it raises is its own, not the loader's
            kind = seg.kind
            k = 0
            if kind == END:
                return
            if seg.delegate is not None:  # a segment the other variant runs
                yield from seg.delegate
                handed = ep.handed
                continue
            if kind == PLAIN:
                count = seg.steps
                if count < 0 and ep.pending is NO_BATCH:
                    yield from ep.inner  # the rest of the pass, as the loader gives it
                    ep.exhausted = True
                    continue
                if count < 0:
                    count = sys.maxsize
                batch = ep.pending
                ep.pending = NO_BATCH
                if count <= 0:
                    ep.pending = batch
                    continue
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
            ranges = a.ranges or NO_RANGES  # nvtx
            push, pop, step_attr, fetch_attr = ranges.push, ranges.pop, ranges.step, ranges.fetch  # nvtx
            count = seg.steps
            base = stamps.done
            end = base + count
            next_report = w.next_report
            if kind == SYNTHETIC:
                batch = seg.batch
                push(ranges.trial(a.spec))  # nvtx
                depth = 1  # nvtx
                (a.sync if seg.resume else a.begin)()
                for c0 in range(base, end, chunk):  # stamp c0 + k is buf[k]
                    m = min(chunk, end - c0)
                    rk = next_report - c0
                    for k in range(m):
                        sbuf[k] = clock()
                        if k == rk:  # report: the line's time, from this stamp on, is taken out of the trial
                            next_report = _following(next_report, freq, n)
                            rk = next_report - c0
                            report(w, c0 + k)  # type: ignore[misc]
                        step_attr.payload = c0 + k  # nvtx
                        push(step_attr)  # nvtx
                        depth = 2  # nvtx
                        yield batch
                        pop()  # nvtx
                        depth = 1  # nvtx
                    _move(clock, pauses, c0 + m - 1, m, stamps)
                handed += count
                w.next_report = next_report
                if seg.finishes:
                    a.sync()
                    w.finish_at = clock()
                depth = _close_ranges(pop, depth, 0)  # nvtx
                continue
            # FULL
            abuf, zbuf = stamps.asks, sizes.buf
            assert abuf is not None
            counter, each, gaps = a.counter, a.constant is None, w.gaps
            push(ranges.trial(a.spec))  # nvtx
            depth = 1  # nvtx
            batch = ep.pending
            ep.pending = NO_BATCH
            # Before the fetch the clock starts after, where there is one: the workers make nothing ahead meanwhile.
            (a.sync if seg.resume else a.begin)()
            if batch is NO_BATCH:
                fetch_attr.payload = base  # nvtx
                push(fetch_attr)  # nvtx
                depth = 2  # nvtx
                try:
                    batch = inner_next()
                except StopIteration:
                    ep.exhausted = True
                    depth = _close_ranges(pop, depth, 0)  # nvtx
                    continue
                pop()  # nvtx
                depth = 1  # nvtx
            for c0 in range(base, end, chunk):  # batch c0 + k: its stamp, ask and size are buf[k]
                m = min(chunk, end - c0)
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
                        report(w, c0 + k)  # type: ignore[misc]
                    step_attr.payload = c0 + k  # nvtx
                    push(step_attr)  # nvtx
                    depth = 2  # nvtx
                    yield batch
                    abuf[k] = clock()
                    pop()  # nvtx
                    fetch_attr.payload = c0 + k + 1  # nvtx
                    push(fetch_attr)  # nvtx
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
                        pop()  # nvtx
                        depth = 1  # nvtx
                        break
                    pop()  # nvtx
                    depth = 1  # nvtx
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
            depth = _close_ranges(pop, depth, 0)  # nvtx
    except GeneratorExit:
        # The loop let go of the iterator (a break, a temporary one for a peek, one it replaced): a
        # batch yielded and never returned counts as handed out (the loop held it).
        depth = _close_ranges(pop, depth, 0)  # nvtx
        ep.handed = handed  # a window's running segment: its series tell how far it went
        machine.closed(ep, seg, k)
        raise
    except BaseException as err:
        depth = _close_ranges(pop, depth, 0)  # nvtx
        if seg is not None:  # the loader raised in a segment (an error in a choice is benchy's own)
            ep.handed = handed
            machine.failed(ep, seg, err)
        raise
    finally:
        depth = _close_ranges(pop, depth, 0)  # nvtx


_MARK = "# nvtx"
_COUNT_MARK = "# count"
_REPORT_MARK = "# report:"
# What an inline count may raise on a batch of another structure: then the counter's call.
_MISS = (AttributeError, IndexError, KeyError, TypeError)


def _variant(annotated: Callable[..., Any], nvtx: bool, count: Optional[str], report: bool = True) -> Callable[..., Any]:
    """A loop compiled from ``annotated``'s source: without NVTX, every line marked ``# nvtx``
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
    name = (
        annotated.__name__.replace("_annotated", "_plain" if not nvtx else "_annotated")
        + ("_inline" if count is not None else "")
        + ("" if report else "_quiet")
    )
    code = compile(
        "\n".join(kept).replace(f"def {annotated.__name__}(", f"def {name}(", 1) + "\n",
        inspect.getsourcefile(annotated) or "<benchy.measure.trial>",
        "exec",
    )
    namespace: Dict[str, Any] = {}
    exec(code, annotated.__globals__, namespace)
    made: Callable[..., Any] = namespace[name]
    made.__qualname__ = name
    return made


_SOURCE_READABLE = True
_VARIANTS: Dict[Tuple[str, bool, Optional[str], bool], Callable[..., Any]] = {}


def _loop(annotated: Callable[..., Any], nvtx: bool, count: Optional[str] = None, report: bool = True) -> Callable[..., Any]:
    """The loop to run: ``annotated`` itself (NVTX, no inline count, periodic lines), else its
    compiled variant (made once per combination). Where the package's source cannot be read (a
    zipped or compiled-only install) the annotated loop runs (with no-op ranges when NVTX is off)."""
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
    return annotated


def loop_variant(kind: str, nvtx: bool, count: Optional[str] = None, report: bool = True) -> Callable[..., Any]:
    """The compiled loop ``kind`` (``"IO"`` or ``"epoch"``) for these settings (what tests compare)."""
    return _loop(_io_annotated if kind == "IO" else _epoch_annotated, nvtx, count, report)


_io_plain = _loop(_io_annotated, nvtx=False)
_epoch_plain = _loop(_epoch_annotated, nvtx=False)


def _inline(counter: Counter) -> Optional[str]:
    return getattr(counter, "inline", None)


# --- the entry points ---------------------------------------------------------------------------


def io_trial(args: IOArgs) -> TrialResult:
    """Drain ``spec.nbatches`` batches from the source alone (no training step)."""
    run = _loop(
        _io_annotated,
        args.ranges is not None,
        _inline(args.counter),
        _first_report(args.report, args.freq, args.spec.nbatches) >= 0,
    )
    result: TrialResult = run(args)
    return result


def epoch_loop(
    args: EpochArgs, counter: Optional[Counter], report: bool, nvtx: Optional[bool] = None
) -> Generator[Any, None, None]:
    """The generator the training loop gets for one epoch. ``counter``: the run's sample counter
    (compiled in place where it has an inline form); ``report``: periodic lines may be due (else
    their test compiles to nothing); ``nvtx``: the variant that pushes ranges (default: as
    ``args.state.annotated`` says)."""
    annotated = args.state.annotated if nvtx is None else nvtx
    run = _loop(_epoch_annotated, annotated, None if counter is None else _inline(counter), report)
    gen: Generator[Any, None, None] = run(args)
    return gen
