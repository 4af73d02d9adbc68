"""One benchmark run: the window state machine (what the training loop's next batch is).

``iterate()`` is what a wrapper's ``__iter__`` returns. Its first call starts the benchmark: the
hidden IO trials (and the sweep, IO_H2D and the stage trials) run on passes of benchy's own, with
the user's random streams kept as they were (:mod:`benchy.measure.rng`). Each call then returns an
*epoch* (:func:`~benchy.measure.trial.epoch_loop`) over a new pass of the loader, made at that
``iter()`` as the plain loader makes it; once the schedule is over, the plain loader's own iterator.

At each boundary of the loop's epoch, :meth:`Session.segment` decides what comes next:

* the SYNTHETIC and FULL trials are *windows* of steps, back to back (the planner's order); a
  window may begin at any step and may span epochs (:mod:`benchy.measure.window`). The loop's epochs
  keep their own length: where the loader has a length and a cached batch took some of an epoch's
  steps, the epoch ends at that length; ``len()`` is never changed;
* before a FULL window (or its stretch in a new epoch) whose loader may hold ready batches, the loop
  takes that many real batches untimed (the *lead-in*), so that no window starts on free batches;
* the FLOPs are counted on one untimed step on the cached batch, before the first measured SYNTHETIC;
* IO trials that become due between windows (``ntrials: auto``) run there, hidden.

Which ``iter()`` is the loop's: the first to ask for a batch, and later each new one that asks
while the loop's current epoch has ended, reached its length, or was let go. One that asks while
the loop's epoch is still part-way and held (a peek, ``next(iter(loader))`` inside the loop) is a
*side* iterator: the plain loader serves it; if it goes on for :data:`LOOP_BATCHES` batches while
the loop's epoch does not move, it is the loop's after all and takes the window over.

What became of each trial is one :class:`~benchy.core.outcomes.Outcomes` value; what the session
has to say goes to the sink as events (:mod:`benchy.session.events`); everything that depends on
the rank is one :class:`~benchy.session.context.RunContext`; the endings (the schedule's end, the
script's exit, a signal) are :class:`~benchy.session.lifecycle.Lifecycle`'s. One benchmark at a
time per process: the first wrapper iterated runs it (see ``registry``).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
import weakref
from typing import Any, Callable, Iterator, List, Optional

from ..core.config import Config
from ..core.diagnostics import DIAGNOSTIC_WINDOWS, ContentionRun, StepParts
from ..core.exits import EXIT_INCOMPLETE
from ..core.outcomes import Interruption, Outcomes
from ..core.results import RunResults, ScheduleState, Snapshot, TrialResult, folded
from ..core.schedule import Mode, Schedule, TrialSpec
from ..core.startup import Startup, startup
from ..core.sweep import queue_depth
from ..measure.diagnostics import Drainer, StepHooks
from ..measure.flops import StepCounter
from ..measure.profiling import CudaProfilerApi, TorchRanges, global_rank
from ..measure.ranks import DistributedError, agree, combine
from ..measure.rng import kept
from ..measure.stages import Instrumented
from ..measure.trial import (
    CACHED,
    END,
    FULL,
    NO_BATCH,
    PLAIN,
    SYNTHETIC,
    EpochArgs,
    EpochState,
    Segment,
    epoch_loop,
)
from ..measure.window import WindowRun
from . import events as ev
from .console import Output
from .context import RunContext
from .lifecycle import Lifecycle
from .planner import Planner
from .registry import REGISTRY, Registry
from .side_trials import Sweeper, run_emulated, run_h2d, run_stages, run_sweep
from .sink import ResultSink
from .trials import NOTHING, OwnPasses, TrialRunner

__all__ = ["LOOP_BATCHES", "LoaderFacts", "Session"]

_NEW, _RUNNING, _DONE, _PLAIN = "new", "running", "done", "plain"
_UNDECIDED, _OWNER, _SIDE = 0, 1, 2

# A side iterator that hands out this many batches while the loop's epoch does not move is the loop's.
LOOP_BATCHES = 3


@dataclasses.dataclass(frozen=True)
class LoaderFacts:
    """What a wrapper knows of its loader, handed to its session (built by ``integrations.wrappers``)."""

    make_iterator: Callable[[], Iterator[Any]]  # the plain loader's iterator (a new pass, as the loop's iter())
    batch_size: Optional[int]  # counted when a batch holds nothing with a leading dimension
    kind: str = "loader"  # the wrapper's class name, for the output
    where: str = "<unknown>"  # file:line where the script built it
    queue_depth: int = 0  # batches its workers hold ready (workers x prefetch_factor)
    workers: int = 0  # num_workers (0: loads in the main process, or unknown)
    persistent: bool = False  # DataLoader(persistent_workers=True)
    length: Callable[[], Optional[int]] = lambda: None  # len() of the loader itself (None: it has none)
    batch_samples: Optional[int] = None  # samples in every batch but a pass's last, when guaranteed
    sweeper: Optional[Sweeper] = None  # makes the loader's variants for a sweep (BenchmarkDataLoader only)
    instrument: Optional[Callable[[], Instrumented]] = None  # an instrumented copy for the stage trials (DataLoaders)
    # benchy's own passes (IO trials), apart from the loop's; by default new passes of the loader itself.
    own: Optional[Callable[[], OwnPasses]] = None
    # The torch.Generator objects the loader draws from (kept through benchy's own passes).
    generators: Callable[[], List[Any]] = lambda: []
    # The wrapper itself, by a weak reference: the session holds it only while an epoch is out, so that
    # a loop over a temporary wrapper (``for x in Wrapper(...)``) keeps it, and a dropped wrapper is freed
    # with its workers as a plain DataLoader is.
    owner: Callable[[], Any] = lambda: None


class _Side:
    """A machine that runs one segment of an epoch in another variant of the loop, then hands back."""

    def __init__(self, session: Session, segment: Segment) -> None:
        self._session, self._segment = session, segment

    def segment(self, epoch: EpochState) -> Segment:
        found, self._segment = self._segment, Segment(END)
        return found

    def closed(self, epoch: EpochState, segment: Optional[Segment], count: int) -> None:
        self._session.closed(epoch, segment, count)

    def failed(self, epoch: EpochState, segment: Segment, error: BaseException) -> None:
        self._session.failed(epoch, segment, error)


class Session:
    """The state of one wrapper's benchmark."""

    def __init__(
        self,
        config: Config,
        loader: LoaderFacts,
        *,
        clock: Callable[[], float] = time.perf_counter,
        output: Optional[Output] = None,
        profiler_api: Any = CudaProfilerApi,
        registry: Registry = REGISTRY,
        exit: Callable[[int], Any] = sys.exit,
        h2d_copy: Optional[Callable[[Any], Any]] = None,
    ) -> None:
        self.config = config
        self.schedule = Schedule.from_config(config)
        self.planner = Planner(self.schedule)
        self.results = RunResults()
        self.outcomes = Outcomes()
        self.clock = clock
        self._loader = loader
        self._workers = loader.workers  # the sweep may change it (sweep_apply)
        self._h2d_copy = h2d_copy  # the IO_H2D copy (tests inject one; else the accelerator in use)
        own = loader.own() if loader.own is not None else OwnPasses(loader.make_iterator)
        self.runner = TrialRunner(
            config, own, loader.batch_size, clock, constant=loader.batch_samples, queue_depth=loader.queue_depth, say=self._say
        )
        self._output, self._profiler_api, self._exit = output, profiler_api, exit
        self._ctx: Optional[RunContext] = None
        self._state = _NEW
        self._pid = os.getpid()
        self._registry = registry
        self._record = registry.register(loader.kind, loader.where)
        self._record.session = weakref.ref(self)
        self._passes = 0  # the loop's iter() calls that took the epoch's role, peeks included
        self.steps = 0  # the loop's steps since then (its epochs' hand-outs, at their boundaries)
        self._owner: Optional[weakref.ReferenceType[EpochState]] = None
        self._window: Optional[WindowRun] = None  # the window that runs (part-way) now
        self._counting: Optional[StepCounter] = None  # the FLOPs' counted step, while it runs
        self._primed = False  # the untimed step before the counted one was handed out
        self._start_at = 0  # batches the loop had taken from its epoch when the benchmark began (benchy run)
        self._holder: Any = None  # the wrapper, kept alive while one of its epochs is out
        self.hidden: Optional[TrialSpec] = None  # the IO or side trial running now, if any
        self._side_said = False
        self._length: Optional[int] = None  # the loader's own batches per epoch, read at each iter()
        self._seen: Optional[int] = None  # without len(): the fewest batches of a pass the loop ran to its end
        self._whole = 0  # the loop's epochs that ran to their pass's end
        self._left_after: Optional[int] = None  # the most steps the loop took of an epoch it left part-way
        self._diagnostics: List[str] = list(self.schedule.diagnostics)  # diagnostic windows still to run
        self.diagnosing = False  # the counted schedule is over and the diagnostic windows run
        self._helper: Any = None  # what runs beside the running diagnostic window (measure.diagnostics)
        self.advised: Optional[int] = None  # the exit status benchy advises for CI, once the benchmark ended
        self.life = Lifecycle(self)

    # --- public -------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once the schedule is over, or when another loader is the benchmarked one."""
        return self._state in (_DONE, _PLAIN)

    @property
    def running(self) -> bool:
        return self._state == _RUNNING

    @property
    def benchmarked(self) -> bool:
        """True when this wrapper is the one benchmarked in its process (decided at first iter())."""
        return self._record.benchmarked

    @property
    def window(self) -> Optional[WindowRun]:
        """The window that runs now (None between windows)."""
        return self._window

    @property
    def ctx(self) -> RunContext:
        """This process's part in the run (this process alone until the run starts)."""
        if self._ctx is None:
            self._ctx = RunContext.local(
                self.config, self.schedule, output=self._output, profiler_api=self._profiler_api, exit=self._exit
            )
        return self._ctx

    @property
    def sink(self) -> ResultSink:
        return self.ctx.sink

    @property
    def record(self) -> Any:
        """This wrapper's entry in the registry (kind, where it was built, what became of it)."""
        return self._record

    @property
    def registry(self) -> Registry:
        return self._registry

    @property
    def pid(self) -> int:
        """The process the benchmark runs in (a forked child is not it)."""
        return self._pid

    @property
    def epoch_length(self) -> Optional[int]:
        """The loader's own batches per epoch, as read at the last ``iter()`` (None: no length)."""
        return self._length

    def advised_status(self) -> int:
        """The exit status benchy advises for CI: 0 or 3 once the schedule ended (see ``ResultSink``), else
        :data:`~benchy.core.exits.EXIT_INCOMPLETE` (the benchmark has not finished, or ended early)."""
        return EXIT_INCOMPLETE if self.advised is None else self.advised

    def steps_taken(self) -> int:
        """The loop's steps since the benchmark started (the running epoch's counted live)."""
        owner = self._current()
        return self.steps + (0 if owner is None else self._epoch_handed(owner))

    def stop(self) -> None:
        """The benchmark is over, whichever way: no window runs from here on."""
        self._state = _DONE
        self._record.finished = True
        if self._window is not None:
            self._window.discarded = True
        self._window = None
        self._stop_helper()

    def abandon_diagnostics(self, why: str) -> None:
        """The diagnostic windows end here, unfinished (the script ended during them): said in the results."""
        left = ([self._window.spec.label] if self._window is not None else []) + [f"{d}_1" for d in self._diagnostics]
        self._diagnostics = []
        if self._window is not None:
            self._window.discarded = True
            self._window = None
        self._stop_helper()
        if left:
            self.results = self.results.changed(
                diagnostics_skipped=(*self.results.diagnostics_skipped, f"{', '.join(left)}: {why}")
            )

    def lose(self, item: Interruption) -> None:
        """A trial that did not count: recorded and said (never raises)."""
        self._lose(item)

    def copied(self) -> bool:
        """A copy or pickle of the wrapper is being made: returns whether this benchmark is over
        (the copy is then the plain loader; otherwise it is a new wrapper that has measured nothing)."""
        self._record.copied = True
        return self.done

    def retire(self) -> None:
        """This wrapper is the plain loader for good (a copy of a wrapper whose benchmark is over)."""
        self._state = _PLAIN
        self._record.iterated = self._record.finished = True

    def iterate(self) -> Iterator[Any]:
        """The iterator for the loop's next ``iter()``: an epoch while the schedule runs, else the plain one."""
        if self._state in (_DONE, _PLAIN):
            return iter(self._loader.make_iterator())
        if self._state == _NEW:
            if not self._registry.claim(self._record):
                return self._become_plain()
            self._start()
            if self._state != _RUNNING:  # only IO was scheduled: it ran, and the schedule is over
                return iter(self._loader.make_iterator())
        made = self.clock()  # before iter(): the pass's start-up includes starting its workers
        return self._epoch(iter(self._loader.make_iterator()), made)

    def adopt(self, inner: Iterator[Any], handed: int) -> Iterator[Any]:
        """The loop's epoch from here on, over ``inner`` (a pass that has handed out ``handed`` batches
        already): ``benchy run`` chose this loader part-way through a plain pass. Starts the benchmark."""
        if self._state == _NEW:
            if not self._registry.claim(self._record):
                return inner
            self._start_at = handed  # the schedule's steps start there: its epochs count from the epoch's start
            self._start()
        if self._state != _RUNNING:
            return inner
        return self._epoch(inner, self.clock(), handed)

    def snapshot(self) -> Snapshot:
        """What the sink needs besides the results, as one value."""
        ctx = self.ctx
        return Snapshot(
            results=self.results,
            schedule=ScheduleState(
                adaptive=self.schedule.adaptive,
                precision=self.schedule.precision,
                windows_needed=self.schedule.windows_needed,
                windows_fewest=self.schedule.windows_fewest,
                order=tuple(t.label for t in self.results.trials),
                warmups=self.planner.warmups_used(),
                decision_confidence=self.schedule.decision_confidence,
                stop_reason=self.planner.stop_reason,
            ),
            epochs_started=self.epochs_started,
            finished=self._state == _DONE and self.planner.peek(self.results, fresh=True) is None,
            profiler=ctx.profilers.block(self.runner.ranges is not None),
            synthetic_batch_samples=self.runner.synthetic_samples,
            lookahead=self.runner.lookahead,
            counting=self.runner.counting,
            loader=f"{self._record.kind} created at {self._record.where}",
            other_loaders=tuple(self._registry.others()),
            workers=self._workers,
            startup=self._startup(),
            tokens=None if self.runner.tokens is None else self.runner.tokens.source,
            outcomes=self.outcomes,
            steps_needed=self.steps_needed() if self.schedule.window_plans else None,
            epoch_length=self._length,
            epochs_needed=self.epochs_needed() if self.schedule.window_plans else None,
        )

    def loop_epoch(self) -> Optional[int]:
        """The steps of the loop's own epoch: where it has left every epoch part-way (a loop that breaks out),
        the most it took of one; else the loader's (its ``len()``, or the length its passes showed); None:
        unknown."""
        if self.left_early:
            return self._left_after
        if self._length is None:
            try:
                self._length = self._loader.length()
            except Exception:
                self._length = None
        return self._length if self._length is not None else self._pass_length()

    @property
    def left_early(self) -> bool:
        """The loop has left every epoch part-way so far (:meth:`loop_epoch` is how much it took of one)."""
        return self._left_after is not None and not self._whole

    def min_epoch_steps(self) -> int:
        """The fewest steps an epoch of the loop must run for a window to measure anything in it."""
        return Schedule.min_epoch_steps(self.runner.queue_depth)

    def steps_needed(self) -> int:
        """The loop's steps the windows take at the most (an estimate made before they run), in epochs of the
        loop's own length (:meth:`loop_epoch`; in epochs long enough to hold them where that is too short)."""
        per = self.loop_epoch()
        return self.schedule.steps_needed(self.runner.queue_depth, per if per is None or per >= self.min_epoch_steps() else None)

    def epochs_needed(self) -> Optional[int]:
        """The epochs of the loop's own length (:meth:`loop_epoch`) it runs to finish the schedule (at the most,
        an estimate), counted as the script counts them: from the start of the epoch the benchmark began in
        (``benchy run`` begins it a few batches into a plain pass); None when that length is unknown (then
        :meth:`steps_needed` says it) or too short to hold a window (:meth:`min_epoch_steps`): no number of
        such epochs finishes the schedule."""
        if not self.schedule.window_plans:
            return 1
        per = self.loop_epoch()
        if per is None or per < self.min_epoch_steps():
            return None
        return Schedule.epochs_for(self.steps_needed(), per, self._start_at)

    # --- the machine: what the next segment of the loop's epoch is -----------------------------

    def segment(self, ep: EpochState) -> Segment:
        """At a boundary of epoch ``ep`` (its first ``next()``, or a segment's end): the next segment."""
        found = self._decide(ep)
        ep.cached_from = ep.handed if found.kind in (CACHED, SYNTHETIC) else -1
        return found

    def _decide(self, ep: EpochState) -> Segment:
        if ep.role == _UNDECIDED:
            self._take_role(ep)
        if ep.role == _SIDE:
            return self._side_segment(ep)
        self._after_segment(ep)
        if self._state != _RUNNING:
            return self._plain_rest(ep)
        if ep.exhausted:
            return self._epoch_over(ep)
        w = self._window
        if w is None:
            w = self._next_window(ep)
            if w is None:  # the schedule is over (exit_after_tests ended the process if it was on)
                return self._plain_rest(ep)
        return self._window_segment(ep, w)

    def _plain_rest(self, ep: EpochState) -> Segment:
        """The rest of the epoch, plain (the benchmark is over): the batches cached hand-outs took first."""
        self._repay(ep)
        return Segment(END) if ep.exhausted else Segment(PLAIN)

    def _epoch_over(self, ep: EpochState) -> Segment:
        """The loop's epoch ended with its pass: its steps count in the run's; its length is known now."""
        self._whole += 1
        if self._length is None and ep.handed > ep.short:
            whole = ep.handed - ep.short  # a loader without len(): its passes' lengths as seen
            self._seen = whole if self._seen is None else min(self._seen, whole)
        self._let_go(ep)
        return Segment(END)

    def _repay(self, ep: EpochState) -> None:
        """The batches of ``ep``'s pass that cached hand-outs took the place of, taken from the pass now and
        dropped (the batch fetched for the loop's ask first), before the loop's next real batch or the
        epoch's end: the pass is consumed batch for batch as the plain loop consumes it (its length, its
        sampler's and workers' random draws), so that the epochs after the schedule see the plain run's
        batches. Never inside a window: between windows, untimed."""
        owed, ep.owed = ep.owed, 0
        while owed > 0 and not ep.exhausted:
            owed -= 1
            if ep.pending is not NO_BATCH:
                ep.pending = NO_BATCH
                continue
            try:
                ep.inner_next()
            except StopIteration:  # a cached stretch ran past the end of a pass of unknown length
                ep.exhausted = True
                ep.short = owed + 1

    def _account(self, ep: EpochState) -> None:
        """The cached segment that just ended (or was left): its hand-outs are owed to the pass."""
        if ep.cached_from >= 0:
            ep.owed += ep.handed - ep.cached_from
            ep.cached_from = -1

    def closed(self, ep: EpochState, seg: Optional[Segment], count: int) -> None:
        """The loop let go of epoch ``ep`` part-way (a break, a peek's temporary iterator, a replaced one)."""
        ep.closed = True
        if ep.role != _OWNER or self._state != _RUNNING or self._current() is not ep:
            return
        self._close_segment(ep)
        if self._counting is not None:
            self._counting.leave(completed=False)
            self._counting = None
        self._account(ep)
        self._repay_left(ep)
        handed, ep.handed = ep.handed, 0
        self.steps += handed
        if handed <= 1:  # next(iter(loader)): a peek, not an epoch; the window goes on in the next one
            self.outcomes = self.outcomes.peek()
        else:  # the loop left its epoch part-way (a break): its own epoch is that long
            self._left_after = max(self._left_after or 0, handed)

    def _repay_left(self, ep: EpochState) -> None:
        """A pass the loop left part-way is repaid too (its sampler and workers drew as for the plain loop's
        asks); what the loader raises there is not the loop's: it asked for nothing more."""
        if ep.exhausted or self.life.exiting:
            ep.owed = 0
            return
        try:
            self._repay(ep)
        except Exception:
            ep.owed = 0

    @property
    def epochs_started(self) -> int:
        """The loop's epochs since the benchmark started (1 = the first); a peek (``next(iter(loader))``,
        an epoch that ended after at most one batch) is not one."""
        return self._passes - self.outcomes.peeks

    def failed(self, ep: EpochState, seg: Segment, error: BaseException) -> None:
        """The loader raised inside a segment of the loop's epoch: the running window is lost."""
        if ep.role != _OWNER or self._state != _RUNNING:
            return
        w = self._window
        self._close_segment(ep)
        if w is not None and seg.window is w:
            self._lose(Interruption(w.spec, w.measured, f"the data loader raised {type(error).__name__}: {error}", error=True))

    # --- roles --------------------------------------------------------------------------------

    def _current(self) -> Optional[EpochState]:
        return None if self._owner is None else self._owner()

    def _take_role(self, ep: EpochState) -> None:
        owner = self._current()
        if owner is not None and owner is not ep and not owner.closed and not self._complete(owner):
            ep.role = _SIDE
            ep.side_from = self._progress()
            self.outcomes = self.outcomes.side()
            if not self._side_said and self._state == _RUNNING:
                self._side_said = True
                self._say(ev.SideServed(None if self._window is None else self._window.spec.label))
            return
        if owner is not None and owner is not ep:
            self._let_go(owner)
        self._own(ep)

    def _own(self, ep: EpochState) -> None:
        """``ep`` is the loop's epoch: its first batch is fetched now (the pass's start-up, measured)."""
        ep.role = _OWNER
        ep.side_from = -1
        self._owner = weakref.ref(ep)
        self._passes += 1
        ep.index = self.epochs_started  # a peek before it ended is not counted: the epoch takes its number
        if self._state != _RUNNING or ep.exhausted:
            return
        if ep.pending is NO_BATCH:
            try:
                ep.pending = ep.inner_next()
            except StopIteration:
                ep.exhausted = True
                return
            except BaseException as err:
                self.failed(ep, Segment(PLAIN, window=self._window), err)
                raise
            if not ep.handed:  # the pass's first batch: its start-up, from the iter() that made it
                self.runner.note_pass(ep.made, self.clock())
        if not self.runner.counter_known:
            self.runner.decide(ep.pending)

    def _let_go(self, old: EpochState) -> None:
        """The loop moved on from ``old`` (its epoch ended, or a new one took over): its running segment ends,
        and its pass is repaid what cached hand-outs took."""
        self._close_segment(old)
        if self._counting is not None:
            self._counting.leave(completed=False)
            self._counting = None
        self._account(old)
        self._repay_left(old)
        self.steps += old.handed
        old.handed = 0
        old.role = _SIDE
        old.side_from = -1  # a stale iterator the loop advances again is served plain, never the loop's

    def _side_segment(self, ep: EpochState) -> Segment:
        """A side iterator's segment: plain batches; after :data:`LOOP_BATCHES`, if the loop's epoch did
        not move meanwhile, this one is the loop's after all."""
        if ep.exhausted:
            return Segment(END)
        if ep.side_from >= 0 and ep.handed >= LOOP_BATCHES:
            moved = self._progress() != ep.side_from
            ep.side_from = -1
            owner = self._current()
            if not moved and self._state == _RUNNING and owner is not None and owner is not ep:
                self._let_go(owner)
                if self._window is not None:  # it starts again here, from its first step
                    self._window.discarded = True
                    self._window = self._window.restarted()
                self._own(ep)
                return self.segment(ep)
        if ep.side_from >= 0:
            return Segment(PLAIN, LOOP_BATCHES - ep.handed)
        return Segment(PLAIN)

    def _progress(self) -> int:
        """How far the loop's epoch has gone (its hand-outs, counted live inside a window's stretch)."""
        owner = self._current()
        if owner is None:
            return -1
        return self.steps + self._epoch_handed(owner)

    def _epoch_handed(self, ep: EpochState) -> int:
        """Batches ``ep`` handed out so far (live: a window's running stretch counts from its series)."""
        w = ep.window
        return ep.handed + (0 if w is None else w.open_count())

    def _complete(self, ep: EpochState) -> bool:
        """``ep`` ended, or handed out its pass's number of batches (it ends at the next ask)."""
        return ep.exhausted or (ep.limit >= 0 and self._epoch_handed(ep) >= ep.limit)

    # --- windows ------------------------------------------------------------------------------

    def _after_segment(self, ep: EpochState) -> None:
        """What the segment that just ended did: its cached hand-outs are owed to the pass; the FLOPs' count
        ends; a window's stretch is settled, and a window it finished is counted."""
        self._account(ep)
        if self._counting is not None:
            self._counting.leave(completed=True)
            self._counting = None
        w = ep.window
        if w is None:
            return
        ep.window = None
        if w.discarded or w is not self._window:
            return
        if w.close_segment():
            self._window_done(w)

    def _close_segment(self, ep: EpochState) -> None:
        """``ep``'s running window stretch ends where it is (its last period is left out)."""
        w = ep.window
        if w is None:
            return
        ep.window = None
        count = w.open_count()
        ep.handed += count
        if not w.discarded and w is self._window:
            w.close_segment()

    def _next_window(self, ep: EpochState) -> Optional[WindowRun]:
        """The next window, after the IO trials that are due between windows; None: the schedule is over."""
        while True:
            due = self.planner.peek(self.results)
            if due is not None and due.mode is Mode.IO:
                self._io_block()
                ep.queue_ready = False  # the loop's loader filled its queue meanwhile
                continue
            spec = self.planner.next(self.results)
            self._notes()
            if spec is None:
                spec = self._next_diagnostic()
                if isinstance(self._helper, Drainer):
                    # The fork's copy-on-write and the new workers' start slow the first steps after it:
                    # untimed, as after a new pass of the loop's own workers.
                    ep.settled = False
            if spec is None:
                self.life.finish()
                return None
            ctx = self.ctx
            ctx.out.trial_started(spec)
            ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
            self._window = self.runner.window(spec, ctx.out, ranges)
            return self._window

    def _room(self, ep: EpochState) -> int:
        """Steps left in ``ep``'s pass, as far as its length is known (a SYNTHETIC stretch stops there)."""
        return ep.limit - ep.handed if ep.limit >= 0 else sys.maxsize

    def _window_segment(self, ep: EpochState, w: WindowRun) -> Segment:
        spec, runner = w.spec, self.runner
        depth = runner.queue_depth
        if spec.mode is Mode.FULL:
            self._repay(ep)  # real batches from here: the pass first takes what cached hand-outs took
            if ep.exhausted or self._room(ep) <= 0:  # the pass is at its end: the window begins in the next
                return self._pass_rest(ep)
            if depth > 0 and not ep.queue_ready:
                ep.queue_ready = ep.settled = True
                # The ready batches, fresh from the workers (a batch already held is handed out first).
                lead = min(depth + int(ep.pending is not NO_BATCH), self._room(ep) - 2)
                if lead > 0:  # the batches the workers hold ready, handed out untimed
                    return Segment(PLAIN, lead)
            room = sys.maxsize  # real batches: the window's stretch runs until the pass ends
        else:
            if ep.limit < 0:  # a pass of unknown length: repaid at every window, so that its end shows
                self._repay(ep)
                if ep.exhausted:
                    return self._epoch_over(ep)
            room = self._room(ep)
            if room <= 0:  # the pass's steps are all taken: it is repaid, and ends at the next ask
                return self._pass_rest(ep)
            if runner.cached is NOTHING:
                batch = self._take_real(ep)
                if batch is NOTHING:
                    return self._epoch_over(ep)
                runner.keep_cached(batch)
            w.constant_samples(runner.synthetic_samples or 0)
            if depth > 0 and not ep.settled:
                # A new pass started its workers: the first steps after it pay for that (the copy-on-write
                # of the training process's memory after the fork, the workers' start): untimed here.
                ep.settled = True
                settle = min(depth, room - 2)
                if settle > 0:
                    return Segment(CACHED, settle, batch=runner.cached)
            if runner.count_due(spec) and room >= 3:
                ep.queue_ready = False
                if not self._primed:
                    # One untimed step on the cached batch first: a loop that fetches one batch ahead runs the
                    # step on the batch before the counted hand-out, and at an epoch's first batch none.
                    self._primed = True
                    return Segment(CACHED, 1, batch=runner.cached)
                self._primed = False
                self._counting = runner.start_count(spec)
                return Segment(CACHED, 1, batch=runner.cached)
        quota = w.quota(ep.handed)
        steps = min(quota, room)
        if steps <= 0:
            return self._pass_rest(ep)
        resume = w.started
        w.started = True
        if isinstance(w.args.ranges, TorchRanges):  # the profiled warm-up: its trace names the steps this stretch holds
            w.args.ranges.stretch(w.stamps.done, min(steps, self._room(ep)))
        w.open_segment(ep.index, ep.handed, steps)
        ep.window = w
        if spec.mode is Mode.SYNTHETIC:
            ep.queue_ready = False  # the workers fill their queue while cached batches are handed out
        kind = SYNTHETIC if spec.mode is Mode.SYNTHETIC else FULL
        batch = runner.cached if kind == SYNTHETIC else None
        if w.args.ranges is not None and not ep.annotated:  # the running variant pushes no ranges
            one = Segment(kind, steps, w, batch, finishes=steps == quota, resume=resume)
            delegate = epoch_loop(EpochArgs(ep, _Side(self, one), self.clock), self._counter(), True, nvtx=True)
            return Segment(kind, steps, w, batch, steps == quota, resume, delegate=delegate)
        return Segment(kind, steps, w, batch, finishes=steps == quota, resume=resume)

    def _pass_rest(self, ep: EpochState) -> Segment:
        """The window cannot go on in this epoch (its pass's known length is reached): the pass is repaid,
        and what it still holds (nothing, where its length was right) is handed out plain and counted."""
        self._repay(ep)
        if ep.exhausted:
            return self._epoch_over(ep)
        return Segment(PLAIN, sys.maxsize)

    def _take_real(self, ep: EpochState) -> Any:
        """A real batch of ``ep`` for the cached one (the pending batch, else the next; one batch of the pass,
        so one hand-out fewer is owed to it); NOTHING at its end."""
        batch, ep.pending = ep.pending, NO_BATCH
        if batch is NO_BATCH:
            try:
                batch = ep.inner_next()
            except StopIteration:
                ep.exhausted = True
                return NOTHING
        ep.owed -= 1
        return batch

    # --- the diagnostic windows (after the counted ones) -------------------------------------------

    def _next_diagnostic(self) -> Optional[TrialSpec]:
        """The next diagnostic window (its helper started beside it), or None when none is left."""
        plan = self.schedule.plan(Mode.SYNTHETIC)
        while self._diagnostics and plan is not None:
            name = self._diagnostics.pop(0)
            self.diagnosing = True
            spec = TrialSpec(Mode.SYNTHETIC, 1, False, self.schedule.diagnostic_steps, variant=name)
            try:
                self._helper = self._start_helper(name)
            except Exception as err:  # a loader or hooks that cannot start: only this diagnosis is lost
                self._helper = None
                self._skip_diagnostic(f"{spec.label}: could not start ({type(err).__name__}: {err})")
                continue
            if self._helper is None:
                continue
            return spec
        return None

    def _start_helper(self, name: str) -> Any:
        if name == "PARTS":
            hooks = StepHooks()
            hooks.install()
            return hooks
        if not self._workers:
            self._skip_diagnostic("CONTENTION_1: no loader workers (the loading runs on the training thread, in FULL only)")
            return None
        drainer = Drainer(self.runner.own.fresh)  # a forked process's pass: its random draws are its own
        drainer.start()
        drainer.wait_running(2 * max(1, self.runner.queue_depth) + 1)  # past the workers' first prefetching
        return drainer

    def _stop_helper(self) -> Any:
        helper, self._helper = self._helper, None
        if isinstance(helper, StepHooks):
            helper.remove()
        elif isinstance(helper, Drainer):
            helper.stop()
        return helper

    def _skip_diagnostic(self, why: str) -> None:
        self.results = self.results.changed(diagnostics_skipped=(*self.results.diagnostics_skipped, why))

    def _diagnostic_done(self, w: WindowRun) -> None:
        """A diagnostic window measured its periods: its figures recorded (never counted in a mode)."""
        self._window = None
        owner = self._current()
        if owner is not None:
            owner.queue_ready = False
        helper = self._stop_helper()
        result = self.runner.with_system(w.result())
        steps = len(result.step_seconds)
        period = result.own_seconds / steps if steps else 0.0
        if isinstance(helper, StepHooks):
            t = helper.times
            parts = StepParts.from_times(
                result.label, period, steps, t.seconds, t.forward, t.backward, t.optimizer, (t.forwards, t.backwards, t.steps)
            )
            self.results = self.results.changed(parts=parts)
        elif isinstance(helper, Drainer):
            # The median step: a loader flat out gives the step bursts of waits for a core, which its mean
            # over a short window overstates.
            median = result.median_period or period
            run = ContentionRun(result.label, median, steps, helper.batches, helper.seconds, helper.ended)
            self.results = self.results.changed(contention=run)
        self.results = self.results.changed(diagnostics=(*self.results.diagnostics, folded(result)))
        self.sink.trial(result)
        if not self._diagnostics:
            self.life.finish()

    def _window_done(self, w: WindowRun) -> None:
        """A window measured its periods: its result counts (exchanged with the other ranks)."""
        if w.spec.variant in DIAGNOSTIC_WINDOWS:
            self._diagnostic_done(w)
            return
        self._window = None
        owner = self._current()
        if owner is not None:
            owner.queue_ready = False  # the workers refill their queue while benchy reports (a lead-in follows)
        if self.runner.lookahead is None and w.spec.mode is Mode.SYNTHETIC:
            self.runner.lookahead = w.fetches_ahead()
            if self.runner.lookahead:
                self._say(ev.LookaheadFound())
        result = w.result()
        result = self.runner.finish(result)
        if self.results.flops is None:
            self.results = self.results.changed(flops=self.runner.flops(final=False))
        self._count(result)

    def _count(self, result: TrialResult, checkpoint: bool = True) -> None:
        """A scheduled trial that counted: exchanged with the other ranks, recorded, said; then the next."""
        plan = self.schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and plan is not None and plan.nwarmup is None
        ctx = self.ctx
        try:
            change = self.planner.warmup_change(result) if auto_warmup else None
            result, change = combine(ctx.comm, result, change, self.config.general.dist_rank_lists)
        except DistributedError:
            self.life.exchange_failed(result.spec)
            raise
        self.results = self.results.add_trial(result)
        self.outcomes = self.outcomes.count()
        if auto_warmup:
            self.planner.record_warmup(result.mode, change)
        self._profiler_after(result.spec)
        ctx.sink.trial(result)
        if result.mode is not Mode.IO:
            self.planner.new_boundary()
            over = self.planner.peek(self.results, fresh=False) is None
            self._notes()
            if over and not self._diagnostics:
                self.life.finish()
                return
        self._notes()
        if checkpoint:
            ctx.sink.checkpoint(self.snapshot())

    def _lose(self, item: Interruption) -> None:
        """A trial that did not count: recorded and said (never raises); a diagnostic window's loss costs only its
        diagnosis (said in the results, not counted as a lost trial)."""
        if self._window is not None and self._window.spec == item.spec:
            self._window.discarded = True
            self._window = None
        self.runner.sampler.stop()
        if item.spec.variant in DIAGNOSTIC_WINDOWS:
            self._stop_helper()
            self._skip_diagnostic(f"{item.spec.label}: {item.reason}")
            return
        self.outcomes = self.outcomes.lose(item)
        try:
            self._profiler_after(item.spec)
            self._say(ev.TrialLost(item))
            self.sink.checkpoint(self.snapshot())
        except Exception:  # during interpreter shutdown stdout may be gone
            pass

    # --- benchy's own passes ------------------------------------------------------------------

    def _io_block(self, first: bool = False) -> None:
        """The IO trials due now, on a pass of benchy's own, hidden from the loop, with the user's random
        streams kept; at the first, the sweep before them and IO_H2D and the stage trials after."""
        runner, ctx = self.runner, self.ctx
        with kept(self._loader.generators()):
            try:
                if first:
                    applied = run_sweep(self.config, self._loader.sweeper, runner, ctx.sink, self, self._loader.batch_size)
                    if applied is not None:
                        self._workers = applied.num_workers
                        runner.queue_depth = queue_depth(applied.num_workers, applied.prefetch_factor)
                ran = False
                while True:
                    spec = self.planner.peek(self.results)
                    if spec is None or spec.mode is not Mode.IO:
                        break
                    self.planner.issue(spec)
                    self._notes()
                    # Every IO trial starts with the batches the workers hold ready taken, untimed: the state
                    # of a plain loop that drains the loader as fast as it can (its queue is empty). Between
                    # IO trials benchy builds results and writes lines, and the workers fill their queue.
                    if ran or not first:
                        runner.drain()
                    ran = True
                    self._io_trial(spec)
                if first and ran:
                    run_h2d(self.config, self._h2d_copy, runner, ctx.sink, self, self._running)
                    run_stages(self.config, self._loader.instrument, runner, ctx.sink, self, self._running, self._loader.kind)
            finally:
                runner.close_own()
        self._notes()
        ctx.sink.checkpoint(self.snapshot())

    def run_checks(self) -> None:
        """At the schedule's end, before the summary: the what-if model's emulated-step trials, on a pass of
        benchy's own with the user's random streams kept (``side_trials.run_emulated``)."""
        runner, ctx = self.runner, self.ctx
        with kept(self._loader.generators()):
            try:
                run_emulated(self.config, runner, ctx.sink, self, self._running, self._workers)
            except Exception as err:  # the check costs only itself: the summary still comes
                self.hidden = None
                why = f"the emulated-step trials raised {type(err).__name__}: {err}"
                self.results = self.results.changed(emulated_skipped=why)
                self._say(ev.EmulatedSkipped(why))
            finally:
                runner.close_own()

    def _io_trial(self, spec: TrialSpec) -> None:
        ctx = self.ctx
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        self.hidden = spec
        try:
            result = self.runner.io(spec, ctx.out, ranges)
        except BaseException as err:
            self.hidden = None
            self._lose(Interruption(spec, 0, f"the data loader raised {type(err).__name__}: {err}", error=True))
            raise
        self.hidden = None
        # No JSON between IO trials: a pause there lets loader workers fill their queue.
        self._count(self.runner.finish(result), checkpoint=False)

    def _running(self, spec: Optional[TrialSpec]) -> None:
        self.hidden = spec

    # --- set-up -------------------------------------------------------------------------------

    def _epoch(self, inner: Iterator[Any], made: float, handed: int = 0) -> Iterator[Any]:
        """An epoch of the loop over ``inner`` (made at ``made``), the wrapper kept alive while it is out."""
        try:
            length = self._loader.length()
        except Exception:
            length = None
        self._length = length
        limit = length if length is not None else self._pass_length()
        ep = EpochState(inner, -1 if limit is None else limit, made, self.runner.ranges is not None)
        ep.handed = handed
        ep.settled = handed > 0  # a pass adopted part-way (benchy run) started its workers long ago
        if not self.runner.counter_known:
            # No IO trial ran: the count is decided from this pass's first batch, fetched now.
            ep.role = _UNDECIDED
            self._take_role(ep)
        ep.holder = self._loader.owner()
        return epoch_loop(EpochArgs(ep, self, self.clock), self._counter(), self.config.general.report_freq > 0)

    def _pass_length(self) -> Optional[int]:
        """A loader without ``len()``: its passes' length as seen (the shortest of the loop's whole passes and
        of those benchy's own IO trials ran through), so that a SYNTHETIC stretch stops at it; None: unknown."""
        seen = self.runner.pass_lengths + ([] if self._seen is None else [self._seen])
        return min(seen) if seen else None

    def _counter(self) -> Optional[Callable[[Any], int]]:
        return self.runner.counter() if self.runner.counter_known else None

    def _become_plain(self) -> Iterator[Any]:
        self._state = _PLAIN
        owner = self._registry.owner
        where = self._record.where
        if global_rank() == 0 and where not in self._registry.noted:  # once per creation site
            self._registry.noted.add(where)
            running = f"{owner.kind} created at {owner.where}" if owner is not None else None
            self._say(ev.LoaderPlain(self._record.kind, where, running, owner is not None and owner.where == where))
        return iter(self._loader.make_iterator())

    def _start(self) -> None:
        """The benchmark starts (at the first ``iter()``, every rank together): the run's context, the
        schedule check across ranks, the start-up lines, then the IO trials before the loop's first batch."""
        self._state = _RUNNING
        try:
            ctx = self._ctx = RunContext.start(
                self.config, self.schedule, output=self._output, profiler_api=self._profiler_api, exit=self._exit
            )
            if ctx.world > 1:
                agree(ctx.comm, self.schedule.fingerprint(), self.config.general.dist_rank_lists)
        except DistributedError:
            self._state = _DONE
            self._record.finished = True
            raise
        self.runner.world = ctx.world
        self.runner.barrier = ctx.barrier
        self.runner.ranges = ctx.ranges
        try:
            self._length = self._loader.length()
        except Exception:
            self._length = None
        ctx.sink.clean_stale()
        ctx.sink.started(
            self.schedule,
            self.config,
            f"{self._record.kind} created at {self._record.where}",
            ctx.ranges is not None,
            self.steps_needed(),
            self._length,
            self.epochs_needed(),
            self.min_epoch_steps(),
        )
        self.life.install()
        self.planner.new_boundary()
        first = self.planner.peek(self.results)
        if first is not None and first.mode is Mode.IO:
            self._io_block(first=True)
        if self.planner.peek(self.results) is None:
            self.life.finish()

    def _startup(self) -> Optional[Startup]:
        """The loader's start-up per pass, against an ordinary batch (IO) and an ordinary FULL step."""
        medians = [t.median_period for t in self.results.trials if t.mode is Mode.IO and t.median_period is not None]
        batch = float(statistics.median(medians)) if medians else None
        full = [t.median_period for t in self.results.measured(Mode.FULL) if t.median_period is not None]
        per_batch = float(statistics.median(full)) if full else None
        return startup(
            self.runner.startups,
            workers=self._workers,
            persistent=self._loader.persistent,
            epoch_batches=self._length,
            batch_seconds=batch,
            full_batch_seconds=per_batch,
            started=[self.runner.unix(t) for t in self.runner.pass_starts],
        )

    def _profiler_after(self, spec: TrialSpec) -> None:
        profilers = self.ctx.profilers
        more = any(self.planner.may_run(m, self.results) for m in profilers.kinds)
        for event in profilers.after_trial(spec, more):
            self._say(event)

    def _notes(self) -> None:
        """What the planner decided (warm-ups steady, why the trials stopped), said once each."""
        while self.planner.events:
            self._say(self.planner.events.pop(0))

    def _say(self, event: ev.Event) -> None:
        self.sink.say(event)
