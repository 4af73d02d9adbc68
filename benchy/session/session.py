"""One benchmark run: a thin coordinator of the schedule's machine, the trial loops and the sink.

``iterate()`` is what a wrapper's ``__iter__`` returns. Its first call begins the benchmark: the machine
(:mod:`benchy.core.machine`) hears :class:`~benchy.core.machine.Begin`, and each action it returns is carried
out here: an IO trial or a hidden side (on passes of benchy's own, with the user's random streams kept by
:mod:`benchy.measure.rng`) now; a window or the FLOPs' count when the loop asks for its next work
(:class:`~benchy.session.loop.Loop` places them in the loop's epochs); the end (the summary, and the process
ended with ``exit_after_tests``). Each trial's outcome goes back to the machine as an event. What the session
has to say goes to the sink as events (:mod:`benchy.session.events`); everything that depends on the rank is
one :class:`~benchy.session.context.RunContext`; the endings (the schedule's end, the script's exit, a signal)
are :class:`~benchy.session.lifecycle.Lifecycle`'s. One benchmark at a time per process: the first wrapper
iterated runs it (see ``registry``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import statistics
import sys
import time
import weakref
from array import array
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from ..core import machine as m
from ..core.config import Config
from ..core.outcomes import Interruption, Outcomes
from ..core.results import RunResults, ScheduleState, Snapshot, TrialResult, folded
from ..core.schedule import Extra, Mode, Schedule, TrialSpec
from ..core.startup import Startup, startup
from ..core.sweep import queue_depth
from ..core.verdict import trials_to_decide
from ..measure.horizon import loop_horizon
from ..measure.profiling import CudaProfilerApi
from ..measure.ranks import DistributedError, agree, combine
from ..measure.rng import kept
from ..measure.window import WindowRun
from . import events as ev
from .console import Output
from .context import RunContext
from .lifecycle import Lifecycle
from .loop import LOOP_BATCHES, FlopsWork, LoaderFacts, Loop, Work
from .registry import REGISTRY, Registry
from .sides import HIDDEN, WINDOWS, SideEnv
from .sides import sweep as sweep_side
from .sink import Progress, ResultSink
from .trials import OwnPasses, TrialRunner

__all__ = ["LOOP_BATCHES", "LoaderFacts", "Session"]


# A pause of benchy's between two FULL windows shorter than this share of a period needs no lead-in before the second.
PAUSE_SHARE = 0.1


class State(enum.Enum):
    NEW = "new"  # no iter() yet
    RUNNING = "running"
    DONE = "done"  # the schedule is over, whichever way
    PLAIN = "plain"  # another loader runs the benchmark, or a copy made after it finished


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
        self.machine = m.start(self.schedule)
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
        self.loop = Loop(self, loader, self.runner, clock, config.general.report_freq > 0)
        self._output, self._profiler_api, self._exit = output, profiler_api, exit
        self._ctx: Optional[RunContext] = None
        self._state = State.NEW
        self.pid = os.getpid()  # the process the benchmark runs in (a forked child is not it)
        self.registry = registry
        self.record = registry.register(loader.kind, loader.where)
        self.record.session = weakref.ref(self)
        self.hidden: Optional[TrialSpec] = None  # the IO or side trial running now, if any
        self._action: Optional[m.Action] = None  # the machine's last action, waiting for the loop (a window, ...)
        self._side: Optional[Tuple[Extra, Any]] = None  # the running side window's kind and helper
        self._side_said = False
        # The last FULL window: when its clock stopped and its median period. A FULL window right after it, with
        # nothing of benchy's between but far less than a period, needs no lead-in: the workers had no time to
        # make a batch more than in FULL's steady state.
        self._full: Optional[Tuple[float, float]] = None
        self._warm: Dict[Mode, array[float]] = {}  # each mode's latest warm-up periods (nwarmup: auto)
        self.advised: Optional[int] = None  # the exit status benchy advises for CI, once the benchmark ended
        self.stopped_at: Optional[int] = None  # the loop's steps when measuring stopped (the verdict decided, ...)
        self.life = Lifecycle(self)

    # --- what the wrappers and the endings read ---------------------------------------------------

    @property
    def done(self) -> bool:
        """True once the schedule is over, or when another loader is the benchmarked one."""
        return self._state in (State.DONE, State.PLAIN)

    @property
    def running(self) -> bool:
        return self._state is State.RUNNING

    @property
    def exiting(self) -> bool:
        return self.life.exiting

    @property
    def benchmarked(self) -> bool:
        """True when this wrapper is the one benchmarked in its process (decided at first iter())."""
        return self.record.benchmarked

    @property
    def complete(self) -> bool:
        """Measuring is over (the verdict stands, or the plan ran): a script that ends now leaves a complete run."""
        return self.machine.decided_phase

    @property
    def window(self) -> Optional[WindowRun]:
        """The window that runs now (None between windows)."""
        return self.loop.window

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
    def epoch_length(self) -> Optional[int]:
        return self.loop.length

    @property
    def epochs_started(self) -> int:
        return self.loop.epochs_started

    def advised_status(self) -> int:
        """The exit status benchy advises for CI: 0 or 3 once the schedule ended, else 4 (incomplete)."""
        return 4 if self.advised is None else self.advised

    def steps_taken(self) -> int:
        return self.loop.steps_taken()

    def steps_needed(self, decided_after: Optional[int] = None) -> int:
        """The loop's steps the schedule takes at the most (``decided_after``: where the verdict is decided after that
        many SYNTHETIC trials), an estimate, in epochs of the loop's own length (long enough to hold a window)."""
        per = self.loop.loop_epoch()
        fits = per is None or per >= m.min_epoch_steps(self.runner.queue_depth)
        return m.steps_of(self.schedule, self.runner.queue_depth, per if fits else None, decided_after)

    def epochs_needed(self) -> Optional[int]:
        """The epochs of the loop's own length it runs to finish the schedule (at the most), counted as the script
        counts them; None where that length is unknown or too short to hold a window."""
        if not self.schedule.window_plans:
            return 1
        per = self.loop.loop_epoch()
        if per is None or per < m.min_epoch_steps(self.runner.queue_depth):
            return None
        return m.epochs_for(self.steps_needed(), per, self.loop.start_at)

    def snapshot(self) -> Snapshot:
        """What the sink needs besides the results, as one value."""
        state, ctx = self.machine, self.ctx
        windows = bool(self.schedule.window_plans)
        return Snapshot(
            results=self.results,
            schedule=ScheduleState(
                adaptive=self.schedule.adaptive,
                precision=self.schedule.precision,
                windows_needed=self.schedule.windows_needed,
                windows_fewest=self.schedule.windows_fewest,
                order=tuple(t.label for t in self.results.trials),
                warmups=state.warmups_used(),
                decision_confidence=self.schedule.decision_confidence,
                stop=None if state.stop is None else state.stop.value,
                extras=tuple(e.value for e in self.schedule.extras),
                extras_not_run=tuple((e.value, "horizon") for e in state.skipped)
                + tuple((e.value, "ended") for e in state.extras),
                horizon=self.schedule.horizon,
                stopped_at=self.stopped_at,
            ),
            epochs_started=self.loop.epochs_started,
            finished=self.complete and self._state is State.DONE,
            profiler=ctx.profilers.block(self.runner.ranges is not None),
            synthetic_batch_samples=self.runner.synthetic_samples,
            lookahead=self.runner.lookahead,
            counting=self.runner.counting,
            loader=f"{self.record.kind} created at {self.record.where}",
            other_loaders=tuple(self.registry.others()),
            workers=self._workers,
            startup=self._startup(),
            tokens=None if self.runner.tokens is None else self.runner.tokens.source,
            outcomes=self.outcomes,
            steps_needed=self.steps_needed() if windows else None,
            epoch_length=self.loop.length,
            epochs_needed=self.epochs_needed() if windows else None,
            steps_taken=self.loop.steps_taken() if windows else None,
            likely_steps=None if self.complete or not windows else self._likely_more(),
        )

    # --- what the wrappers call -------------------------------------------------------------------

    def iterate(self) -> Iterator[Any]:
        """The iterator for the loop's next ``iter()``: an epoch while the schedule runs, else the plain one."""
        if self._state in (State.DONE, State.PLAIN):
            return iter(self._loader.make_iterator())
        if self._state is State.NEW:
            if not self.registry.claim(self.record):
                return self._become_plain()
            self._begin()
            if self._state is not State.RUNNING:  # only IO was scheduled: it ran, and the schedule is over
                return iter(self._loader.make_iterator())
        made = self.clock()  # before iter(): the pass's start-up includes starting its workers
        return self.loop.epoch(iter(self._loader.make_iterator()), made)

    def adopt(self, inner: Iterator[Any], handed: int) -> Iterator[Any]:
        """The loop's epoch from here on, over ``inner`` (a pass that has handed out ``handed`` batches already):
        ``benchy run`` chose this loader part-way through a plain pass. Begins the benchmark."""
        if self._state is State.NEW:
            if not self.registry.claim(self.record):
                return inner
            self.loop.start_at = handed  # the schedule's steps start there: its epochs count from the epoch's start
            self._begin()
        if self._state is not State.RUNNING:
            return inner
        return self.loop.epoch(inner, self.clock(), handed)

    def copied(self) -> bool:
        """A copy or pickle of the wrapper is being made: whether this benchmark is over (the copy is then the
        plain loader; otherwise it is a new wrapper that has measured nothing)."""
        self.record.copied = True
        return self.done

    def retire(self) -> None:
        """This wrapper is the plain loader for good (a copy of a wrapper whose benchmark is over)."""
        self._state = State.PLAIN
        self.record.iterated = self.record.finished = True

    # --- the loop's driver (session.loop.Driver) ---------------------------------------------------

    def next_work(self) -> Optional[Work]:
        """The loop's next window (or the FLOPs' count); None once the schedule is over."""
        action, self._action = self._action, None
        if isinstance(action, m.OpenWindow):
            return self._window(action.spec)
        if isinstance(action, m.RunExtra) and action.extra is Extra.FLOPS:
            if self.runner.world == 1:
                return FlopsWork()
            self.results = self.results.changed(flops=self.runner.flops(final=True))  # why not, with several ranks
            self._feed(m.ExtraEnded(action.extra, self._room()))
            return self.next_work()
        if isinstance(action, m.RunExtra) and action.spec is not None:
            side = WINDOWS[action.extra]
            helper, self.results = side.start(self._env(), self.results)
            if helper is None:
                self._feed(m.ExtraEnded(action.extra))
                return self.next_work()
            self._side = (action.extra, helper)
            self.loop.settle = action.extra is Extra.CONTENTION  # the fork's copy-on-write: first steps untimed
            return self._window(action.spec)
        return None

    def window_done(self, w: WindowRun) -> None:
        """A window measured its periods: a side window's figures recorded; a trial counted."""
        result = self.runner.finish(w.result()) if not w.spec.variant else self.runner.with_system(w.result())
        if self.runner.lookahead is None and w.spec.mode is Mode.SYNTHETIC and not w.spec.variant:
            self.runner.lookahead = w.fetches_ahead()
            if self.runner.lookahead:
                self._say(ev.LookaheadFound())
        if self._side is not None:
            extra, helper = self._side
            self._side = None
            self.results = WINDOWS[extra].finish(self._env(), helper, result, self.results)
            self.results = self.results.changed(diagnostics=(*self.results.diagnostics, folded(result)))
            self.sink.trial(result)
            self._feed(m.ExtraEnded(extra))
            return
        period = result.median_period
        self._full = (self.clock(), period) if w.spec.mode is Mode.FULL and period else None
        self._count(result)

    def flops_done(self, work: FlopsWork, completed: bool) -> None:
        self.results = self.results.changed(flops=self.runner.flops(final=False))
        self._feed(m.ExtraEnded(Extra.FLOPS))

    def lose(self, item: Interruption) -> None:
        """A trial that did not count: recorded and said (never raises); a side window's loss costs only its figures."""
        if self.loop.window is not None and self.loop.window.spec == item.spec:
            self.loop.discard()
        self.runner.sampler.stop()
        if self._side is not None and item.spec.variant == self._side[0].value:
            self._stop_side(f"{item.spec.label}: {item.reason}")
            self._feed(m.ExtraEnded(Extra(item.spec.variant)))
            return
        self.interrupt(item)
        try:
            self._profiler_after(item.spec)
            self._say(ev.TrialLost(item))
            self.sink.checkpoint(self.snapshot())
        except Exception:  # during interpreter shutdown stdout may be gone
            pass
        if self.running and item.spec.mode is not Mode.IO:
            self._feed(m.Lost(item.spec, self._room()))

    def side_served(self) -> None:
        self.outcomes = self.outcomes.side()
        if not self._side_said and self.running:
            self._side_said = True
            w = self.loop.window
            self._say(ev.SideServed(None if w is None else w.spec.label))

    def peeked(self) -> None:
        self.outcomes = self.outcomes.peek()

    # --- what the endings call ---------------------------------------------------------------------

    def stop(self, why: str) -> None:
        """The benchmark is over, whichever way: no window runs from here on; a running side window is cut short (``why``)."""
        self._state = State.DONE
        self.record.finished = True
        work = self.loop.discard()
        if self._side is not None and isinstance(work, WindowRun):
            self._stop_side(f"{work.spec.label}: {why}")

    def interrupt(self, item: Interruption) -> None:
        """A trial that did not count, recorded (the endings say why)."""
        self.outcomes = self.outcomes.lose(item)

    def signalled(self, name: str, failed: Tuple[Any, ...]) -> None:
        self.outcomes = self.outcomes.signalled(name).with_failed(failed)

    def failed_ranks(self, failed: Tuple[Any, ...]) -> None:
        self.outcomes = self.outcomes.with_failed(failed)

    def set_advised(self, status: int) -> None:
        self.advised = self.record.advised = status

    def finish_results(self, final: bool) -> None:
        """The benchmark is over: the FLOPs' count or why there is none; benchy's own pass and cached batch let go."""
        if self.results.flops is None:
            reached = self.machine.decided_phase and Extra.FLOPS in self.machine.skipped
            self.results = self.results.changed(flops=self.runner.flops(final=final, reached=reached))
        try:
            self.runner.close()
        except Exception:  # a worker already gone
            pass

    def progress(self, raised: Optional[str], failed: Optional[Interruption], running: Optional[str]) -> Progress:
        """How far the loop got, against what a decision would likely take and the schedule's bound."""
        per, steps, depth = self.loop.loop_epoch(), self.loop.steps_taken(), self.runner.queue_depth
        bound = self.steps_needed()
        epochs = self.epochs_needed()
        if epochs is not None and per is not None and epochs <= self.loop.epochs_started:
            # The estimate fell short of this very run: count the epochs the steps still missing take.
            epochs = self.loop.epochs_started + -(-max(1, bound - steps) // per)
        likely = self._likely_more()
        likely_epochs = None
        if likely is not None and epochs is not None and per is not None:
            likely_epochs = max(self.loop.epochs_started + 1, m.epochs_for(steps + likely, per, self.loop.start_at) or 0)
        fits = None
        if not self.schedule.stops_early and (epochs is not None or per is None):
            fits = m.nbatches_to_fit(self.schedule, steps, depth, per)
        record = self.record
        again = sum(
            1 for r in self.registry.records if r is not record and r.iterated and not r.benchmarked and r.where == record.where
        )
        return Progress(
            self.loop.epochs_started, steps, bound, per, epochs, record.where, again, failed, raised, running,
            left_early=self.loop.left_early, min_steps=m.min_epoch_steps(depth), queue_depth=depth, fits=fits,
            likely=likely, likely_epochs=likely_epochs,
        )  # fmt: skip

    def _likely_more(self) -> Optional[int]:
        """The loop's steps a decision would likely still take (None: the sides are too close to tell in the
        schedule's bound), from the trials so far (:func:`~benchy.core.verdict.trials_to_decide`)."""
        io, syn = ([t.throughput for t in self.results.measured(mode)] for mode in (Mode.IO, Mode.SYNTHETIC))
        if len(io) >= 2 and len(syn) >= 2:
            more = trials_to_decide(io, syn, self.schedule.decision_confidence, self.schedule.plans[0].max_trials)
            if more is None:
                return None
        else:
            more = max(1, 3 - len(syn))  # a gap of 2x or more decides with about three trials a side
        state, steps = self.machine, 0
        for mode in (Mode.SYNTHETIC, Mode.FULL):
            plan = self.schedule.plan(mode)
            if plan is None:
                continue
            start = state.windows(mode)
            warm = 1 if state.issued(mode) == 0 and mode not in state.warm else 0
            steps += sum(plan.length(start + i) for i in range(more + warm))
            if mode is Mode.FULL:
                steps += (more + warm) * self.runner.queue_depth
        return max(1, steps)

    def not_run(self) -> Tuple[TrialSpec, ...]:
        """With fixed counts, the planned windows that were not issued (an ``auto`` plan names no trials it might have
        run: the warning says what a decision would likely take)."""
        if self.schedule.stops_early:
            return ()
        state = self.machine
        planned = [a.spec for a, _ in m.longest_run(self.schedule, self.runner.queue_depth) if isinstance(a, m.OpenWindow)]
        return tuple(spec for spec in planned if spec.index > state.issued(spec.mode, warmup=spec.warmup))

    def running_trial(self) -> Tuple[Optional[TrialSpec], int]:
        """The trial running now (a hidden IO or side trial, or the window) and the periods it measured."""
        if self.hidden is not None:
            return self.hidden, 0
        w = self.loop.window
        if w is None:
            return None, 0
        return w.spec, max(0, w.measured + max(0, w.open_count() - 1))

    # --- the machine ----------------------------------------------------------------------------

    def _begin(self) -> None:
        """The benchmark begins (at the first ``iter()``, every rank together): the run's context, the plan's check
        across ranks, the start-up lines, the sweep, then the machine's first actions (IO trials, hidden)."""
        self._state = State.RUNNING
        try:
            ctx = self._ctx = RunContext.start(
                self.config, self.schedule, output=self._output, profiler_api=self._profiler_api, exit=self._exit
            )
            if ctx.world > 1:
                agree(ctx.comm, self.schedule.fingerprint(), self.config.general.dist_rank_lists)
        except DistributedError:
            self._state = State.DONE
            self.record.finished = True
            raise
        self.runner.world, self.runner.barrier, self.runner.ranges = ctx.world, ctx.barrier, ctx.ranges
        g = self.config.general
        if not g.stages:  # the extras the config turns off say so where they would have shown
            self.results = self.results.changed(stages_skipped="stages: false")
        if not g.io_h2d:
            self.results = self.results.changed(h2d_skipped="io_h2d: false")
        self.loop.read_length()
        if self.schedule.horizon is None and self.config.general.loop_steps == "auto" and self.schedule.window_plans:
            found = loop_horizon()
            if found is not None:  # from now: the schedule's count is from the loop's first batch
                self.schedule = self.schedule.with_horizon(found + self.loop.start_at)
                self.machine = m.start(self.schedule)
        ctx.sink.clean_stale()
        ctx.sink.started(self.schedule, self.config, self.snapshot(), ctx.ranges is not None, self.runner.queue_depth)
        self.life.install()
        with kept(self._loader.generators()):
            try:
                self.results = sweep_side.run(self._env(), self.results)
            finally:
                self.runner.close_own()
        if self.results.sweep_applied is not None:
            self._workers = self.results.sweep_applied.num_workers
            self.runner.queue_depth = queue_depth(self._workers, self.results.sweep_applied.prefetch_factor)
        self._feed(m.Begin(self.runner.queue_depth, self._room()))

    def _room(self) -> Optional[int]:
        horizon = self.schedule.horizon
        return None if horizon is None else max(0, horizon - self.loop.start_at - self.loop.steps_taken())

    def _feed(self, event: m.Event) -> None:
        """``event`` to the machine; its hidden actions carried out now (on benchy's own pass), until one for the
        loop (kept for :meth:`next_work`) or the end."""
        self.machine, (action,) = m.transition(self.machine, event)
        self._notes()
        if self.stopped_at is None and self.machine.stop is not None:
            self.stopped_at = self.loop.steps_taken()
        ran = False
        with contextlib.ExitStack() as stack:
            while isinstance(action, m.RunIO) or (isinstance(action, m.RunExtra) and action.extra in HIDDEN):
                if not ran:  # one pass of benchy's own for the lot, the user's random streams kept through it
                    ran, self._full = True, None
                    stack.enter_context(kept(self._loader.generators()))
                    stack.callback(self.runner.close_own)
                if isinstance(action, m.RunIO):
                    first = self.machine.issued(Mode.IO) + self.machine.issued(Mode.IO, warmup=True) == 1
                    event = self._io_trial(action.spec, first)
                else:
                    event = self._hidden_side(action.extra)
                self.machine, (action,) = m.transition(self.machine, event)
                self._notes()
        if ran:
            self.sink.checkpoint(self.snapshot())
        if isinstance(action, m.Finish):
            self.life.finish()
        else:
            self._action = action

    def _io_trial(self, spec: TrialSpec, first: bool) -> m.Event:
        """One IO trial on benchy's own pass. Every IO trial but the first starts with the batches the workers
        hold ready taken, untimed: the state of a plain loop that drains the loader as fast as it can."""
        ctx = self.ctx
        if not first:
            self.runner.drain()
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        self.hidden = spec
        try:
            result = self.runner.io(spec, ctx.out, ranges)
        except BaseException as err:
            self.hidden = None
            self.lose(Interruption(spec, 0, f"the data loader raised {type(err).__name__}: {err}", error=True))
            raise
        self.hidden = None
        return self._count(self.runner.finish(result), feed=False)

    def _hidden_side(self, extra: Extra) -> m.Event:
        """A hidden extra; one that raises costs only itself (said, and recorded as skipped)."""
        try:
            self.results = HIDDEN[extra](self._env(), self.results)
        except Exception as err:
            self.hidden = None
            why = f"{extra.value}: raised {type(err).__name__}: {err}"
            self.results = self.results.changed(diagnostics_skipped=(*self.results.diagnostics_skipped, why))
            self._say(ev.SideFailed(extra.value, why))
        return m.ExtraEnded(extra, self._room())

    def _window(self, spec: TrialSpec) -> WindowRun:
        ctx = self.ctx
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        w = self.runner.window(spec, ctx.out, ranges)
        w.sound_first = self.runner.lookahead is False
        last, self._full = self._full, None
        w.lead_in = not (last is not None and spec.mode is Mode.FULL and self.clock() - last[0] < PAUSE_SHARE * last[1])
        return w

    def _count(self, result: TrialResult, feed: bool = True) -> m.Event:
        """A scheduled trial that counted: exchanged with the other ranks, recorded, said; then the machine hears it."""
        plan = self.schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and not result.spec.profiled and plan is not None and plan.nwarmup is None
        ctx = self.ctx
        try:
            change = self._warmup_change(result) if auto_warmup else None
            result, change = combine(ctx.comm, result, change, self.config.general.dist_rank_lists)
        except DistributedError:
            self.life.exchange_failed(result.spec)
            raise
        self.results = self.results.add_trial(result)
        self.outcomes = self.outcomes.count()
        self._profiler_after(result.spec)
        ctx.sink.trial(result)
        event = m.Counted(result.spec, change, m.judge(self.results, self.schedule), self._room())
        if feed:
            self.sink.checkpoint(self.snapshot())
            self._feed(event)
        return event

    def _warmup_change(self, result: TrialResult) -> Optional[float]:
        """How much this mode's step time still changes over its latest warm-up steps (no more kept than it reads)."""
        new = result.step_seconds
        periods = self._warm.get(result.mode, array("d")) + new
        self._warm[result.mode] = periods[-max(10, len(new)) :]
        return m.warmup_change(periods, len(new) // 2)

    def _stop_side(self, why: str) -> None:
        side, self._side = self._side, None
        if side is not None:
            extra, helper = side
            WINDOWS[extra].stop(helper)
            self.results = self.results.changed(diagnostics_skipped=(*self.results.diagnostics_skipped, why))

    def _env(self) -> SideEnv:
        return SideEnv(self.config, self.runner, self.sink, self._loader, self._workers, self._running, self._h2d_copy)

    def _running(self, spec: Optional[TrialSpec]) -> None:
        self.hidden = spec

    def _become_plain(self) -> Iterator[Any]:
        self._state = State.PLAIN
        owner = self.registry.owner
        where = self.record.where
        if self.ctx.rank == 0 and where not in self.registry.noted:  # once per creation site
            self.registry.noted.add(where)
            running = f"{owner.kind} created at {owner.where}" if owner is not None else None
            self._say(ev.LoaderPlain(self.record.kind, where, running, owner is not None and owner.where == where))
        return iter(self._loader.make_iterator())

    def _startup(self) -> Optional[Startup]:
        """The loader's start-up per pass, against an ordinary batch (IO) and an ordinary FULL step."""
        medians = [t.median_period for t in self.results.trials if t.mode is Mode.IO and t.median_period is not None]
        full = [t.median_period for t in self.results.measured(Mode.FULL) if t.median_period is not None]
        return startup(
            self.runner.startups,
            workers=self._workers,
            persistent=self._loader.persistent,
            epoch_batches=self.loop.length,
            batch_seconds=float(statistics.median(medians)) if medians else None,
            full_batch_seconds=float(statistics.median(full)) if full else None,
            started=[self.runner.unix(t) for t in self.runner.pass_starts],
        )

    def _profiler_after(self, spec: TrialSpec) -> None:
        more = any(self.machine.may_run(mode) for mode in self.ctx.profilers.kinds)
        for event in self.ctx.profilers.after_trial(spec, more):
            self._say(event)

    def _notes(self) -> None:
        """What the machine noted (a warm-up ended, measuring stopped), said once each."""
        notes = self.machine.notes
        if notes:
            self.machine = dataclasses.replace(self.machine, notes=())
            for note in notes:
                self._say(note)

    def _say(self, event: Any) -> None:
        self.sink.say(event)
