"""A SYNTHETIC or FULL trial as a window of steps in the training loop: what its segments recorded
(glue between the epoch loop of :mod:`benchy.measure.trial` and the result model; numpy, no torch).

A window measures ``n`` periods and may span epochs, one *segment* an epoch. A period that ends in another epoch
than it began holds the loop's work between epochs and the next pass's start-up: it is *left out*, and the window
takes one more step. So is the first period of a segment at an epoch's step 0, unless the loop is known not to fetch
ahead, and, in whole rounds, the part of a round a stretch holds past them: no stretch's time depends on where in
the workers' rhythm it began or ended.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, List, NamedTuple, Optional, Tuple

import numpy as np

from ..core.results import TrialResult, WindowSpan
from ..core.schedule import Mode, TrialSpec
from .stamps import LOOKAHEAD_SHARE, Counts, Pauses, Stamps, build_result, compact, part_round, size_buffer

# Hand-outs the window's series hold beyond ``n`` when it starts; more are added when it spans epochs.
_SLACK = 8


@dataclasses.dataclass(frozen=True)
class WindowArgs:
    """What a window's segments need, fixed for the whole window (bound to locals once per segment)."""

    spec: TrialSpec
    counter: Callable[[Any], int]  # samples of a batch (FULL counts every batch unless ``constant``)
    constant: Optional[int]  # every batch but a pass's last holds this many samples (None: count each)
    clock: Callable[[], float]
    sync: Callable[[], None]  # the device sync at the window's start, end and each resume
    begin: Callable[[], None]  # just before the first stamp: sync, the ranks' barrier, the sampler's baseline
    report: Optional[Callable[[WindowRun, int], None]]  # the periodic line, after stamp ``i``
    freq: int  # report_freq
    ranges: Any  # NVTX ranges (or the profiler's), None when nothing is attached


class Placed(NamedTuple):
    """Where one segment of a window ran (``epoch`` from 1, ``step`` from 0)."""

    epoch: int
    step: int
    handed: int


class WindowRun:
    """One window while it runs: its series, its segments and the periods left out."""

    def __init__(self, args: WindowArgs) -> None:
        spec = args.spec
        self.args = args
        self.spec = spec
        self.n = spec.nbatches
        capacity = self.n + _SLACK
        self.stamps = Stamps(capacity, split=spec.mode is Mode.FULL)  # FULL: and when the loop asked for the next batch
        self.sizes: Counts = size_buffer(capacity, args.constant)
        self.pauses: Pauses = []  # benchy's own time inside a period (periodic lines, series moves)
        self.gaps: Pauses = []  # ... inside the wait part of a FULL period
        self.left_out: List[int] = []  # periods not measured (segment ends; first periods at an epoch start)
        self.placed: List[Placed] = []
        # (epoch, step) of the untimed steps on the cached batch before its first stretch (after a fork), if any
        self.settled_from: Optional[Tuple[int, int]] = None
        self.started = False  # the first segment ran its begin()
        self.begun = False  # its begin() ran before a FULL window's lead-in (the first segment then only syncs)
        self.done = False  # the clock stopped: the window has its ``n`` periods
        self.discarded = False  # restarted elsewhere (another iterator took the loop over): ignore
        # FULL: the batches the loader's workers may have made ahead while benchy paused the loop before it (its
        # lead-in hands them out, less those the pass's repay took at once); the queue's depth unless said otherwise.
        self.backlog = 1 << 30
        # The loop is known not to fetch a batch ahead: the first period of a segment at an epoch's start holds
        # its step, and is measured (else it is left out: it may hold no step at all).
        self.sound_first = False
        self.fetched: Optional[float] = None  # FULL: when the last fetch returned, before the closing sync
        self.finish_at: Optional[float] = None  # the clock's stop, taken by the segment that finished it
        self.next_report = args.freq if (args.report is not None and 0 < args.freq < self.n) else -1
        self._open: Optional[int] = None  # the running segment's first hand-out index

    @property
    def handed(self) -> int:
        """Hand-outs made so far (from the series: exact even when the loop left mid-segment)."""
        return self.stamps.written() if self._open is not None else self.stamps.done

    def constant_samples(self, samples: int) -> None:
        """Every hand-out of this window holds ``samples`` (SYNTHETIC: the cached batch)."""
        if self.stamps.done == 0 and self._open is None:
            self.sizes = size_buffer(len(self.sizes), samples)

    def open_count(self) -> int:
        return 0 if self._open is None else self.stamps.written() - self._open

    def restarted(self) -> WindowRun:
        """A new run of this window, from its first step (another iterator took the loop over part-way)."""
        again = WindowRun(self.args)
        again.sound_first = self.sound_first
        return again

    @property
    def measured(self) -> int:
        return self.stamps.done - len(self.left_out)

    def quota(self, step: int) -> int:
        """Hand-outs a segment beginning at ``step`` of its epoch needs to finish the window, if nothing interrupts it."""
        return self.n - self.measured + int(step == 0 and not self.sound_first)

    def open_segment(self, epoch: int, step: int, count: int) -> None:
        need = self.stamps.done + count + 1
        self.stamps.grow(need)
        self.sizes.grow(need)
        self._open = self.stamps.done
        self.placed.append(Placed(epoch, step, 0))

    def close_segment(self) -> bool:
        """The running segment ended: its values into the arrays. True: it finished the window."""
        first = self._open
        if first is None:
            return False
        self._open = None
        handed = self.stamps.written()
        self.stamps.settle(handed)
        self.sizes.settle(handed)
        finished = self.finish_at is not None
        if self.finish_at is not None:
            self.stamps.stop(handed, self.finish_at)  # the stop, after the last hand-out
            self.done = True
        count = handed - first
        epoch, step, _ = self.placed[-1]
        self.placed[-1] = Placed(epoch, step, count)
        if count == 0:
            self.placed.pop()
            if not self.placed:
                self.started = False  # its first segment ended before its first hand-out: begin() did not run
            return finished
        if step == 0 and not self.sound_first:
            self._leave_out(first)
        if not finished:
            self._leave_out(handed - 1)
            # Whole rounds only: the periods of this stretch past its last whole round are left out (the last one
            # that finishes the window runs whole rounds already: the window's length is whole rounds).
            begin = first + int(first in self.left_out)
            for period in part_round(begin, handed - 1, self.spec.cycle):
                self._leave_out(period)
        return finished

    def _leave_out(self, period: int) -> None:
        if period not in self.left_out:
            self.left_out.append(period)

    def fetches_ahead(self) -> Optional[bool]:
        """Whether the loop asks for batch k + 1 before it runs step k: a stretch that began an epoch then has a
        first period with no step in it, far below the median. None: no stretch began an epoch, or too few periods."""
        h = self.stamps.done
        if h < 3:
            return None
        firsts = [sum(q.handed for q in self.placed[:k]) for k, p in enumerate(self.placed) if p.step == 0 and p.handed > 1]
        dropped = sorted({k for k in self.left_out if 0 <= k < h})
        if not firsts or h - len(dropped) < 2:
            return None
        periods = np.array(np.frombuffer(self.stamps.periods, dtype=np.float32)[:h])  # 4 bytes a period, a moment
        for k, seconds in self.pauses:
            if 0 <= k < h:
                periods[k] -= seconds
        first = [float(periods[i]) for i in firsts]
        compact(periods, dropped, h)  # the periods measured, in place: the median's input
        median = float(np.median(periods[: h - len(dropped)], overwrite_input=True))
        return median > 0 and all(p < LOOKAHEAD_SHARE * median for p in first)

    def span(self) -> WindowSpan:
        """Where the window ran, for the JSON and the timeline."""
        first, last = self.placed[0], self.placed[-1]
        start = self.settled_from or (first.epoch, first.step)
        return WindowSpan(
            start_epoch=start[0],
            start_step=start[1],
            end_epoch=last.epoch,
            end_step=last.step + max(0, last.handed - 1),
            segments=len(self.placed),
            left_out=len(self.left_out),
        )

    def result(self) -> TrialResult:
        """The trial over its measured periods; it uses the series up: the last thing asked of a window."""
        result = build_result(
            self.spec,
            self.stamps,
            self.sizes,
            self.pauses,
            periods=self.stamps.done,
            fetched=self.fetched,
            gaps=self.gaps,
            drop=self.left_out,
        )
        return dataclasses.replace(result, window=self.span())
