"""One benchmark run, from the loop's first ``iter()`` to the printed verdict, top to bottom.

A wrapper's ``__iter__`` returns :meth:`Session.iterate`. Its first call begins the benchmark (:meth:`Session._begin`:
the run's context, the start-up lines, the loader sweep, the endings' hooks). Then :meth:`Session._feed` hands the
schedule's machine (:mod:`benchy.core.machine`, pure) an event and carries out its one answer: an IO trial or a hidden
extra at once, on a pass of benchy's own; a window, a side window or the FLOPs' count kept for the loop
(:class:`~benchy.session.loop.Loop`), which asks for it at its next boundary (:meth:`Session.next_work`) and hands it
back finished (:meth:`Session.window_done`) or lost (:meth:`Session.lose`); a trial that counts goes through
:meth:`Session._count` (exchanged with the other ranks, recorded, said) and its event back to the machine. The
endings (the schedule's end, the script's exit, a signal) have a section of their own; the summary and the JSON are the sink's
(:class:`~benchy.session.sink.ResultSink`), from one :class:`~benchy.core.results.Snapshot`.

One benchmark at a time per process: the first wrapper iterated runs it (see ``registry``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import enum
import functools
import math
import os
import signal
import sys
import threading
import time
import weakref
from array import array
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from ..core import events as ev
from ..core import machine as m
from ..core.config import Config
from ..core.exits import EXIT_INCOMPLETE, STATUS_ENV_VAR
from ..core.outcomes import FailedRank, Interruption, Outcomes, Reason, Why, raised
from ..core.progress import Where, epochs_needed, imprecise, likely_more, not_run, progress, steps_needed
from ..core.results import PERIOD_CODE, RunResults, Snapshot, Span, TrialResult, WindowSpan
from ..core.schedule import Extra, Mode, Schedule, TrialSpec
from ..core.sweep import queue_depth
from ..core.verdict import system_means
from ..core.watch import Baseline, Watch, watched
from ..measure.horizon import loop_horizon
from ..measure.profiling import AT_END, AT_EXIT, CudaProfilerApi
from ..measure.ranks import DistributedError, agree, combine
from ..measure.rng import kept
from ..measure.system import SystemSampler
from ..measure.trial import watched_pass
from ..measure.window import WindowRun
from ..results.files import append_status
from ..results.text import run as run_text
from .console import Output
from .context import RunContext
from .loop import FlopsWork, LoaderFacts, Loop, Work
from .registry import REGISTRY, Registry
from .sides import HIDDEN, Running, SideEnv, off_by_config
from .sides import sweep as sweep_side
from .trials import OwnPasses, TrialRunner


class Stage(enum.Enum):
    """Where a wrapper's benchmark is (the schedule's own state is the machine's)."""

    NEW = "new"  # no iter() yet
    RUNNING = "running"
    DONE = "done"  # the schedule is over, whichever way
    PLAIN = "plain"  # another loader runs the benchmark, or a copy made after it finished


class Session:
    """One wrapper's benchmark: the schedule's machine driven, what was measured, the loop's epochs (see the module)."""

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
        # What was measured so far (frozen values, replaced).
        self.results = RunResults()
        self.outcomes = Outcomes()
        self.hidden: Optional[TrialSpec] = None  # the IO or side trial running now on benchy's own pass, if any
        self._warm: Dict[Mode, array[float]] = {}  # each mode's latest warm-up periods (nwarmup: auto)
        # The schedule and its machine: IO trials and FULL windows in whole rounds of the loader's workers (core.schedule).
        self.schedule = Schedule.from_config(config).with_cycle(loader.workers)
        self.machine = m.State(self.schedule)
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
        self.loop = Loop(self, loader, self.runner, clock)
        # This process's part in the run, made at its start (the schedule as it is then) or, before it, this process alone.
        self._start_ctx = functools.partial(RunContext.start, config, output=output, profiler_api=profiler_api, exit=exit)
        self._ctx: Optional[RunContext] = None
        self._stage = Stage.NEW
        self.pid = os.getpid()  # the process the benchmark runs in (a forked child is not it)
        self.registry = registry
        self.record = registry.register(loader.kind, loader.where)
        self.record.session = weakref.ref(self)
        self.advised: Optional[int] = None  # the exit status benchy advises for CI (0, 3 or 4), once the benchmark ended
        self._sigterm_before: Any = None
        self.exiting = False  # inside the interpreter's exit (at_exit): no loader pass is started or advanced
        # The watch over the rest of the run, once the schedule is over and the training goes on (core.watch).
        self.watch: Optional[Watch] = None
        self._watch_passes = 0
        self._watch_rising = False  # the last watched epoch rose
        self._watch_per_batch: Optional[float] = None
        self._watch_sampler: Optional[SystemSampler] = None

    # --- what the wrappers call -------------------------------------------------------------------

    def iterate(self) -> Iterator[Any]:
        """The iterator for the loop's next ``iter()``: an epoch while the schedule runs, else the plain one."""
        if self._stage is Stage.DONE and self.watch is not None and os.getpid() == self.pid:
            return self._watched(iter(self._loader.make_iterator()))
        if self._stage is Stage.NEW:
            if not self.registry.claim(self.record):
                return self._become_plain()
            self._begin()
        if self._stage is not Stage.RUNNING:  # over (only IO was scheduled: it ran, and the schedule is over), or plain
            return iter(self._loader.make_iterator())
        made = self.clock()  # before iter(): the pass's start-up includes starting its workers
        return self.loop.epoch(iter(self._loader.make_iterator()), made)

    def adopt(self, inner: Iterator[Any], handed: int) -> Iterator[Any]:
        """The loop's epoch from here on, over ``inner`` (a pass that has handed out ``handed`` batches already):
        ``benchy run`` chose this loader part-way through a plain pass. Begins the benchmark."""
        if self._stage is Stage.NEW:
            if not self.registry.claim(self.record):
                return inner
            self.loop.start_at = handed  # the schedule's steps start there: its epochs count from the epoch's start
            self._begin()
        if self._stage is not Stage.RUNNING:
            return inner
        return self.loop.epoch(inner, self.clock(), handed)

    def copied(self) -> bool:
        """A copy or pickle of the wrapper is being made: whether this benchmark is over (see ``integrations.wrappers``)."""
        self.record.copied = True
        return self.done

    def retire(self) -> None:
        """This wrapper is the plain loader for good (a copy of a wrapper whose benchmark is over)."""
        self._stage = Stage.PLAIN
        self.record.iterated = self.record.finished = True

    # --- the start ----------------------------------------------------------------------------------

    def _begin(self) -> None:
        """The benchmark begins (at the first ``iter()``, every rank together)."""
        self._stage = Stage.RUNNING
        shared = self._loader.shared() if self.schedule.plan(Mode.IO) is not None else None
        if shared is not None:  # before the ranks compare their plans: each rank's loader is the same kind
            self.results = self.results.changed(io_skipped=Reason(Why.SHARED_ITERATOR, detail=shared))
            self._replan(self.schedule.without_io())
        try:
            ctx = self._ctx = self._start_ctx(self.schedule)
            if ctx.world > 1:
                agree(ctx.comm, self.schedule.fingerprint(), self.config.general.dist_rank_lists)
        except DistributedError:
            self._stage = Stage.DONE
            self.record.finished = True
            raise
        self.runner.world, self.runner.barrier, self.runner.ranges = ctx.world, ctx.barrier, ctx.ranges
        self.results = off_by_config(self.config, self.results)
        self.loop.read_length()
        if self.schedule.horizon is None and self.config.general.loop_steps == "auto" and self.schedule.window_plans:
            found = loop_horizon()
            if found is not None:  # from now: the schedule's count is from the loop's first batch
                self._replan(self.schedule.with_horizon(found + self.loop.start_at))
        ctx.sink.clean_stale()
        if self.results.io_skipped is not None:
            self._say(ev.IoNotRun(self.results.io_skipped))
        ctx.sink.started(self.schedule, self.config, self.snapshot(), ctx.ranges is not None, self.runner.queue_depth)
        self._install_hooks()
        with kept(self._loader.streams()):
            try:
                self.results = sweep_side.run(self.env(), self.results)
            finally:
                self.runner.close_own()
        if self.results.sweep_applied is not None:
            self._workers = self.results.sweep_applied.num_workers
            self.runner.queue_depth = queue_depth(self._workers, self.results.sweep_applied.prefetch_factor)
            self._replan(self.schedule.with_cycle(self._workers))
        if not m.rounds_fit(self.loop.length, self.schedule.cycle):
            # Epochs shorter than two rounds of the workers hold no whole round after a new pass's lead-in: the trials
            # count period by period (the JSON's loader_round says 1).
            self._replan(self.schedule.with_cycle(1))
        self._feed(m.Begin(self.runner.queue_depth, self._room(), self.loop.length))

    def _replan(self, schedule: Schedule) -> None:
        """Before it begins: the plan with what was learnt at the start (the loop's known length)."""
        self.schedule, self.machine = schedule, m.State(schedule)

    def _become_plain(self) -> Iterator[Any]:
        self._stage = Stage.PLAIN
        owner, where = self.registry.owner, self.record.where
        if self.ctx.rank == 0 and where not in self.registry.noted:  # once per creation site
            self.registry.noted.add(where)
            running = f"{owner.kind} created at {owner.where}" if owner is not None else None
            self._say(ev.LoaderPlain(self.record.kind, where, running, owner is not None and owner.where == where))
        return iter(self._loader.make_iterator())

    # --- the machine ----------------------------------------------------------------------------

    def _feed(self, event: m.Event) -> None:
        """``event`` to the machine; what it answers carried out: IO trials and hidden extras now (one pass of benchy's
        own for the lot), each one's event fed back, until an action for the loop (kept for :meth:`next_work`) or the
        end."""
        if isinstance(event, m.Begin):
            self.began = self.clock()
        ran = False
        with contextlib.ExitStack() as stack:
            while True:
                self.machine, action = m.transition(self.machine, event)
                self._notes()
                self._milestones()
                if not (isinstance(action, m.RunIO) or (isinstance(action, m.RunExtra) and action.extra in HIDDEN)):
                    break
                if not ran:
                    ran, self._full = True, None
                    stack.enter_context(kept(self._loader.streams()))
                    stack.callback(self.runner.close_own)
                if isinstance(action, m.RunIO):
                    first = self.machine.issued(Mode.IO) + self.machine.issued(Mode.IO, warmup=True) == 1
                    event = self._count(self._io(action.spec, first))
                else:
                    self._hidden_extra(action.extra)
                    event = m.ExtraEnded(action.extra, self._room())
        if ran:
            self.ctx.sink.checkpoint(self.snapshot())
        if isinstance(action, m.Finish):
            self.finish()
        else:
            self._action = action

    def _room(self) -> Optional[int]:
        """The loop's steps left where its length is known."""
        horizon = self.schedule.horizon
        return None if horizon is None else max(0, horizon - self.loop.start_at - self.loop.steps_taken())

    def _io(self, spec: TrialSpec, first: bool) -> TrialResult:
        """One IO trial on benchy's own pass. Every IO trial but the first starts with the batches the workers hold
        ready taken, untimed: the state of a plain loop that drains the loader as fast as it can."""
        ctx = self.ctx
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        self.hidden = spec
        try:
            result = self.runner.io(spec, ctx.out, ranges, drain=not first)
        except BaseException as err:
            self.hidden = None
            self.lose(Interruption(spec, 0, Reason(Why.LOADER_RAISED, error=raised(err))))
            raise
        self.hidden = None
        return self.runner.finish(result)

    def _hidden_extra(self, extra: Extra) -> None:
        """A hidden extra; one that raises costs only itself (said, and recorded as skipped)."""
        env = self.env()
        try:
            self.results = HIDDEN[extra](env, self.results)
        except Exception as err:
            self.hidden = None
            why = Reason(Why.EXTRA_RAISED, extra=extra, error=raised(err))
            self.results = self.results.changed(diagnostics_skipped=(*self.results.diagnostics_skipped, why))
            env.sink.say(ev.SideFailed(why))

    def _count(self, result: TrialResult) -> m.Counted:
        """A scheduled trial that counted: exchanged with the other ranks, recorded, said; its event for the machine."""
        plan = self.schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and not result.spec.profiled and plan is not None and plan.nwarmup is None
        change = self._warmup_change(result) if auto_warmup else None
        try:
            result, change = combine(self.ctx.comm, result, change, self.config.general.dist_rank_lists)
        except DistributedError:
            self._exchange_failed(result.spec)
            raise
        self.results = self.results.add_trial(result)
        self.outcomes = self.outcomes.count()
        self.ctx.sink.trial(result)
        event = m.Counted(result.spec, change, m.judge(self.results, self.schedule), self._room())
        self._profiler_after(result.spec, event.judgement)
        return event

    def _warmup_change(self, result: TrialResult) -> Optional[float]:
        """How much this mode's step time still changes over its latest warm-up steps (no more kept than it reads)."""
        new, cycle = result.step_seconds, max(1, result.spec.cycle)
        periods = self._warm.get(result.mode, array(PERIOD_CODE)) + new
        keep = -(-max(10, len(new)) // cycle) * cycle  # whole rounds of the loader (its periods come in them)
        self._warm[result.mode] = periods[-keep:]
        return m.warmup_change(periods, len(new) // 2, cycle)

    def _milestones(self) -> None:
        """When the verdict was first decided, and when measuring stopped (each once)."""
        since = None if self.began is None else self.clock() - self.began
        if self.decided_at is None and self.machine.judgement.decided:
            self.decided_at, self.seconds = self.loop.steps_taken(), (since, self.seconds[1])
        if self.stopped_at is None and self.machine.stop is not None:
            self.stopped_at, self.seconds = self.loop.steps_taken(), (self.seconds[0], since)

    def _notes(self) -> None:
        """What the machine noted (a warm-up ended, measuring stopped), said once each."""
        notes = self.machine.notes
        if notes:
            self.machine = dataclasses.replace(self.machine, notes=())
            for note in notes:
                self._say(note)

    def _profiler_after(self, spec: TrialSpec, judgement: Optional[m.Judgement] = None) -> None:
        """After ``spec``: the capture stops where no trial of its kinds may follow (``judgement``: with this
        trial's evidence)."""
        profilers = self.ctx.profilers
        machine = self.machine if judgement is None else dataclasses.replace(self.machine, judgement=judgement)
        more = any(machine.may_run(mode) for mode in profilers.window.kinds)
        for event in profilers.after_trial(spec, more):
            self._say(event)

    # --- what the loop asks and tells (session.loop.Loop) -------------------------------------------

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
            started, self.results = self._side.start(action.extra, self.env(), self.results)
            if not started:
                self._feed(m.ExtraEnded(action.extra, self._room()))
                return self.next_work()
            self.loop.settle = action.extra is Extra.CONTENTION  # the fork's copy-on-write: first steps untimed
            return self._window(action.spec)
        return None

    def _window(self, spec: TrialSpec) -> WindowRun:
        ctx = self.ctx
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        w = self.runner.window(spec, ctx.out, ranges)
        last, self._full = self._full, None
        if self.runner.world > 1:
            # Both are read off this rank's clock: ranks could differ, and then place their windows at different steps
            # of a loop whose collectives keep them in step. With several ranks, the first period is left out and the
            # lead-in taken, always.
            return w
        w.sound_first = self.runner.lookahead is False
        if last is not None and spec.mode is Mode.FULL:
            # Right after another FULL window: the workers made about a batch a period of benchy's pause between them.
            w.backlog = math.ceil((self.clock() - last[0]) / last[1])
        return w

    def window_done(self, w: WindowRun) -> None:
        """A window measured its periods: a side window's figures recorded; a trial counted."""
        runner = self.runner
        if runner.lookahead is None and w.spec.mode is Mode.SYNTHETIC and not w.spec.variant:
            runner.lookahead = w.fetches_ahead()  # from the series, before the result uses them up
            if runner.lookahead:
                self._say(ev.LookaheadFound())
        result = runner.finish(w.result()) if not w.spec.variant else runner.with_system(w.result())
        extra = self._side.extra
        if extra is not None:
            self.results = self._side.finish(self.env(), result, self.results, w.stamps.done)
            self.ctx.sink.trial(result)
            self._feed(m.ExtraEnded(extra, self._room()))
            return
        periods = len(result.step_seconds)
        period = result.seconds / periods if periods else 0.0  # the mean: a bursty loader's median is a burst's
        self._full = (self.clock(), period) if w.spec.mode is Mode.FULL and period > 0 else None
        event = self._count(result)
        _, after = m.transition(self.machine, event)  # what comes next (a pure look ahead)
        if not (result.spec.mode is Mode.FULL and isinstance(after, m.OpenWindow) and after.spec.mode is Mode.FULL):
            # Between two FULL windows the JSON waits for the next trial: the loader's workers make batches ahead
            # during every pause of the loop, and the second window would start on them.
            self.ctx.sink.checkpoint(self.snapshot())
        self._feed(event)

    def flops_done(self, work: FlopsWork, completed: bool) -> None:
        self.results = self.results.changed(flops=self.runner.flops(final=False))
        self._dropped(work, "flops")

    def _dropped(self, work: Optional[Work], group: str = "lost") -> None:
        """Work that handed the loop the cached batch, done or dropped part-way (the script ended, a window lost):
        a timeline entry holds the steps it took, so that every step outside the timeline's windows got the loop's
        own batch."""
        if isinstance(work, FlopsWork) and work.began is not None:
            (e0, s0), (e1, s1) = work.first, work.last
            where = WindowSpan(start_epoch=e0, start_step=s0, end_epoch=e1, end_step=s1, segments=max(1, work.tries))
            began, label, warmup = work.began, "FLOPS_1", False
        elif isinstance(work, WindowRun) and work.placed and work.spec.mode is Mode.SYNTHETIC:
            where, label, warmup = work.span(), work.spec.label, work.spec.warmup
            began = work.stamps.first if math.isfinite(work.stamps.first) else self.clock()
        else:
            return
        span = Span(label, group, self.runner.unix(began), self.clock() - began, warmup, Mode.SYNTHETIC, where)
        self.results = self.results.add_span(span)
        self._feed(m.ExtraEnded(Extra.FLOPS, self._room()))

    def lose(self, item: Interruption) -> None:
        """A trial that did not count: recorded and said (never raises); a side window's loss costs only its figures."""
        if self.loop.window is not None and self.loop.window.spec == item.spec:
            self._dropped(self.loop.discard())
        self.runner.sampler.stop()
        extra = self._side.extra
        if extra is not None and item.spec.variant == extra.value:
            self.results = self._side.stop(Reason(Why.WINDOW_LOST, item.spec.label, cause=item.reason), self.results)
            self._feed(m.ExtraEnded(extra, self._room()))
            return
        self.outcomes = self.outcomes.lose(item)
        with contextlib.suppress(Exception):  # during interpreter shutdown stdout may be gone
            self._profiler_after(item.spec)
            self._say(ev.TrialLost(item))
            self.ctx.sink.checkpoint(self.snapshot())
        if self.running and item.spec.mode is not Mode.IO:
            self._feed(m.Lost(item.spec, self._room()))

    def side_served(self) -> None:
        self.outcomes = self.outcomes.side()
        if not self._side_said and self.running:
            self._side_said = True
            w = self.loop.window
            self._say(ev.SideServed(None if w is None else w.spec.label))

    # --- the endings ---------------------------------------------------------------------------------
    # Each keeps what was measured (the summary, the table, the JSON), names what was not, and records the exit status
    # benchy advises for CI (advise: 0, 3 or 4). The schedule's end (finish) ends the process with exit_after_tests,
    # the one place benchy ends it (not in a Ray worker, whose end Ray reports as a failed training). The script's
    # exit first (at_exit) leaves it its status and exit handlers: the run is said incomplete. A signal (SIGTERM:
    # Slurm, torchrun stopping the ranks after one failed) names the running trial, then takes its course: the
    # handler that was there before runs, or the default action ends the process with the signal's status.

    def _install_hooks(self) -> None:
        """At the benchmark's start: the at-exit hook, and the SIGTERM handler where signals can be set."""
        atexit.register(self.at_exit)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        try:
            self._sigterm_before = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):  # pragma: no cover - unusual embeddings
            self._sigterm_before = None

    def _restore_sigterm(self) -> None:
        """At the benchmark's end: the SIGTERM handler that was there before, if ours is still set."""
        if self._sigterm_before is None or threading.current_thread() is not threading.main_thread():
            return
        with contextlib.suppress(ValueError, OSError):  # pragma: no cover
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, self._sigterm_before)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        previous = self._sigterm_before
        try:
            self.on_signal("SIGTERM")
        finally:
            self._restore_sigterm()
            if callable(previous):
                previous(signum, frame)  # the script's or launcher's own handler
            elif previous != signal.SIG_IGN:
                os.kill(os.getpid(), signum)  # the default action: end with the signal's status

    def _end(self) -> None:
        """The benchmark is over, whichever way: the running window dropped, what is held let go."""
        self._stage = Stage.DONE
        self.record.finished = True
        work = self.loop.discard()
        self._dropped(work)
        if isinstance(work, WindowRun):
            why = Reason(Why.SCRIPT_ENDED_EARLY if self.exiting else Why.BENCHMARK_ENDED)
            self.results = self._side.stop(Reason(Why.WINDOW_LOST, work.spec.label, cause=why), self.results)
        self._restore_sigterm()
        if self.results.flops is None:
            reached = self.machine.decided_phase and Extra.FLOPS in self.machine.skipped
            self.results = self.results.changed(flops=self.runner.flops(final=True, reached=reached))
        with contextlib.suppress(Exception):  # a worker already gone
            self.runner.close()
        for event in self.ctx.profilers.close(AT_EXIT if self.exiting else AT_END):
            self._say(event)

    def finish(self) -> None:
        """The schedule is over (or the script ended once the verdict stood): summary, table and final JSON; then
        the process ends (``exit_after_tests``) or the loader is the plain one from here on."""
        self._end()
        sink = self.ctx.sink
        exit_after = self.config.general.exit_after_tests
        where = host() if exit_after else None
        ends = exit_after and where is None and not self.exiting
        status = sink.exit_status(self.results)
        self.advise(status)
        sink.summary(self.snapshot(), exit_status=status)
        if where is not None:
            sink.say(ev.NoExitHere(where))
        if not self.exiting:
            sink.end(self.results, ends)
        if not ends and not self.exiting:
            self._watch_from_now()

    def _exchange_failed(self, spec: TrialSpec) -> None:
        """The ranks could not exchange ``spec``'s results: what was measured kept and printed; the caller raises."""
        failed = tuple(FailedRank(r, why) for r, why in self.ctx.comm.failures())
        item = Interruption(spec, spec.nbatches, Reason(Why.RANKS))
        self.outcomes = self.outcomes.with_failed(failed).lose(item)
        self._end()
        self.advise(EXIT_INCOMPLETE)
        with contextlib.suppress(Exception):
            self._say(ev.TrialLost(item))
            if failed:
                self._say(ev.RankFailed(failed))
            self.ctx.sink.summary(self.snapshot(), exit_status=EXIT_INCOMPLETE)

    def on_signal(self, name: str) -> None:
        """A signal ends the benchmark: the running trial named as interrupted, the summary printed."""
        if os.getpid() != self.pid or not self.running:
            return
        running, measured = self._running_trial()
        failed = tuple(FailedRank(r, why) for r, why in self.ctx.comm.failures())
        self.outcomes = self.outcomes.signalled(name).with_failed(failed)
        if running is not None:
            why = Reason(Why.SIGNAL, detail=name, steps=measured, of=running.nbatches, failed=failed[0] if failed else None)
            self.outcomes = self.outcomes.lose(Interruption(running, measured, why))
        self.advise(EXIT_INCOMPLETE)
        with contextlib.suppress(Exception):  # the signal must take its course whatever happens here
            self.ctx.out.trial_ended()
            self._say(ev.Signalled(name, running, measured, failed))
            self._end()
            self.ctx.sink.summary(self.snapshot(), exit_status=EXIT_INCOMPLETE)

    def at_exit(self) -> None:
        """At interpreter exit, when the script ended before the schedule did: say so, with what a decision needs,
        and keep what was measured (summary and JSON). A rank that ends with an uncaught exception says so in the
        job's rendezvous store, so that the ranks the launcher stops next can name it."""
        if os.getpid() != self.pid or not self.running:
            return
        self.exiting = True
        self.ctx.out.trial_ended()
        if self.machine.decided_phase:  # the verdict stands: the extras not run are named, and the run is complete
            self.finish()
            return
        died = getattr(sys, "last_value", None)  # set when an uncaught exception ends the script
        error = None if died is None or isinstance(died, SystemExit) else raised(died)
        if error is not None and self.ctx.world > 1:
            self.ctx.comm.report_failure(error)
        running, measured = self._running_trial()
        failed = next((i for i in reversed(self.outcomes.lost) if i.error), None)
        if running is not None:
            ended = Reason(Why.SCRIPT_RAISED, error=error) if error is not None else Reason(Why.SCRIPT_ENDED)
            self.outcomes = self.outcomes.lose(Interruption(running, measured, ended))
        sink, record = self.ctx.sink, self.record
        again = sum(
            1 for r in self.registry.records if r is not record and r.iterated and not r.benchmarked and r.where == record.where
        )
        label = None if running is None else running.label
        got = progress(self.schedule, self.machine, self.results, self.where(), record.where, again, failed, error, label)
        sink.warning(run_text.stopped_early(got, sink.schedule))  # how far it got, and what the schedule needs
        why = (
            Reason(Why.NOT_RUN_RAISED, label=failed.spec.label)
            if failed is not None
            else Reason(Why.NOT_RUN_SCRIPT_RAISED, error=error)
            if error is not None
            else Reason(Why.NOT_RUN_STOPPED, epochs=self.loop.epochs_started, steps=self.loop.steps_taken())
        )
        for spec in not_run(self.schedule, self.machine, self.runner.queue_depth):
            self.outcomes = self.outcomes.lose(Interruption(spec, 0, why))
        self._end()

        self.advise(EXIT_INCOMPLETE)
        sink.summary(self.snapshot(), exit_status=EXIT_INCOMPLETE)
        if error is None:  # what status CI gets, said last
            sink.warning(run_text.incomplete(self.config.output_path))

    def advise(self, status: int) -> None:
        """The exit status benchy advises for CI: kept and, under ``benchy run``, appended to the record its parent
        reads (once: every ending ends the benchmark first)."""
        if self.advised is not None:
            return
        self.advised = self.record.advised = status
        path = os.environ.get(STATUS_ENV_VAR)
        if path:
            with contextlib.suppress(OSError):  # the parent's record is gone: it reports the run as incomplete
                append_status(path, status)

    def _running_trial(self) -> Tuple[Optional[TrialSpec], int]:
        """The trial running now (a hidden IO or side trial, or the window) and the periods it measured."""
        if self.hidden is not None:
            return self.hidden, 0
        w = self.loop.window
        if w is None:
            return None, 0
        return w.spec, max(0, w.measured + max(0, w.open_count() - 1))

    # --- the watch over the rest of the run ------------------------------------------------------------
    # Where the training goes on after the schedule (exit_after_tests: false, a Ray worker), each later epoch of the
    # loop is a pass with the watch's sums (measure.trial.watched_pass), held against what FULL measured: a rise is
    # said when it starts, and the process's end says the whole (BENCHY::SUMMARY::WATCH and the JSON's watch).

    def _watch_from_now(self) -> None:
        results = self.results
        wait = results.data_wait()
        full = results.measured(Mode.FULL)
        baseline = None
        if wait.mean is not None:
            systems = system_means(full) or {}
            baseline = Baseline(
                data_wait=min(1.0, max(0.0, wait.mean)),
                interval=None if wait.half_width is None else min(1.0, wait.half_width),
                throughput=sum(t.own_throughput for t in full) / len(full) if full else None,
                read_bytes_per_s=systems.get("read_bytes_per_s"),
                cpu_cores_busy=systems.get("cpu_cores_busy"),
            )
        self.watch = Watch(baseline=baseline)
        # Samples a batch as the trials counted them (the counter's way), so that an epoch's throughput is FULL's kind.
        batches = sum(t.spec.nbatches for t in full)
        self._watch_per_batch = sum(t.samples for t in full) / batches if batches else self._loader.batch_size
        if self.config.general.system_metrics:
            self._watch_sampler = SystemSampler(WATCH_SAMPLER_HZ, self.clock)
        atexit.register(self._watch_end)

    def _watched(self, inner: Iterator[Any]) -> Iterator[Any]:
        self._watch_passes += 1
        epoch = self.loop.epochs_started + self._watch_passes
        if self._watch_sampler is not None:
            self._watch_sampler.start()
        return watched_pass(
            inner, self.clock, lambda steps, seconds, wait: self._epoch_watched(epoch, steps, seconds, wait), self.loop.length
        )

    def _epoch_watched(self, epoch: int, steps: int, seconds: float, wait: float) -> None:
        watch = self.watch
        if watch is None:
            return
        system = self._watch_sampler.stop() if self._watch_sampler is not None else None
        size = self._watch_per_batch
        figures = watched(
            epoch,
            steps,
            seconds,
            wait,
            None if size is None else size * steps,
            watch.baseline,
            read_bytes_per_s=None if system is None else system.read_bytes_per_s,
            cpu_cores_busy=None if system is None else system.cpu_cores_busy,
        )
        # A rise is said once, when it starts (the epoch before did not rise).
        rose, self.watch = self._watch_rising, watch.add(figures)
        self._watch_rising = figures.rise
        if figures.rise and not rose:
            self.ctx.sink.watch_rise(figures, watch.baseline)

    def _watch_end(self) -> None:
        """At the process's end: the watch's summary line and the JSON with its ``watch`` block."""
        if os.getpid() != self.pid or self.watch is None or not self.watch.watched:
            return
        try:
            self.ctx.sink.watch_end(self.watch)
        except Exception:  # the script's own ending goes on whatever happens here
            pass

    # --- what is read of it ---------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once the schedule is over, or when another loader is the benchmarked one."""
        return self._stage in (Stage.DONE, Stage.PLAIN)

    @property
    def running(self) -> bool:
        return self._stage is Stage.RUNNING

    @property
    def ctx(self) -> RunContext:
        """This process's part in the run (this process alone until the run starts)."""
        if self._ctx is None:
            self._ctx = self._start_ctx(self.schedule, local=True)
        return self._ctx

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
        """The epochs of the loop's own length the schedule takes at the most (``core.progress.epochs_needed``; the
        examples run that many: ``num_epochs = max(num_epochs, loader.benchy.epochs_needed() or 1)``)."""
        return epochs_needed(self.schedule, self.where())

    def snapshot(self) -> Snapshot:
        """What the sink needs besides the results, as one value."""
        windows, runner, loop, machine = bool(self.schedule.window_plans), self.runner, self.loop, self.machine
        complete = machine.decided_phase
        return Snapshot(
            results=self.results,
            schedule=m.schedule_state(
                machine,
                tuple(t.label for t in self.results.trials),
                self.stopped_at,
                decided_at=self.decided_at,
                decided_seconds=self.seconds[0],
                stopped_seconds=self.seconds[1],
                imprecise=imprecise(self.schedule, machine, self.results, runner.queue_depth),
            ),
            epochs_started=loop.epochs_started,
            finished=complete and self._stage is Stage.DONE,
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
            if complete or not windows
            else likely_more(self.schedule, machine, self.results, runner.queue_depth),
        )

    def env(self) -> SideEnv:
        """What a side trial may use (``sides.SideEnv``)."""
        return SideEnv(self.config, self.runner, self.ctx.sink, self._loader, self._workers, self._hidden_runs, self._h2d_copy)

    def _hidden_runs(self, spec: Optional[TrialSpec]) -> None:
        """A side says which trial runs (for a signal that comes during it)."""
        self.hidden = spec

    def _say(self, event: Any) -> None:
        self.ctx.sink.say(event)


WATCH_SAMPLER_HZ = 1.0  # the watch's system readings: an epoch's CPU and storage reads, at little cost


def host() -> Optional[str]:
    """What hosts this process when it is not the script's own to end (Ray's actors and tasks); None for an
    ordinary process."""
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        if not ray.is_initialized():
            return None
        context = ray.get_runtime_context()
        if context.get_actor_id() is None and context.get_task_id() is None:
            return None  # the driver: the user's own script
    except Exception:
        return None
    return "Ray Train worker" if "ray.train" in sys.modules else "Ray worker"
