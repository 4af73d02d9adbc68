"""The schedule's machine, driven: its actions carried out, each trial's outcome handed back (glue, no hot loop).

:class:`Driver` holds the machine's state (:mod:`benchy.core.machine`) and does what it says: an IO trial or a hidden
extra now, on a pass of benchy's own with the user's random streams kept (:mod:`benchy.measure.rng`); a window, a
side window or the FLOPs' count when the loop asks for its next work (it is the loop's
:class:`~benchy.session.loop.Driver`); the end, through its host. Each trial that counts goes through the
:class:`~benchy.session.tally.Tally`, and its event back to the machine. It reaches the session only through
:class:`Host`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any, Callable, Optional, Protocol, Tuple

from ..core import events as ev
from ..core import machine as m
from ..core.outcomes import Interruption, Reason, Why
from ..core.results import Snapshot, TrialResult
from ..core.schedule import Extra, Mode, Schedule, TrialSpec
from ..measure.ranks import DistributedError
from ..measure.rng import kept
from ..measure.window import WindowRun
from .context import RunContext
from .loop import FlopsWork, LoaderFacts, Loop, Work
from .sides import HIDDEN, Running, SideEnv
from .tally import Tally
from .trials import TrialRunner

__all__ = ["Driver", "Host"]


class Host(Protocol):
    """What the driver needs of its session."""

    @property
    def running(self) -> bool: ...

    @property
    def exiting(self) -> bool: ...

    @property
    def ctx(self) -> RunContext: ...

    def snapshot(self) -> Snapshot: ...

    def env(self) -> SideEnv: ...

    def finish(self) -> None: ...

    def exchange_failed(self, spec: TrialSpec) -> None: ...


class Driver:
    """The machine of one benchmark, driven (see the module)."""

    def __init__(
        self,
        host: Host,
        schedule: Schedule,
        loader: LoaderFacts,
        runner: TrialRunner,
        tally: Tally,
        clock: Callable[[], float],
    ) -> None:
        self._host, self.schedule, self._runner, self._tally = host, schedule, runner, tally
        self._generators, self._clock = loader.generators, clock
        self.loop = self._loop = Loop(self, loader, runner, clock)  # the loop's epochs, which this drives
        self.state = m.start(schedule)
        self.stopped_at: Optional[int] = None  # the loop's steps when measuring stopped (the verdict decided, ...)
        self.decided_at: Optional[int] = None  # the loop's steps when the verdict was first decided
        self.began: Optional[float] = None  # the clock when the benchmark began (its Begin)
        self.seconds: Tuple[Optional[float], Optional[float]] = (None, None)  # to the decision, to measuring's end
        self._action: Optional[m.Action] = None  # the machine's last action, waiting for the loop (a window, ...)
        self._side = Running()  # the side window that runs now, if any
        self._side_said = False
        # The last FULL window: when its clock stopped and its mean period. A FULL window right after it meets the
        # batches the workers made during benchy's pause between them: about one a period of it (its lead-in's backlog).
        self._full: Optional[Tuple[float, float]] = None

    def replan(self, schedule: Schedule) -> None:
        """Before it begins: the plan with what was learnt at the start (the loop's known length)."""
        self.schedule, self.state = schedule, m.start(schedule)

    @property
    def running(self) -> bool:
        return self._host.running

    @property
    def exiting(self) -> bool:
        return self._host.exiting

    def room(self) -> Optional[int]:
        """The loop's steps left where its length is known."""
        horizon = self.schedule.horizon
        return None if horizon is None else max(0, horizon - self._loop.start_at - self._loop.steps_taken())

    # --- the loop's driver (session.loop.Driver) ---------------------------------------------------

    def next_work(self) -> Optional[Work]:
        """The loop's next window (or the FLOPs' count); None once the schedule is over."""
        action, self._action = self._action, None
        if isinstance(action, m.OpenWindow):
            return self._window(action.spec)
        if isinstance(action, m.RunExtra) and action.extra is Extra.FLOPS:
            if self._runner.world == 1:
                return FlopsWork()
            self._tally.changed(flops=self._runner.flops(final=True))  # why not, with several ranks
            self.feed(m.ExtraEnded(action.extra, self.room()))
            return self.next_work()
        if isinstance(action, m.RunExtra) and action.spec is not None:
            started, self._tally.results = self._side.start(action.extra, self._host.env(), self._tally.results)
            if not started:
                self.feed(m.ExtraEnded(action.extra, self.room()))
                return self.next_work()
            self._loop.settle = action.extra is Extra.CONTENTION  # the fork's copy-on-write: first steps untimed
            return self._window(action.spec)
        return None

    def window_done(self, w: WindowRun) -> None:
        """A window measured its periods: a side window's figures recorded; a trial counted."""
        runner = self._runner
        if runner.lookahead is None and w.spec.mode is Mode.SYNTHETIC and not w.spec.variant:
            runner.lookahead = w.fetches_ahead()  # from the series, before the result uses them up
            if runner.lookahead:
                self._say(ev.LookaheadFound())
        result = runner.finish(w.result()) if not w.spec.variant else runner.with_system(w.result())
        extra = self._side.extra
        if extra is not None:
            self._tally.results = self._side.finish(self._host.env(), result, self._tally.results)
            self._host.ctx.sink.trial(result)
            self.feed(m.ExtraEnded(extra, self.room()))
            return
        periods = len(result.step_seconds)
        period = result.seconds / periods if periods else 0.0  # the mean: a bursty loader's median is a burst's
        self._full = (self._clock(), period) if w.spec.mode is Mode.FULL and period > 0 else None
        self.count(result)

    def flops_done(self, work: FlopsWork, completed: bool) -> None:
        self._tally.changed(flops=self._runner.flops(final=False))
        self.feed(m.ExtraEnded(Extra.FLOPS, self.room()))

    def lose(self, item: Interruption) -> None:
        """A trial that did not count: recorded and said (never raises); a side window's loss costs only its figures."""
        if self._loop.window is not None and self._loop.window.spec == item.spec:
            self._loop.discard()
        self._runner.sampler.stop()
        extra = self._side.extra
        if extra is not None and item.spec.variant == extra.value:
            self._tally.results = self._side.stop(
                Reason(Why.WINDOW_LOST, item.spec.label, cause=item.reason), self._tally.results
            )
            self.feed(m.ExtraEnded(extra, self.room()))
            return
        self._tally.interrupt(item)
        try:
            self._profiler_after(item.spec)
            self._say(ev.TrialLost(item))
            self._host.ctx.sink.checkpoint(self._host.snapshot())
        except Exception:  # during interpreter shutdown stdout may be gone
            pass
        if self.running and item.spec.mode is not Mode.IO:
            self.feed(m.Lost(item.spec, self.room()))

    def side_served(self) -> None:
        self._tally.outcomes = self._tally.outcomes.side()
        if not self._side_said and self.running:
            self._side_said = True
            w = self._loop.window
            self._say(ev.SideServed(None if w is None else w.spec.label))

    def peeked(self) -> None:
        self._tally.outcomes = self._tally.outcomes.peek()

    # --- the machine ----------------------------------------------------------------------------

    def feed(self, event: m.Event) -> None:
        """``event`` to the machine; its hidden actions carried out now (one pass of benchy's own for the lot), until
        one for the loop (kept for :meth:`next_work`) or the end."""
        if isinstance(event, m.Begin):
            self.began = self._clock()
        self.state, (action,) = m.transition(self.state, event)
        self._notes()
        self._milestones()
        ran = False
        with contextlib.ExitStack() as stack:
            while isinstance(action, m.RunIO) or (isinstance(action, m.RunExtra) and action.extra in HIDDEN):
                if not ran:
                    ran, self._full = True, None
                    stack.enter_context(kept(self._generators()))
                    stack.callback(self._runner.close_own)
                if isinstance(action, m.RunIO):
                    first = self.state.issued(Mode.IO) + self.state.issued(Mode.IO, warmup=True) == 1
                    event = self.count(self._tally.io(action.spec, self._host.ctx, first, self.lose), feed=False)
                else:
                    self._tally.side(action.extra, self._host.env())
                    event = m.ExtraEnded(action.extra, self.room())
                self.state, (action,) = m.transition(self.state, event)
                self._notes()
                self._milestones()
        if ran:
            self._host.ctx.sink.checkpoint(self._host.snapshot())
        if isinstance(action, m.Finish):
            self._host.finish()
        else:
            self._action = action

    def _milestones(self) -> None:
        """The loop's steps and the seconds since the benchmark began when the verdict was first decided, and when
        measuring stopped (each once)."""
        since = None if self.began is None else self._clock() - self.began
        if self.decided_at is None and self.state.judgement.decided:
            self.decided_at, self.seconds = self._loop.steps_taken(), (since, self.seconds[1])
        if self.stopped_at is None and self.state.stop is not None:
            self.stopped_at, self.seconds = self._loop.steps_taken(), (self.seconds[0], since)

    def count(self, result: TrialResult, feed: bool = True) -> m.Event:
        """A scheduled trial that counted (``Tally.count``); then the machine hears it."""
        try:
            event = self._tally.count(result, self._host.ctx, self.schedule, self.room())
        except DistributedError:
            self._host.exchange_failed(result.spec)
            raise
        self._profiler_after(result.spec, event.judgement)
        if feed:
            _, (after,) = m.transition(self.state, event)  # what comes next (a pure look ahead)
            if not (result.spec.mode is Mode.FULL and isinstance(after, m.OpenWindow) and after.spec.mode is Mode.FULL):
                # Between two FULL windows the JSON waits for the next trial: the loader's workers make batches ahead
                # during every pause of the loop, and the second window would start on them.
                self._host.ctx.sink.checkpoint(self._host.snapshot())
            self.feed(event)
        return event

    def _window(self, spec: TrialSpec) -> WindowRun:
        ctx = self._host.ctx
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self._runner.ranges)
        w = self._runner.window(spec, ctx.out, ranges)
        last, self._full = self._full, None
        if self._runner.world > 1:
            # Both are read off this rank's clock: ranks could differ, and then place their windows at different steps
            # of a loop whose collectives keep them in step. With several ranks, the first period is left out and the
            # lead-in taken, always.
            return w
        w.sound_first = self._runner.lookahead is False
        if last is not None and spec.mode is Mode.FULL:
            # Right after another FULL window: the workers made about a batch a period of benchy's pause between them.
            w.backlog = math.ceil((self._clock() - last[0]) / last[1])
        return w

    # --- the endings ----------------------------------------------------------------------------

    def stop(self, why: Reason) -> None:
        """No window runs from here on: the running one is dropped, a side window's cut short (``why``)."""
        work = self._loop.discard()
        if isinstance(work, WindowRun):
            self._tally.results = self._side.stop(Reason(Why.WINDOW_LOST, work.spec.label, cause=why), self._tally.results)

    def running_trial(self) -> Tuple[Optional[TrialSpec], int]:
        """The trial running now (a hidden IO or side trial, or the window) and the periods it measured."""
        if self._tally.hidden is not None:
            return self._tally.hidden, 0
        w = self._loop.window
        if w is None:
            return None, 0
        return w.spec, max(0, w.measured + max(0, w.open_count() - 1))

    def _profiler_after(self, spec: TrialSpec, judgement: Optional[m.Judgement] = None) -> None:
        """After ``spec``: the capture stops where no trial of its kinds may follow (read with ``judgement``, the
        evidence this trial brought, where it counted)."""
        profilers = self._host.ctx.profilers
        state = self.state if judgement is None else dataclasses.replace(self.state, judgement=judgement)
        more = any(state.may_run(mode) for mode in profilers.kinds)
        for event in profilers.after_trial(spec, more):
            self._say(event)

    def _notes(self) -> None:
        """What the machine noted (a warm-up ended, measuring stopped), said once each."""
        notes = self.state.notes
        if notes:
            self.state = dataclasses.replace(self.state, notes=())
            for note in notes:
                self._say(note)

    def _say(self, event: Any) -> None:
        self._host.ctx.sink.say(event)
