"""The training loop's epochs while a benchmark runs: which ``iter()`` is the loop's, what each stretch of an
epoch hands out, and how every pass is consumed as the plain loop consumes it (glue, no torch; the rules as a user
reads them: docs/guide/schedule.md).

:class:`Loop` is what :func:`~benchy.measure.trial.epoch_loop` asks at each boundary of the loop's epoch (its first
``next()``, or a segment's end) for the next segment (:meth:`Loop.segment`): the running window's next stretch
(a window may begin at any step and span epochs), the session's next work where none runs, or plain batches once
the schedule is over. Before a FULL stretch come real batches untimed (the *lead-in*); a SYNTHETIC stretch hands out
the cached batch, each hand-out in place of a batch of the pass, which is taken and dropped (*repaid*) between
windows.

The loop's ``iter()`` is the first to ask for a batch, and later each new one that asks once the loop's epoch has
ended, reached its length, or was let go. One that asks while it is part-way and held (a peek) is a *side* iterator
served plain; after :data:`LOOP_BATCHES` batches while the loop's epoch does not move, it is the loop's after all.
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Tuple, Union

from ..core.outcomes import Interruption, Reason, Why, raised
from ..measure.flops import StepCounter
from ..measure.profiling import TorchRanges
from ..measure.trial import CACHED, END, FULL, NO_BATCH, PLAIN, SYNTHETIC, EpochArgs, EpochState, Segment, epoch_loop
from ..measure.window import WindowRun
from .trials import NOTHING, TrialRunner

if TYPE_CHECKING:
    from .session import Session


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
    sweeper: Any = None  # makes the loader's variants for a sweep (BenchmarkDataLoader only)
    instrument: Any = None  # builds an instrumented copy for the stage trials (DataLoaders)
    # benchy's own passes (IO trials), apart from the loop's; by default new passes of the loader itself.
    own: Any = None
    # How the loader hands out one iterator that every iter() returns (None: a new one each pass): benchy then runs
    # no pass of its own, which would take the loop's batches.
    shared: Callable[[], Optional[str]] = lambda: None
    # The random streams the loader and its samplers hold (kept through benchy's own passes).
    streams: Callable[[], List[Any]] = lambda: []
    # The wrapper itself, by a weak reference: the session holds it only while an epoch is out, so that
    # a loop over a temporary wrapper (``for x in Wrapper(...)``) keeps it, and a dropped wrapper is freed
    # with its workers as a plain DataLoader is.
    owner: Callable[[], Any] = lambda: None


@dataclasses.dataclass
class FlopsWork:
    """The FLOPs' count: :data:`PRIMER` untimed steps on the cached batch (a loop that fetches ahead runs, between a
    hand-out and the next ask, the step on a batch before), then one counted cached hand-out per ask until the
    counter settles; a stretch the loop breaks is tried again in the next epoch, :data:`TRIES` times in all."""

    PRIMER = 2
    TRIES = 3

    primed: bool = False
    counter: Optional[StepCounter] = None
    tries: int = 0
    # Where its cached hand-outs ran, for the timeline: the clock at the first, (epoch, step) of the first and last.
    began: Optional[float] = None
    first: Tuple[int, int] = (0, 0)
    last: Tuple[int, int] = (0, 0)


Work = Union[WindowRun, FlopsWork]


class Loop:
    """The loop's epochs of one benchmark (see the module)."""

    def __init__(self, session: Session, loader: LoaderFacts, runner: TrialRunner, clock: Callable[[], float]) -> None:
        self._session, self._loader, self._runner, self._clock = session, loader, runner, clock
        self.passes = 0  # the loop's iter() calls that took the epoch's role, peeks included
        self.peeks = 0
        self.steps = 0  # the loop's steps since the benchmark began (its epochs' hand-outs, at their boundaries)
        self.start_at = 0  # batches the loop had taken from its epoch when the benchmark began (benchy run)
        self.work: Optional[Work] = None  # the window (or the FLOPs' count) that runs (part-way) now
        self.length: Optional[int] = None  # the loader's own batches per epoch, read at each iter()
        self._owner: Optional[weakref.ReferenceType[EpochState]] = None
        self._seen: Optional[int] = None  # without len(): the fewest batches of a pass the loop ran to its end
        self._whole = 0  # the loop's epochs that ran to their pass's end
        self._left_after: Optional[int] = None  # the most steps the loop took of an epoch it left part-way
        self.settle = False  # the next SYNTHETIC window's first steps go by untimed (a process was just forked)

    # --- what the session reads -----------------------------------------------------------------

    @property
    def window(self) -> Optional[WindowRun]:
        return self.work if isinstance(self.work, WindowRun) else None

    @property
    def epochs_started(self) -> int:
        """The loop's epochs since the benchmark began (1 = the first); a peek is not one."""
        return self.passes - self.peeks

    def steps_taken(self) -> int:
        """The loop's steps since the benchmark began (the running epoch's counted live)."""
        owner = self._current()
        return self.steps + (0 if owner is None else self._epoch_handed(owner))

    def read_length(self) -> Optional[int]:
        try:
            self.length = self._loader.length()
        except Exception:
            self.length = None
        return self.length

    def loop_epoch(self) -> Optional[int]:
        """The steps of the loop's own epoch: the most it took of one where it has left every epoch part-way, else
        the loader's; None: unknown."""
        if self.left_early:
            return self._left_after
        if self.length is None:
            self.read_length()
        return self.length if self.length is not None else self._pass_length()

    @property
    def left_early(self) -> bool:
        """The loop has left every epoch part-way so far (:meth:`loop_epoch` is how much it took of one)."""
        return self._left_after is not None and not self._whole

    def discard(self) -> Optional[Work]:
        """The running work ends here, unfinished (the benchmark is over): it is returned, and dropped."""
        work, self.work = self.work, None
        if isinstance(work, WindowRun):
            work.discarded = True
        elif work is not None and work.counter is not None:
            work.counter.leave(completed=False)
        return work

    # --- an epoch -----------------------------------------------------------------------------

    def epoch(self, inner: Iterator[Any], made: float, handed: int = 0) -> Iterator[Any]:
        """An epoch of the loop over ``inner`` (made at ``made``), the wrapper kept alive while it is out."""
        length = self.read_length()
        limit = length if length is not None else self._pass_length()
        ep = EpochState(inner, -1 if limit is None else limit, made)
        ep.handed = handed
        ep.settled = handed > 0  # a pass adopted part-way (benchy run) started its workers long ago
        if not self._runner.counter_known:
            # No IO trial ran: the count is decided from this pass's first batch, fetched now.
            ep.role = _UNDECIDED
            self._take_role(ep)
        ep.holder = self._loader.owner()
        return epoch_loop(EpochArgs(ep, self, self._clock))

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
        if not self._session.running:
            return self._plain_rest(ep)
        if ep.exhausted:
            return self._epoch_over(ep)
        work = self.work
        if work is None:
            work = self.work = self._session.next_work()
            if work is None:  # the schedule is over (exit_after_tests ended the process if it was on)
                return self._plain_rest(ep)
            ep.queue_ready = False  # the workers made batches ahead while benchy worked (a FULL window's lead-in follows)
        if isinstance(work, FlopsWork):
            return self._flops_segment(ep, work)
        return self._window_segment(ep, work)

    def _plain_rest(self, ep: EpochState) -> Segment:
        """The rest of the epoch, plain (the benchmark is over): the batches cached hand-outs took first."""
        self._repay(ep)
        return Segment(END) if ep.exhausted else Segment(PLAIN)

    def _epoch_over(self, ep: EpochState) -> Segment:
        """The loop's epoch ended with its pass: its steps count in the run's; its length is known now."""
        self._whole += 1
        if self.length is None and ep.handed > ep.short:
            whole = ep.handed - ep.short  # a loader without len(): its passes' lengths as seen
            self._seen = whole if self._seen is None else min(self._seen, whole)
        self._let_go(ep)
        return Segment(END)

    def _repay(self, ep: EpochState) -> int:
        """The batches of ``ep``'s pass that cached hand-outs took the place of, taken from the pass now and
        dropped, untimed between windows: the epochs after the schedule then see the plain run's batches. The
        batches taken, returned."""
        owed, ep.owed = ep.owed, 0
        if owed <= 0 or ep.exhausted:
            return min(owed, 0)
        taken = self._drop(ep, owed)
        if taken < owed:  # a cached stretch ran past the end of a pass of unknown length
            ep.short = owed - taken
            return taken + 1
        return taken

    def _drop(self, ep: EpochState, n: int) -> int:
        """Up to ``n`` batches of ``ep``'s pass taken and dropped (the batch fetched for the loop's ask first); fewer
        where the pass ends (``ep.exhausted``). The batches taken."""
        taken = 0
        while taken < n and self._next(ep) is not NOTHING:
            taken += 1
        return taken

    def _next(self, ep: EpochState) -> Any:
        """``ep``'s next batch (the one fetched for the loop's ask first); NOTHING at its pass's end."""
        batch, ep.pending = ep.pending, NO_BATCH
        if batch is NO_BATCH:
            try:
                batch = ep.inner_next()
            except StopIteration:
                ep.exhausted = True
                return NOTHING
        return batch

    def _account(self, ep: EpochState) -> None:
        """The cached segment that just ended (or was left): its hand-outs are owed to the pass."""
        if ep.cached_from >= 0:
            ep.owed += ep.handed - ep.cached_from
            ep.cached_from = -1

    def closed(self, ep: EpochState, seg: Optional[Segment], count: int) -> None:
        """The loop let go of epoch ``ep`` part-way (a break, a peek, a replaced iterator)."""
        ep.closed = True
        if ep.role != _OWNER or not self._session.running or self._current() is not ep:
            return
        handed = self._release(ep)
        if handed <= 1:  # next(iter(loader)): a peek, not an epoch; the window goes on in the next one
            self.peeks += 1
            self._session.outcomes = self._session.outcomes.peek()
        else:  # the loop left its epoch part-way (a break): its own epoch is that long
            self._left_after = max(self._left_after or 0, handed)

    def _release(self, ep: EpochState) -> int:
        """The loop lets go of ``ep``: its pass repaid (what the loader raises there is not the loop's); its
        hand-outs, returned, count in the run's steps."""
        self._close_segment(ep)
        self._leave_count(completed=False)
        self._account(ep)
        if ep.exhausted or self._session.exiting:
            ep.owed = 0
        else:
            try:
                self._repay(ep)
            except Exception:
                ep.owed = 0
        handed, ep.handed = ep.handed, 0
        self.steps += handed
        return handed

    def failed(self, ep: EpochState, seg: Segment, error: BaseException) -> None:
        """The loader raised inside a segment of the loop's epoch: the running window is lost."""
        if ep.role != _OWNER or not self._session.running:
            return
        w = self.window
        self._close_segment(ep)
        if w is not None and seg.window is w:
            self._session.lose(Interruption(w.spec, w.measured, Reason(Why.LOADER_RAISED, error=raised(error))))

    # --- roles --------------------------------------------------------------------------------

    def _current(self) -> Optional[EpochState]:
        return None if self._owner is None else self._owner()

    def _take_role(self, ep: EpochState) -> None:
        owner = self._current()
        if owner is not None and owner is not ep and not owner.closed and not self._complete(owner):
            ep.role = _SIDE
            ep.side_from = self.steps_taken()
            self._session.side_served()
            return
        if owner is not None and owner is not ep:
            self._let_go(owner)
        self._own(ep)

    def _own(self, ep: EpochState) -> None:
        """``ep`` is the loop's epoch: its first batch is fetched now (the pass's start-up, measured)."""
        ep.role = _OWNER
        ep.side_from = -1
        self._owner = weakref.ref(ep)
        self.passes += 1
        ep.index = self.epochs_started  # a peek before it ended is not counted: the epoch takes its number
        if not self._session.running or ep.exhausted:
            return
        if ep.pending is NO_BATCH:
            try:
                ep.pending = ep.inner_next()
            except StopIteration:
                ep.exhausted = True
                return
            except BaseException as err:
                self.failed(ep, Segment(PLAIN, window=self.window), err)
                raise
            if not ep.handed:  # the pass's first batch: its start-up, from the iter() that made it
                self._runner.note_pass(ep.made, self._clock())
        if not self._runner.counter_known:
            self._runner.decide(ep.pending)

    def _let_go(self, old: EpochState) -> None:
        """The loop moved on from ``old`` (its epoch ended, or a new one took over)."""
        self._release(old)
        old.role = _SIDE
        old.side_from = -1  # a stale iterator the loop advances again is served plain, never the loop's

    def _side_segment(self, ep: EpochState) -> Segment:
        """A side iterator's segment: plain batches; after :data:`LOOP_BATCHES`, if the loop's epoch did
        not move meanwhile, this one is the loop's after all."""
        if ep.exhausted:
            return Segment(END)
        if ep.side_from >= 0 and ep.handed >= LOOP_BATCHES:
            moved = self.steps_taken() != ep.side_from
            ep.side_from = -1
            owner = self._current()
            if not moved and self._session.running and owner is not None and owner is not ep:
                self._let_go(owner)
                w = self.window
                if w is not None:  # it starts again here, from its first step
                    w.discarded = True
                    self.work = w.restarted()
                self._own(ep)
                return self.segment(ep)
        if ep.side_from >= 0:
            return Segment(PLAIN, LOOP_BATCHES - ep.handed)
        return Segment(PLAIN)

    def _epoch_handed(self, ep: EpochState) -> int:
        """Batches ``ep`` handed out so far (live: a window's running stretch counts from its series)."""
        w = ep.window
        return ep.handed + (0 if w is None else w.open_count())

    def _complete(self, ep: EpochState) -> bool:
        """``ep`` ended, or handed out its pass's number of batches (it ends at the next ask)."""
        return ep.exhausted or (ep.limit >= 0 and self._epoch_handed(ep) >= ep.limit)

    # --- segments -------------------------------------------------------------------------------

    def _leave_count(self, completed: bool) -> None:
        """At an ask (``completed``): the FLOPs' count marks an interval, and ends once it settles; where the loop
        broke the stretch instead, it is tried again in the next epoch."""
        work = self.work
        if not isinstance(work, FlopsWork) or work.counter is None:
            return
        counter = work.counter
        if completed:
            counter.mark()
            if not counter.settled:
                return
        counter.leave(completed=completed)
        if completed or work.tries >= FlopsWork.TRIES:
            self.work = None
            self._session.flops_done(work, completed)
        else:
            work.primed, work.counter = False, None

    def _after_segment(self, ep: EpochState) -> None:
        """The segment that just ended is settled (a window it finished handed over)."""
        self._account(ep)
        self._leave_count(completed=True)
        w = ep.window
        if w is None:
            return
        ep.window = None
        if w.discarded or w is not self.work:
            return
        if w.close_segment():
            self.work = None
            self._session.window_done(w)

    def _close_segment(self, ep: EpochState) -> None:
        """``ep``'s running window stretch ends where it is (its last period is left out)."""
        w = ep.window
        if w is None:
            return
        ep.window = None
        count = w.open_count()
        ep.handed += count
        if not w.discarded and w is self.work:
            w.close_segment()

    def _room(self, ep: EpochState) -> int:
        """Steps left in ``ep``'s pass, as far as its length is known (a SYNTHETIC stretch stops there)."""
        return ep.limit - ep.handed if ep.limit >= 0 else sys.maxsize

    def _cached(self, ep: EpochState) -> Optional[Segment]:
        """Before a stretch on the cached batch: a segment when the pass is at its end instead (None: go on)."""
        runner = self._runner
        if ep.limit < 0:
            self._repay(ep)
            if ep.exhausted:
                return self._epoch_over(ep)
        if self._room(ep) <= 0:  # the pass's steps are all taken: it is repaid, and ends at the next ask
            return self._pass_rest(ep)
        if runner.cached is NOTHING:
            batch = self._take_real(ep)
            if batch is NOTHING:
                return self._epoch_over(ep)
            runner.keep_cached(batch)
        return None

    def _fit(self, ep: EpochState, steps: int) -> int:
        """How many of ``steps`` cached hand-outs fit in ``ep``'s pass. Where its length is unknown (a loader without
        ``len()``, no whole pass seen yet), the batches they take the place of are taken from the pass now, as
        :meth:`_repay` would after them, so that its end shows before a stretch runs past it: the loop's epoch keeps
        its length."""
        if ep.limit >= 0 or steps <= 0:
            return steps
        credit = max(0, -ep.owed)  # batches of the pass already taken for hand-outs to come (the cached one)
        taken = self._drop(ep, steps - credit)
        ep.owed -= taken
        return min(steps, credit + taken)

    def _flops_segment(self, ep: EpochState, work: FlopsWork) -> Segment:
        ended = self._cached(ep)
        if ended is not None:
            return ended
        if work.counter is None and self._room(ep) < (2 if work.primed else FlopsWork.PRIMER + 3):
            # The primer and the first counted asks must fall in one epoch (a loop that fetches ahead runs no step in
            # its epoch's first period): the rest of this pass plain, the count in the next.
            work.primed = False
            return self._pass_rest(ep)
        ep.queue_ready = False
        if work.began is None:
            work.began, work.first = self._clock(), (ep.index, ep.handed)
        need = 1 if work.primed else FlopsWork.PRIMER
        steps = self._fit(ep, need)
        if steps <= 0:  # a pass of unknown length ended: the count in the next
            work.primed = work.primed and work.counter is not None
            return self._pass_rest(ep)
        work.last = (ep.index, ep.handed + steps - 1)
        if steps < need:  # it ends within the primer: those steps go by (they took its batches), the count next
            work.primed = False
            return Segment(CACHED, steps, batch=self._runner.cached)
        if not work.primed:
            work.primed = True
        elif work.counter is None:
            work.tries += 1
            work.counter = self._runner.start_count()
        return Segment(CACHED, steps, batch=self._runner.cached)

    def _window_segment(self, ep: EpochState, w: WindowRun) -> Segment:
        spec, runner = w.spec, self._runner
        depth = runner.queue_depth
        if spec.mode.value == "FULL":
            drained = self._repay(ep)  # real batches from here: the pass first takes what cached hand-outs took
            if ep.exhausted or self._room(ep) <= 0:  # the pass is at its end: the window begins in the next
                return self._pass_rest(ep)
            if depth > 0 and not ep.queue_ready:
                ep.queue_ready = ep.settled = True
                # A new pass's workers start together now: nothing made ahead. Else what benchy's pause let them make,
                # less what the repay took at once; then a round and one batch more (a batch held is handed out first).
                backlog = 0 if ep.handed == 0 else max(0, min(depth, w.backlog) - drained)
                lead = min(backlog + w.spec.cycle + 1, self._room(ep) - 2)
                if lead > 0:  # handed out untimed
                    if not w.started and not w.begun:
                        # What runs before the clock (the sampler's baseline: milliseconds with many workers) runs
                        # before the lead-in, whose steps use up the batches the workers make meanwhile.
                        w.begun = True
                        w.args.begin()
                    return Segment(PLAIN, lead)
            room = sys.maxsize  # real batches: the window's stretch runs until the pass ends
        else:
            ended = self._cached(ep)
            if ended is not None:
                return ended
            room = self._room(ep)
            w.constant_samples(runner.synthetic_samples or 0)
            if self.settle and not w.started:
                # A process was just forked beside the loop (the contention window's loader): the copy-on-write
                # of the training process's memory slows the first steps after it: untimed here.
                self.settle = False
                settle = self._fit(ep, min(max(1, depth), room - 2))
                if settle > 0:
                    w.settled_from = (ep.index, ep.handed)  # its span in the timeline begins there
                    return Segment(CACHED, settle, batch=runner.cached)
        quota = w.quota(ep.handed)
        steps = min(quota, room)
        if spec.mode.value == "SYNTHETIC":
            steps = self._fit(ep, steps)
        if steps <= 0:
            return self._pass_rest(ep)
        resume = w.started or w.begun  # its begin ran already (before the lead-in): a device sync before the clock
        w.started = True
        if isinstance(w.args.ranges, TorchRanges):  # the profiled warm-up: its trace names the steps this stretch holds
            w.args.ranges.stretch(w.stamps.done, min(steps, self._room(ep)))
        w.open_segment(ep.index, ep.handed, steps)
        ep.window = w
        if spec.mode.value == "SYNTHETIC":
            ep.queue_ready = False  # the workers fill their queue while cached batches are handed out
        kind = SYNTHETIC if spec.mode.value == "SYNTHETIC" else FULL
        batch = runner.cached if kind == SYNTHETIC else None
        return Segment(kind, steps, w, batch, finishes=steps == quota, resume=resume)

    def _pass_rest(self, ep: EpochState) -> Segment:
        """The window cannot go on in this epoch (its pass's known length is reached): what the pass still holds
        is handed out plain."""
        self._repay(ep)
        if ep.exhausted:
            return self._epoch_over(ep)
        return Segment(PLAIN, sys.maxsize)

    def _take_real(self, ep: EpochState) -> Any:
        """A real batch of ``ep`` for the cached one (one hand-out fewer owed to the pass); NOTHING at its end."""
        batch = self._next(ep)
        if batch is not NOTHING:
            ep.owed -= 1
        return batch

    def _pass_length(self) -> Optional[int]:
        """A loader without ``len()``: the shortest of its passes seen, so that a SYNTHETIC stretch stops at it."""
        seen = self._runner.pass_lengths + ([] if self._seen is None else [self._seen])
        return min(seen) if seen else None
