"""One benchmark run: a thin coordinator of the schedule's machine, the trial loops and the sink.

``iterate()`` is what a wrapper's ``__iter__`` returns. Its first call begins the benchmark (the run's context, the
start-up lines, the loader sweep), then the :class:`~benchy.session.driver.Driver` feeds the machine
(:mod:`benchy.core.machine`) and carries out its actions: IO trials and hidden extras on passes of benchy's own,
windows in the loop's epochs (:class:`~benchy.session.loop.Loop` places them), the end. What was measured is the
:class:`~benchy.session.tally.Tally`'s; everything that depends on the rank is one
:class:`~benchy.session.context.RunContext`; the endings (the schedule's end, the script's exit, a signal) are
:class:`~benchy.session.lifecycle.Lifecycle`'s. One benchmark at a time per process: the first wrapper iterated
runs it (see ``registry``).
"""

from __future__ import annotations

import enum
import os
import sys
import time
import weakref
from typing import Any, Callable, Iterator, Optional, Tuple

from ..core import events as ev
from ..core import machine as m
from ..core.config import Config
from ..core.outcomes import Interruption, Outcomes, Reason
from ..core.progress import Progress, Where, epochs_needed, imprecise, likely_more, not_run, progress, steps_needed
from ..core.results import RunResults, Snapshot
from ..core.schedule import Extra, Schedule, TrialSpec
from ..core.sweep import queue_depth
from ..measure.horizon import loop_horizon
from ..measure.profiling import CudaProfilerApi
from ..measure.ranks import DistributedError, agree
from ..measure.rng import kept
from ..measure.window import WindowRun
from .console import Output
from .context import RunContext
from .driver import Driver
from .lifecycle import Lifecycle
from .loop import LOOP_BATCHES, LoaderFacts
from .registry import REGISTRY, Registry
from .sides import SideEnv, off_by_config
from .sides import sweep as sweep_side
from .sink import ResultSink
from .tally import Tally
from .trials import OwnPasses, TrialRunner

__all__ = ["LOOP_BATCHES", "LoaderFacts", "Session"]


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
        self.clock = clock
        self._loader = loader
        self._workers = loader.workers  # the sweep may change it (sweep_apply)
        self._h2d_copy = h2d_copy  # the IO_H2D copy (tests inject one; else the accelerator in use)
        own = loader.own() if loader.own is not None else OwnPasses(loader.make_iterator)
        self.runner = TrialRunner(
            config, own, loader.batch_size, clock, constant=loader.batch_samples, queue_depth=loader.queue_depth, say=self._say
        )
        self.tally = Tally(config, self.runner)
        # IO trials and FULL windows in whole rounds of the loader's workers (core.schedule).
        schedule = Schedule.from_config(config).with_cycle(loader.workers)
        self.driver = Driver(self, schedule, loader, self.runner, self.tally, clock)
        self.loop = self.driver.loop
        self._output, self._profiler_api, self._exit = output, profiler_api, exit
        self._ctx: Optional[RunContext] = None
        self._state = State.NEW
        self.pid = os.getpid()  # the process the benchmark runs in (a forked child is not it)
        self.registry = registry
        self.record = registry.register(loader.kind, loader.where)
        self.record.session = weakref.ref(self)
        self.advised: Optional[int] = None  # the exit status benchy advises for CI, once the benchmark ended
        self.life = Lifecycle(self, self.tally)

    # --- what the wrappers, the driver and the endings read ---------------------------------------------

    @property
    def schedule(self) -> Schedule:
        return self.driver.schedule

    @property
    def machine(self) -> m.State:
        return self.driver.state

    @property
    def results(self) -> RunResults:
        return self.tally.results

    @property
    def outcomes(self) -> Outcomes:
        return self.tally.outcomes

    @property
    def stopped_at(self) -> Optional[int]:
        return self.driver.stopped_at

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
        """True when this wrapper is the one benchmarked in its process (decided at its first iter())."""
        return self.record.benchmarked

    @property
    def complete(self) -> bool:
        """Measuring is over (the verdict stands, or the plan ran): a script that ends now leaves a complete run."""
        return self.driver.state.decided_phase

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
    def epochs_started(self) -> int:
        return self.loop.epochs_started

    def steps_taken(self) -> int:
        return self.loop.steps_taken()

    def advised_status(self) -> int:
        """The exit status benchy advises for CI: 0 or 3 once the schedule ended, else 4 (incomplete)."""
        return 4 if self.advised is None else self.advised

    def where(self) -> Where:
        """Where the loop is, for the plan's arithmetic (``core.progress``)."""
        loop = self.loop
        return Where(
            loop.epochs_started,
            loop.steps_taken(),
            loop.start_at,
            loop.loop_epoch(),
            loop.left_early,
            self.runner.queue_depth,
            self.schedule.cycle,
        )

    def steps_needed(self) -> int:
        """The loop's steps the schedule takes at the most (an estimate: ``core.progress.steps_needed``)."""
        return steps_needed(self.schedule, self.where())

    def epochs_needed(self) -> Optional[int]:
        """The epochs of the loop's own length the schedule takes at the most (``core.progress.epochs_needed``)."""
        return epochs_needed(self.schedule, self.where())

    def snapshot(self) -> Snapshot:
        """What the sink needs besides the results, as one value."""
        windows, runner, loop, state = bool(self.schedule.window_plans), self.runner, self.loop, self.driver.state
        return Snapshot(
            results=self.results,
            schedule=m.schedule_state(
                state,
                tuple(t.label for t in self.results.trials),
                self.driver.stopped_at,
                decided_at=self.driver.decided_at,
                decided_seconds=self.driver.seconds[0],
                stopped_seconds=self.driver.seconds[1],
                imprecise=imprecise(self.schedule, state, self.results, runner.queue_depth),
            ),
            epochs_started=loop.epochs_started,
            finished=self.complete and self._state is State.DONE,
            profiler=self.ctx.profilers.block(runner.ranges is not None),
            synthetic_batch_samples=runner.synthetic_samples,
            lookahead=runner.lookahead,
            counting=runner.counting,
            per_batch=runner.constant,
            queue_depth=runner.queue_depth,
            loader=f"{self.record.kind} created at {self.record.where}",
            other_loaders=tuple(self.registry.others()),
            workers=self._workers,
            startup=runner.startup(self.results, self._workers, self._loader.persistent, loop.length),
            tokens=None if runner.tokens is None else runner.tokens.source,
            outcomes=self.outcomes,
            steps_needed=self.steps_needed() if windows else None,
            epoch_length=loop.length,
            epochs_needed=self.epochs_needed() if windows else None,
            steps_taken=loop.steps_taken() if windows else None,
            likely_steps=None
            if self.complete or not windows
            else likely_more(self.schedule, state, self.results, runner.queue_depth),
        )

    def env(self) -> SideEnv:
        """What a side trial may use (``sides.SideEnv``)."""
        return SideEnv(self.config, self.runner, self.sink, self._loader, self._workers, self.tally.running, self._h2d_copy)

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

    # --- what the driver and the endings call (driver.Host, lifecycle.Ended) -----------------------------

    def finish(self) -> None:
        self.life.finish()

    def exchange_failed(self, spec: TrialSpec) -> None:
        self.life.exchange_failed(spec)

    def stop(self, why: Reason) -> None:
        """The benchmark is over, whichever way: no window runs from here on (a side window is cut short: ``why``)."""
        self._state = State.DONE
        self.record.finished = True
        self.driver.stop(why)

    def set_advised(self, status: int) -> None:
        self.advised = self.record.advised = status

    def finish_results(self, final: bool) -> None:
        """The benchmark is over: the FLOPs' count or why there is none; benchy's own pass and cached batch let go."""
        if self.results.flops is None:
            reached = self.driver.state.decided_phase and Extra.FLOPS in self.driver.state.skipped
            self.tally.changed(flops=self.runner.flops(final=final, reached=reached))
        try:
            self.runner.close()
        except Exception:  # a worker already gone
            pass

    def progress(self, raised: Optional[str], failed: Optional[Interruption], running: Optional[str]) -> Progress:
        record = self.record
        again = sum(
            1 for r in self.registry.records if r is not record and r.iterated and not r.benchmarked and r.where == record.where
        )
        return progress(
            self.schedule, self.driver.state, self.results, self.where(), record.where, again, failed, raised, running
        )

    def not_run(self) -> Tuple[TrialSpec, ...]:
        return not_run(self.schedule, self.driver.state, self.runner.queue_depth)

    def running_trial(self) -> Tuple[Optional[TrialSpec], int]:
        return self.driver.running_trial()

    # --- set-up -------------------------------------------------------------------------------------

    def _begin(self) -> None:
        """The benchmark begins (at the first ``iter()``, every rank together): the run's context, the plan's check
        across ranks, the loop's known length, the start-up lines, the sweep, then the machine's first actions."""
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
        self.tally.results = off_by_config(self.config, self.results)
        self.loop.read_length()
        if self.schedule.horizon is None and self.config.general.loop_steps == "auto" and self.schedule.window_plans:
            found = loop_horizon()
            if found is not None:  # from now: the schedule's count is from the loop's first batch
                self.driver.replan(self.schedule.with_horizon(found + self.loop.start_at))
        ctx.sink.clean_stale()
        ctx.sink.started(self.schedule, self.config, self.snapshot(), ctx.ranges is not None, self.runner.queue_depth)
        self.life.install()
        with kept(self._loader.generators()):
            try:
                self.tally.results = sweep_side.run(self.env(), self.results)
            finally:
                self.runner.close_own()
        if self.results.sweep_applied is not None:
            self._workers = self.results.sweep_applied.num_workers
            self.runner.queue_depth = queue_depth(self._workers, self.results.sweep_applied.prefetch_factor)
            self.driver.replan(self.schedule.with_cycle(self._workers))
        if not m.rounds_fit(self.loop.length, self.schedule.cycle):
            # Epochs shorter than two rounds of the workers hold no whole round after a new pass's lead-in: the trials
            # count period by period (the JSON's loader_round says 1).
            self.driver.replan(self.schedule.with_cycle(1))
        self.driver.feed(m.Begin(self.runner.queue_depth, self.driver.room(), self.loop.length))

    def _become_plain(self) -> Iterator[Any]:
        self._state = State.PLAIN
        owner, where = self.registry.owner, self.record.where
        if self.ctx.rank == 0 and where not in self.registry.noted:  # once per creation site
            self.registry.noted.add(where)
            running = f"{owner.kind} created at {owner.where}" if owner is not None else None
            self._say(ev.LoaderPlain(self.record.kind, where, running, owner is not None and owner.where == where))
        return iter(self._loader.make_iterator())

    def _say(self, event: Any) -> None:
        self.sink.say(event)
