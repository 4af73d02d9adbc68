"""One benchmark run: walks the schedule as the script asks for epochs (the epoch state machine).

``iterate()`` is what a wrapper's ``__iter__`` returns: the hidden IO trials run inside
the first call, each later call is one SYNTHETIC or FULL trial, and after the last trial
the :class:`~benchy.session.sink.ResultSink` prints the summary, writes the JSON and ends the
process (``exit_after_tests``), or every later call returns the plain loader's iterator.

How epochs are told apart from other ``iter()`` calls:

* a new ``iter()`` after the running trial handed out all its batches (a loop sized by
  ``len()`` never asks for one more) closes that trial, which counts, and starts the next;
* a new ``iter()`` while the running trial is part-way is decided at its first ``next()``:
  if the trial's iterator is still alive, it was a peek (``next(iter(loader))`` inside the
  loop) and gets the plain loader; if the loop dropped it, it is the next epoch;
* ``len()`` is the running (or next) trial's ``nbatches`` while the schedule runs, so a
  loop sized by ``len()`` takes exactly what an epoch yields.

The trials themselves run through :class:`~benchy.session.trials.TrialRunner`; the sweep and
IO_H2D through :mod:`~benchy.session.side_trials`; the profiler's capture through
:class:`~benchy.session.profilers.Profilers`; SIGTERM and exit through
:class:`~benchy.session.lifecycle.Lifecycle`; every line goes out through the sink.
One benchmark at a time per process: the first wrapper iterated runs it (see ``registry``).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import statistics
import sys
import time
import weakref
from typing import Any, Callable, Generator, Iterator, Optional, Set, Tuple

from ..core.config import Config
from ..core.results import Counted, Interruption, Outcome, RunResults, Snapshot, TrialResult
from ..core.schedule import Mode, Schedule, TrialSpec
from ..core.startup import Startup, startup
from ..measure.profiling import CudaProfilerApi, global_rank, nvtx_ranges
from ..measure.ranks import DistributedError, LocalComm, agree, combine, make_comm
from ..measure.stages import Instrumented
from ..measure.stamps import Series, handed_out
from ..measure.trial import STOPPED
from .console import Output
from .lifecycle import Lifecycle
from .planner import Planner
from .profilers import Profilers
from .registry import REGISTRY, Registry
from .side_trials import Sweeper, run_h2d, run_stages, run_sweep
from .sink import ResultSink
from .trials import TrialRunner

__all__ = ["DROPPED_UNUSED", "PEEK_NOTE", "LoaderFacts", "Session"]

_NEW, _RUNNING, _DONE, _PLAIN = "new", "running", "done", "plain"

DROPPED_UNUSED = ("its iterator was dropped before the first batch (an iter() whose result was never "
                  "advanced, e.g. a discarded or replaced iterator)")
PEEK_NOTE = ("an iter() during trial {label} was served by the plain loader (a peek such as next(iter(loader)) "
             "inside the loop); the trial goes on and the peek's time counts in it.")


@dataclasses.dataclass(frozen=True)
class LoaderFacts:
    """What a wrapper knows of its loader, handed to its session (built by ``integrations.wrappers``)."""

    make_iterator: Callable[[], Iterator[Any]]  # the plain loader's iterator (a new pass)
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
    # The wrapper itself, by a weak reference: the session holds it only while an epoch trial is out,
    # so that a loop over a temporary wrapper (``for x in Wrapper(...)``) keeps it, and a dropped
    # wrapper is freed with its workers as a plain DataLoader is.
    owner: Callable[[], Any] = lambda: None


@dataclasses.dataclass
class _Current:
    """The epoch trial handed out last and not yet counted or lost."""

    spec: TrialSpec
    stamps: Series
    gen: weakref.ReferenceType[Any]
    owner: Any  # the wrapper, kept alive while its trial is out (see LoaderFacts.owner)


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
        self.epochs_started = 0
        self._loader = loader
        self._workers = loader.workers  # the sweep may change it (sweep_apply)
        self._h2d_copy = h2d_copy  # the IO_H2D copy (tests inject one; else the accelerator in use)
        self.runner = TrialRunner(config, loader.make_iterator, loader.batch_size, clock,
                                  constant=loader.batch_samples, queue_depth=loader.queue_depth,
                                  warn=lambda text: self._sink_().warning(text))
        self._out = output
        self._state = _NEW
        self._current: Optional[_Current] = None
        self._closing = False  # an explicit close (from iter() or exit): the sink may end the process
        self._exiting = False  # inside the interpreter's exit: never call sys.exit
        self._exit_pending = False
        self._peeks_noted = False
        self._again: Set[str] = set()  # labels that were run again after their iterator was dropped
        self._peek_labels: Set[str] = set()  # ... of which the drop was a peek (not counted as an epoch)
        self._pending: Optional[Tuple[Interruption, bool]] = None  # dropped; runs again at the next iter()
        self._reruns_on = True  # off once a trial run again is dropped again (the loop stops early every epoch)
        self._pid = os.getpid()
        self._comm: Any = LocalComm()
        self._rank = 0
        self._world = 1
        self._profilers_: Optional[Profilers] = None
        self._profiler_api = profiler_api
        self._registry = registry
        self._record = registry.register(loader.kind, loader.where)
        self._exit = exit
        self._sink: Optional[ResultSink] = None
        self._hidden: Optional[TrialSpec] = None  # the IO or IO_H2D trial running inside iter(), if any
        self._signalled = False  # a SIGTERM ended the benchmark: later trial outcomes are ignored
        self._lifecycle = Lifecycle(self.stop_for_signal, self.at_exit)

    # --- public ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once the schedule is over, or when another loader is the benchmarked one."""
        return self._state in (_DONE, _PLAIN)

    @property
    def benchmarked(self) -> bool:
        """True when this wrapper is the one benchmarked in its process (decided at first iter())."""
        return self._record.benchmarked

    def copied(self) -> bool:
        """A copy or pickle of the wrapper is being made: returns whether this benchmark is over
        (the copy is then the plain loader; otherwise it is a new wrapper that has measured nothing)."""
        self._record.copied = True
        return self.done

    def retire(self) -> None:
        """This wrapper is the plain loader for good (a copy of a wrapper whose benchmark is over)."""
        self._state = _PLAIN
        self._record.iterated = self._record.finished = True

    def epoch_length(self) -> Optional[int]:
        """Batches the running or next epoch yields while the schedule runs, else None (plain)."""
        if self._state in (_DONE, _PLAIN):
            return None
        owner = self._registry.owner
        if self._state == _NEW and owner is not None and owner is not self._record and not owner.finished:
            return None  # another wrapper runs the benchmark: this one will be the plain loader
        if self._current is not None:
            return self._current.spec.nbatches
        spec = self.planner.next_epoch_spec(self.results)
        return None if spec is None else spec.nbatches

    def iterate(self) -> Iterator[Any]:
        """The iterator for the next epoch: a trial while the schedule runs, else the plain one."""
        if self._exit_pending:
            self._exit_pending = False
            self._sink_().end(exit_after_tests=True)  # deferred from a dropped iterator
        if self._state in (_DONE, _PLAIN):
            return iter(self._loader.make_iterator())
        if self._state == _NEW:
            if not self._registry.claim(self._record):
                return self._become_plain()
            self._start()
            return self._next_epoch(first=True)
        current = self._current
        if current is not None:
            handed = handed_out(current.stamps, current.spec.nbatches)
            if 0 < handed < current.spec.nbatches and current.gen() is not None:
                return self._undecided(current)
            self._close_current()
            if self._state == _DONE:
                return iter(self._loader.make_iterator())
        return self._next_epoch(first=False)

    def snapshot(self) -> Snapshot:
        """What the sink needs besides the results, as one value."""
        return Snapshot(
            schedule=dict(
                self.schedule.to_dict(),
                order=[t.label for t in self.results.trials],
                warmups=self.planner.warmups_used(),
                decision_confidence=self.schedule.decision_confidence,
                stop_reason=self.planner.stop_reason,
            ),
            epochs_started=self.epochs_started,
            finished=self._state == _DONE and self.planner.peek(self.results, fresh=True) is None,
            profiler=self._profilers().block(self.runner.ranges is not None),
            synthetic_batch_samples=self.runner.synthetic_samples,
            lookahead=self.runner.lookahead,
            counting=self.runner.counting,
            loader=f"{self._record.kind} created at {self._record.where}",
            other_loaders=tuple(self._registry.others()),
            workers=self._workers,
            startup=self._startup(),
            tokens=None if self.runner.tokens is None else self.runner.tokens.source,
        )

    # --- epochs -----------------------------------------------------------------------------

    def _become_plain(self) -> Iterator[Any]:
        self._state = _PLAIN
        owner = self._registry.owner
        where = self._record.where
        if global_rank() == 0 and where not in self._registry.noted:  # once per creation site
            self._registry.noted.add(where)
            if owner is not None and owner.where == where:
                self._sink_().warning(
                    f"a new {self._record.kind} was built at {where}, where the one running the benchmark was "
                    f"built: a loader re-created every epoch never finishes the schedule (each epoch gets a "
                    f"new wrapper, which is the plain loader). Build it once, before the epoch loop.")
            else:
                running = f"{owner.kind} created at {owner.where}" if owner is not None else "another loader"
                self._sink_().info(
                    f"{self._record.kind} created at {where} is the plain loader: a process runs one benchmark "
                    f"at a time, and the {running} is running it (the first loader iterated).")
        return iter(self._loader.make_iterator())

    def _next_epoch(self, first: bool) -> Iterator[Any]:
        """An epoch boundary: hidden IO trials that are due, then this epoch's trial."""
        self._rerun()
        self.planner.new_boundary()
        if first:
            applied = run_sweep(self.config, self._loader.sweeper, self.runner, self._sink_(), self.results,
                                self._loader.batch_size)
            if applied is not None:
                self._workers = applied.num_workers
                self.runner.queue_depth = applied.num_workers * (applied.prefetch_factor or 0)
        self._run_hidden_io(first)
        spec = self.planner.next(self.results)
        self._notes()
        if spec is None:
            # Only IO was scheduled (its trials ran in this first epoch), the last trial was
            # lost and the script goes on, or the last trials were hidden IO ones.
            self.epochs_started += int(first)
            self._finish(may_exit=True)
            return iter(self._loader.make_iterator())
        self.epochs_started += 1
        if spec.mode is Mode.FULL:
            # Loader workers fill their queue whenever the loop does not take batches (a SYNTHETIC
            # epoch, the script's own work between epochs): start FULL from a drained queue.
            self.runner.drain()
        self._output().trial_started(spec)
        ranges = self._profilers().before_trial(spec, self.runner.ranges)
        gen, stamps = self.runner.epoch(spec, self._settle, self._output(), ranges)
        # A weak reference: a loop that breaks out drops the generator at once, and what
        # became of its trial is recorded then, not at the next epoch.
        self._current = _Current(spec, stamps, weakref.ref(gen), self._loader.owner())
        return gen

    def _undecided(self, current: _Current) -> Iterator[Any]:
        """An iter() while ``current`` is part-way: a peek or the next epoch, told at first next()."""

        def decide() -> Generator[Any, None, None]:
            if self._current is current and current.gen() is not None:
                if not self._peeks_noted:
                    self._peeks_noted = True
                    self._sink_().info(PEEK_NOTE.format(label=current.spec.label))
                yield from self._loader.make_iterator()
                return
            if self._current is current:
                self._close_current()
            if self._state in (_DONE, _PLAIN):
                yield from self._loader.make_iterator()
                return
            yield from self._next_epoch(first=False)

        return decide()

    def _close_current(self) -> None:
        """Resolve the trial handed out last: it counts (all batches taken) or is recorded as lost."""
        current = self._current
        if current is None:
            return
        gen = current.gen()
        if gen is not None and inspect.getgeneratorstate(gen) == inspect.GEN_SUSPENDED:
            self._closing = not self._exiting
            try:
                gen.close()  # the trial settles its own outcome: counted, or why not
            finally:
                self._closing = False
        if self._current is current:  # never started: nothing ran to record it
            if gen is not None:
                gen.close()
            self._dropped(Interruption(current.spec, 0, DROPPED_UNUSED, dropped=True))

    def _run_hidden_io(self, first: bool) -> None:
        """The IO trials due at this epoch boundary, hidden from the loop (all of them at the first)."""
        ran = False
        while True:
            spec = self.planner.peek(self.results)
            if spec is None or spec.mode is not Mode.IO:
                break
            self.planner.issue(spec)
            self._notes()
            # Every IO trial starts with the batches the workers hold ready taken, untimed: the
            # state of a plain loop that drains the loader as fast as it can (its queue is empty).
            # Between the first epoch's IO trials benchy builds results and writes lines, and the
            # workers fill their queue meanwhile (2 persistent workers: IO read +1.2 to +1.5 %).
            if ran or not first:
                self.runner.drain()
            ran = True
            self._output().trial_started(spec)
            ranges = self._profilers().before_trial(spec, self.runner.ranges)
            self._hidden = spec
            try:
                result = self.runner.io(spec, self._output(), ranges)
            except BaseException as err:
                self._lost(Interruption(spec, 0, f"the data loader raised {type(err).__name__}: {err}", error=True))
                raise
            finally:
                self._hidden = None
            # No JSON between IO trials: a pause there lets loader workers fill their queue,
            # and the next trial would start with free batches.
            self._counted(result, checkpoint=False)
        if first and ran:
            run_h2d(self.config, self._h2d_copy, self.runner, self._sink_(), self.results, self._running)
            run_stages(self.config, self._loader.instrument, self.runner, self._sink_(), self.results, self._running,
                       self._loader.kind)
        if ran:
            self._sink_().checkpoint(self.snapshot())

    def _running(self, spec: Optional[TrialSpec]) -> None:
        self._hidden = spec

    # --- set-up -----------------------------------------------------------------------------

    def _output(self) -> Output:
        if self._out is None:
            self._out = Output(self.config.general.console, enabled=self._rank == 0)
        return self._out

    def _sink_(self) -> ResultSink:
        if self._sink is None:
            self._sink = ResultSink(self.config, self.schedule, self.results, self._output(), rank=self._rank,
                                    world=self._world, shutdown=self._comm.shutdown, exit=self._exit)
        return self._sink

    def _startup(self) -> Optional[Startup]:
        """The loader's start-up per pass, against an ordinary batch (IO) and an epoch of ordinary
        FULL steps (the median period: a trial that crossed the end of a pass holds a start-up
        itself, which must not dilute the share it is compared with)."""
        medians = [t.median_period for t in self.results.trials if t.mode is Mode.IO and t.median_period is not None]
        batch = float(statistics.median(medians)) if medians else None  # per-trial medians: O(trials) per call
        full = [t.median_period for t in self.results.measured(Mode.FULL) if t.median_period is not None]
        per_batch = float(statistics.median(full)) if full else None
        try:
            length = self._loader.length()
        except Exception:
            length = None
        source = self.runner.source
        return startup(source.startups, workers=self._workers, persistent=self._loader.persistent,
                       epoch_batches=length, batch_seconds=batch, full_batch_seconds=per_batch,
                       started=[self.runner.unix(t) for t in source.pass_starts])

    def _profilers(self) -> Profilers:
        if self._profilers_ is None:
            self._profilers_ = Profilers(self.config, self._profiler_api)
        return self._profilers_

    def _profiler_after(self, spec: TrialSpec) -> None:
        profilers = self._profilers()
        more = any(self.planner.may_run(m, self.results) for m in profilers.kinds)
        for line in profilers.after_trial(spec, more):
            self._sink_().info(line)

    def _notes(self) -> None:
        """What the planner decided (warm-ups steady, why the trials stopped), said once each."""
        while self.planner.notes:
            self._sink_().info(self.planner.notes.pop(0))

    def _start(self) -> None:
        self._state = _RUNNING
        # Ranks are read now, at the first epoch, so a wrapper built before
        # init_process_group works; every rank reaches this point together.
        self._comm = make_comm(self.config.general.dist_timeout)
        self._rank, self._world = self._comm.rank, self._comm.world
        self.runner.world = self._world
        if self._world > 1:
            try:
                agree(self._comm, self.schedule.fingerprint(), self.config.general.dist_rank_lists)
            except DistributedError:
                self._state = _DONE
                self._record.finished = True
                raise
        if self.config.general.use_distributed_barrier and self._world > 1:
            self.runner.barrier = self._comm.barrier
        self.runner.ranges = nvtx_ranges(self.config.general.nvtx)
        self._profilers().start(self._rank, self._world)
        sink = self._sink_()
        sink.clean_stale()
        sink.started(self.schedule, self.config, f"{self._record.kind} created at {self._record.where}",
                     nvtx=self.runner.ranges is not None)
        self._lifecycle.install()

    # --- what each trial ends with ------------------------------------------------------------

    def _settle(self, outcome: Outcome) -> None:
        """An epoch trial's outcome, handed over once by its generator."""
        if isinstance(outcome, Counted):
            self._counted(outcome.result, outcome.closed_early)
        elif outcome.dropped:
            self._dropped(outcome)
        else:
            self._lost(outcome)

    def _dropped(self, item: Interruption) -> None:
        """The loop dropped a trial's iterator part-way: the trial runs again at the next epoch
        (once), or, dropped again, is lost and the loop taken to stop early every epoch.

        Decided at the next ``iter()`` (:meth:`_rerun`): a script that dies of an exception in
        its step drops the iterator the same way, and then the trial is lost as before.
        """
        if self._signalled:
            return
        label = item.spec.label
        if label in self._again or not self._reruns_on:
            twice = label in self._again
            if twice:
                self._reruns_on = False
                if label in self._peek_labels:  # that first drop was an epoch after all
                    self.epochs_started += 1
            self._lost(item, twice)
            return
        self.runner.sampler.stop()
        self._current = None
        first = self.epochs_started == 1 and not any(t.mode is not Mode.IO for t in self.results.trials)
        self._pending = (item, first)
        self.planner.retry(item.spec)

    def _rerun(self) -> None:
        """A new ``iter()`` after a trial's iterator was dropped: that trial runs again now.

        An iterator dropped after at most one batch was a peek (``next(iter(loader))``, for a
        batch's shape) or an unused ``iter()``: not an epoch, so it costs one batch's loading
        and no trial. One dropped part-way cost an epoch: the schedule needs one more.
        """
        if self._pending is None:
            return
        item, first = self._pending
        self._pending = None
        self._again.add(item.spec.label)
        peek = item.batches_done <= 1
        if peek:
            self._peek_labels.add(item.spec.label)
            self.epochs_started -= 1
            self.results.peeks += 1
        else:
            self.results.reruns.append(item)
        try:
            self._profiler_after(item.spec)
            self._sink_().again(item, peek, first)
        except Exception:
            pass

    def _unsettled(self) -> None:
        """The script ended (or a signal came) with a dropped trial not yet run again: it is lost."""
        if self._pending is not None:
            item, _ = self._pending
            self._pending = None
            self.planner.retry(None)
            self._lost(item)

    def _counted(self, result: TrialResult, closed_early: bool = False, checkpoint: bool = True) -> None:
        if self._signalled:
            return
        result = self.runner.finish(result)
        if self.results.flops is None:
            self.results.flops = self.runner.flops(final=False)
        self._current = None
        result, decided = self.runner.lookahead_window(result)
        if decided:
            self._sink_().info(
                "the loop asks for batch k + 1 before it runs step k (it fetches one batch ahead, as "
                "CUDA prefetchers such as timm's PrefetchLoader do): the first period of each SYNTHETIC and "
                "FULL trial holds no step and is left out of the trial.")
        plan = self.schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and plan is not None and plan.nwarmup is None
        try:
            change = self.planner.warmup_change(result) if auto_warmup else None
            result, change = combine(self._comm, result, change, self.config.general.dist_rank_lists)
        except DistributedError:
            self._exchange_failed(result.spec)
            raise
        self.results.trials.append(result)
        if auto_warmup:
            self.planner.record_warmup(result.mode, change)
        self._profiler_after(result.spec)
        sink = self._sink_()
        sink.trial(result, closed_early)
        is_last = result.spec.mode is not Mode.IO and self.planner.peek(self.results, fresh=True) is None
        self._notes()
        if is_last:
            # A trial that counts when its iterator is dropped (gc, not an explicit close) must
            # not end the process from inside a finalizer: the exit waits for the next iter().
            self._finish(may_exit=not closed_early or self._closing)
        elif checkpoint:
            sink.checkpoint(self.snapshot())

    def _exchange_failed(self, spec: TrialSpec) -> None:
        """Keep what was measured and print it, as a single-rank run prints it; the caller raises."""
        self._lost(Interruption(spec, spec.nbatches, "the ranks could not exchange its results"))
        self._close_profiler("after a failed exchange")
        self._state = _DONE
        self._record.finished = True
        self.runner.close()
        try:
            self._output().trial_ended()
            self._sink_().summary(self.snapshot(), exiting=False)
        except Exception:
            pass

    def _lost(self, item: Interruption, twice: bool = False) -> None:
        """A trial that did not finish: not counted, recorded, reported (never raises)."""
        if self._signalled:
            return
        self.runner.sampler.stop()
        self._current = None
        self.results.interruptions.append(item)
        try:
            self._profiler_after(item.spec)
            hint = item.reason == STOPPED.format(k=item.batches_done, n=item.spec.nbatches) and item.batches_done > 0
            sink = self._sink_()
            sink.lost(item, hint, twice)
            sink.checkpoint(self.snapshot())
        except Exception:  # during interpreter shutdown stdout may be gone
            pass

    # --- the end ------------------------------------------------------------------------------

    def _finish(self, may_exit: bool) -> None:
        """Summary, table and final JSON; then exit (``exit_after_tests``) or go transparent."""
        self._state = _DONE
        self._record.finished = True
        self._lifecycle.restore()
        if self.results.flops is None:
            self.results.flops = self.runner.flops(final=True)
        self.runner.close()
        self._close_profiler("at the end of the benchmark")
        sink = self._sink_()
        exit_after = self.config.general.exit_after_tests
        sink.summary(self.snapshot(), exiting=exit_after and not self._exiting)
        if exit_after and not may_exit:
            if not self._exiting:
                self._exit_pending = True
                sink.info("Tests completed when the loop dropped its iterator; benchy ends the process at the next "
                          "iter() of this loader.")
            return
        sink.end(exit_after)

    def stop_for_signal(self, name: str) -> None:
        """A signal ends the benchmark: the running trial is named as interrupted; the summary is
        printed and the JSON written (then the signal takes its course, see ``lifecycle``)."""
        if os.getpid() != self._pid or self._state != _RUNNING:
            return
        running: Optional[TrialSpec] = self._hidden
        done = 0
        if running is None and self._current is not None:
            running = self._current.spec
            done = handed_out(self._current.stamps, running.nbatches)
        self._unsettled()
        self._signalled = True  # from here on, the trial's own outcome must not be reported again
        self._state = _DONE
        self._record.finished = True
        self._current = None
        try:
            self._output().trial_ended()
            sink = self._sink_()
            if running is not None:
                self.results.interruptions.append(Interruption(
                    running, done, f"interrupted by {name} after {done} of {running.nbatches} batches"))
                sink.warning(f"{name} received during trial {running.label} ({done} of {running.nbatches} batches): "
                             f"it is not counted; the results measured so far follow.")
            else:
                sink.warning(f"{name} received between trials; the results measured so far follow.")
            self._close_profiler(f"at {name}")
            sink.summary(self.snapshot(), exiting=False)
        except Exception:  # the signal must take its course whatever happens here
            pass

    def _close_profiler(self, when: str) -> None:
        for line in self._profilers().close(when):
            self._sink_().info(line)

    def at_exit(self) -> None:
        """At interpreter exit, when the script ended before the schedule did: say so, with the
        epochs the schedule needs, and keep what was measured (summary and JSON)."""
        if os.getpid() != self._pid or self._state != _RUNNING:
            return
        self._exiting = True
        self._close_current()
        self._unsettled()
        if self._state != _RUNNING:
            return
        self._output().trial_ended()
        self._close_profiler("at exit")
        sink = self._sink_()
        if self.planner.peek(self.results, fresh=True) is None:
            sink.warning("the script ended before the last trial finished; results below.")
            self._finish(may_exit=False)
            return
        # New wrappers built where this one was, and iterated as plain loaders: the loader is
        # re-created every epoch (a validation loader, built elsewhere, is no reason).
        again = sum(1 for r in self._registry.records
                    if r is not self._record and r.iterated and not r.benchmarked and r.where == self._record.where)
        failed = next((i for i in reversed(self.results.interruptions) if i.error), None)
        died = getattr(sys, "last_value", None)  # set when an uncaught exception ends the script
        raised = None if died is None or isinstance(died, SystemExit) else f"{type(died).__name__}: {died}"
        sink.stopped_early(self.epochs_started, self._record.where, again, failed, raised)
        why = (f"not run: trial {failed.spec.label} raised" if failed is not None
               else f"not run: the script ended with {raised}" if raised is not None
               else f"not run: the script stopped asking for epochs after {self.epochs_started}")
        _, per_epoch = self.schedule.order(longest=not self.schedule.adaptive)
        for spec in per_epoch:
            if not self.planner.was_issued(spec):
                self.results.interruptions.append(Interruption(spec, 0, why))
        self._state = _DONE
        self._record.finished = True
        self.runner.close()
        sink.summary(self.snapshot(), exiting=False)
