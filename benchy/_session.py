"""One benchmark run: walks the schedule as the script asks for epochs (glue, no hot loop).

``iterate()`` is what a wrapper's ``__iter__`` returns: the hidden IO trials run inside
the first call, each later call is one SYNTHETIC or FULL trial, and after the last trial
the :class:`~benchy._sink.ResultSink` prints the summary, writes the JSON and ends the
process (``exit_after_tests``), or every later call returns the plain loader's iterator.

How epochs are told apart from other ``iter()`` calls:

* a new ``iter()`` after the running trial handed out all its batches (a loop sized by
  ``len()`` never asks for one more) closes that trial, which counts, and starts the next;
* a new ``iter()`` while the running trial is part-way is decided at its first ``next()``:
  if the trial's iterator is still alive, it was a peek (``next(iter(loader))`` inside the
  loop) and gets the plain loader; if the loop dropped it, it is the next epoch;
* ``len()`` is the running (or next) trial's ``nbatches`` while the schedule runs, so a
  loop sized by ``len()`` takes exactly what an epoch yields.

One benchmark at a time per process: the first wrapper iterated runs it (see ``_registry``).
"""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import math
import os
import signal
import statistics
import sys
import threading
import time
import weakref
from array import array
from typing import Any, Callable, Dict, Generator, Iterable, Iterator, List, Optional, Protocol, Set, Tuple

from ._batch import describe_rule, make_counter
from ._config import Config
from ._console import Output
from ._device import accelerator_in_use, copier, synchronizer
from ._dist import DistributedError, LocalComm, disagreement, make_comm
from ._env import environment
from ._plan import MIN_STEADY_WINDOW, Planner, warmup_change
from ._profiling import CudaProfilerApi, ProfilerWindow, global_rank, nvtx_ranges
from ._registry import REGISTRY, Registry
from ._report import info_line, iteration_line, warning_line
from ._results import Interruption, RunResults, TrialResult
from ._sampler import NullSampler, SystemSampler
from ._schedule import Mode, Schedule, TrialSpec
from ._sink import ResultSink
from ._source import BatchSource, CopyingSource
from ._startup import Startup, startup
from ._sweep import Setting, SettingResult, expand, smallest_within
from ._sweep import document as sweep_document
from ._sweep import table as sweep_table
from ._trial import (
    STOPPED,
    Pauses,
    epoch_trial_annotated,
    fetches_ahead,
    full_trial,
    handed_out,
    io_trial,
    io_trial_annotated,
    stamp_buffer,
    synthetic_trial,
    without_first_period,
)

__all__ = ["Session"]

_NEW, _RUNNING, _DONE, _PLAIN = "new", "running", "done", "plain"
_NOTHING = object()

DROPPED_UNUSED = ("its iterator was dropped before the first batch (an iter() whose result was never "
                  "advanced, e.g. a discarded or replaced iterator)")
PEEK_NOTE = ("an iter() during trial {label} was served by the plain loader (a peek such as next(iter(loader)) "
             "inside the loop); the trial goes on and the peek's time counts in it")


@dataclasses.dataclass
class _Current:
    """The epoch trial handed out last and not yet counted or lost."""

    spec: TrialSpec
    stamps: List[float]
    gen: weakref.ReferenceType[Any]


class Sweeper(Protocol):
    """What a loader sweep needs from the wrapper (``_wrappers._LoaderSweeper`` for a DataLoader)."""

    def own(self) -> Setting: ...

    def cores(self) -> int: ...

    def make(self, setting: Setting) -> Iterable[Any]: ...

    def apply(self, setting: Setting) -> None: ...

    def processes(self) -> Set[int]: ...

    def stop(self, pids: Set[int]) -> None: ...


class Session:
    """The state of one wrapper's benchmark."""

    def __init__(
        self,
        config: Config,
        make_iterator: Callable[[], Iterator[Any]],
        fallback_batch_size: Optional[int],
        *,
        clock: Callable[[], float] = time.perf_counter,
        output: Optional[Output] = None,
        profiler_api: Any = CudaProfilerApi,
        kind: str = "loader",
        where: str = "<unknown>",
        registry: Registry = REGISTRY,
        exit: Callable[[int], Any] = sys.exit,
        queue_depth: int = 0,
        workers: int = 0,
        persistent: bool = False,
        plain_length: Callable[[], Optional[int]] = lambda: None,
        h2d_copy: Optional[Callable[[Any], Any]] = None,
        batch_samples: Optional[int] = None,
        sweeper: Optional[Sweeper] = None,
    ) -> None:
        self.config = config
        self.schedule = Schedule.from_config(config)
        self.planner = Planner(self.schedule)
        self._queue_depth = queue_depth  # batches a loader holds ready (workers x prefetch_factor)
        self._workers = workers  # the loader's num_workers (0: loads in the main process, or unknown)
        self._persistent = persistent  # DataLoader(persistent_workers=True)
        self._plain_length = plain_length  # len() of the wrapped loader itself (None: it has none)
        self._h2d_copy = h2d_copy  # the IO_H2D copy (tests inject one; else the accelerator in use)
        # Samples in every batch but a pass's last, when the loader guarantees it (see _wrappers);
        # confirmed on the first batch, else None and every batch is counted.
        self._constant = batch_samples
        self._sweeper = sweeper  # makes the loader's variants for a sweep (BenchmarkDataLoader only)
        general = config.general
        self._sampler: Any = SystemSampler(general.system_metrics_hz, clock) if general.system_metrics else NullSampler()
        self._warm_periods: Dict[Mode, array[float]] = {}
        self.results = RunResults()
        self.epochs_started = 0
        self._make_iterator = make_iterator
        self._source = BatchSource(make_iterator, clock)
        self._fallback = fallback_batch_size
        self._clock = clock
        self._out = output
        self._counter: Optional[Callable[[Any], int]] = None
        self._counting = ""
        self._state = _NEW
        self._current: Optional[_Current] = None
        self._closing = False  # an explicit close (from iter() or exit): the sink may end the process
        self._exiting = False  # inside the interpreter's exit: never call sys.exit
        self._exit_pending = False
        self._peeks_noted = False
        self._synthetic_batch: Any = _NOTHING
        self._synthetic_samples: Optional[int] = None
        self._lookahead: Optional[bool] = None  # the loop fetches one batch ahead (from SYNTHETIC)
        self._pid = os.getpid()
        self._comm: Any = LocalComm()
        self._rank = 0
        self._world = 1
        self._profiler_api = profiler_api
        self._ranges: Any = None
        self._window: Optional[ProfilerWindow] = None
        self._profiler_reported = False
        self._registry = registry
        self._record = registry.register(kind, where)
        self._exit = exit
        self._sink: Optional[ResultSink] = None
        self._hidden: Optional[TrialSpec] = None  # the IO trial running inside iter(), if any
        self._signalled = False  # a SIGTERM ended the benchmark: later trial callbacks are ignored
        self._previous_sigterm: Any = None

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
            return iter(self._make_iterator())
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
                return iter(self._make_iterator())
        return self._next_epoch(first=False)

    # --- epochs -----------------------------------------------------------------------------

    def _become_plain(self) -> Iterator[Any]:
        self._state = _PLAIN
        owner = self._registry.owner
        where = self._record.where
        if global_rank() == 0 and where not in self._registry.noted:  # once per creation site
            self._registry.noted.add(where)
            out = self._output()  # an injected output (tests) is honoured too
            if owner is not None and owner.where == where:
                out.line(warning_line(
                    f"a new {self._record.kind} was built at {where}, where the one running the benchmark was "
                    f"built: a loader re-created every epoch never finishes the schedule (each epoch gets a "
                    f"new wrapper, which is the plain loader). Build it once, before the epoch loop."))
            else:
                running = f"{owner.kind} created at {owner.where}" if owner is not None else "another loader"
                out.line(info_line(
                    f"{self._record.kind} created at {where} is the plain loader: a process runs one benchmark "
                    f"at a time, and the {running} is running it (the first loader iterated)."))
        return iter(self._make_iterator())

    def _next_epoch(self, first: bool) -> Iterator[Any]:
        """An epoch boundary: hidden IO trials that are due, then this epoch's trial."""
        self.planner.new_boundary()
        if first:
            self._run_sweep()
        self._run_hidden_io(first)
        spec = self.planner.next(self.results)
        self._notes()
        if spec is None:
            # Only IO was scheduled (its trials ran in this first epoch), the last trial was
            # lost and the script goes on, or the last trials were hidden IO ones.
            self.epochs_started += int(first)
            self._finish(may_exit=True)
            return iter(self._make_iterator())
        self.epochs_started += 1
        if spec.mode is Mode.FULL:
            # Loader workers fill their queue whenever the loop does not take batches (a SYNTHETIC
            # epoch, the script's own work between epochs): start FULL from a drained queue.
            self._drain()
        self._output().trial_started(spec)
        self._profiler().before_trial(spec)
        sync = synchronizer()
        stamps = stamp_buffer(spec.nbatches)
        counter = self._make_counter()
        clock = self._trial_clock(sync)
        begin = self._begin(spec, sync)
        freq = self.config.general.report_freq
        gen: Generator[Any, None, None]
        if self._ranges is not None:
            gen = epoch_trial_annotated(
                spec, self._source, self._synthetic if spec.mode is Mode.SYNTHETIC else None, counter, clock, sync,
                self._trial_done, self._trial_aborted, self._report, freq, self._ranges, begin=begin, stamps=stamps)
        elif spec.mode is Mode.SYNTHETIC:
            gen = synthetic_trial(spec, self._synthetic, counter, clock, sync, self._trial_done, self._trial_aborted,
                                  self._report, freq, begin=begin, stamps=stamps)
        else:
            gen = full_trial(spec, self._source, counter, clock, sync, self._trial_done, self._trial_aborted,
                             self._report, freq, begin=begin, stamps=stamps, constant=self._constant)
        # A weak reference: a loop that breaks out drops the generator at once, and what
        # became of its trial is recorded then, not at the next epoch.
        self._current = _Current(spec, stamps, weakref.ref(gen))
        return gen

    def _undecided(self, current: _Current) -> Iterator[Any]:
        """An iter() while ``current`` is part-way: a peek or the next epoch, told at first next()."""

        def decide() -> Generator[Any, None, None]:
            if self._current is current and current.gen() is not None:
                if not self._peeks_noted:
                    self._peeks_noted = True
                    self._output().line(info_line(PEEK_NOTE.format(label=current.spec.label)))
                yield from self._make_iterator()
                return
            if self._current is current:
                self._close_current()
            if self._state in (_DONE, _PLAIN):
                yield from self._make_iterator()
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
                gen.close()  # the trial's own handler counts it or records why not
            finally:
                self._closing = False
        if self._current is current:  # never started: nothing ran to record it
            if gen is not None:
                gen.close()
            self._trial_aborted(current.spec, 0, DROPPED_UNUSED)

    def _synthetic(self) -> Any:
        """The one batch every SYNTHETIC warm-up and trial yields, fetched once."""
        if self._synthetic_batch is _NOTHING:
            self._synthetic_batch = self._source.fetch()
            self._synthetic_samples = self._make_counter()(self._synthetic_batch)
        return self._synthetic_batch

    # --- set-up -----------------------------------------------------------------------------

    def _output(self) -> Output:
        if self._out is None:
            self._out = Output(self.config.general.console, enabled=self._rank == 0)
        return self._out

    def _sink_(self) -> ResultSink:
        if self._sink is None:
            self._sink = ResultSink(
                self.config, self.schedule, self.results, self._output(), rank=self._rank, world=self._world,
                environment=environment(self._world), extras=self._extras, shutdown=self._comm.shutdown,
                finished=self._schedule_over,
                exit=self._exit,
                workers=self._workers,
                startup=self._startup,
            )
        return self._sink

    def _startup(self) -> Optional[Startup]:
        """The loader's start-up per pass, against an ordinary batch (IO) and an epoch at the FULL rate."""
        medians = [t.median_period for t in self.results.trials if t.mode is Mode.IO and t.median_period is not None]
        full = self.results.measured(Mode.FULL)
        batch = float(statistics.median(medians)) if medians else None  # per-trial medians: O(trials) per call
        nfull = sum(len(t.step_seconds) for t in full)
        per_batch = sum(t.seconds for t in full) / nfull if nfull else None
        try:
            length = self._plain_length()
        except Exception:
            length = None
        return startup(self._source.startups, workers=self._workers, persistent=self._persistent,
                       epoch_batches=length, batch_seconds=batch, full_batch_seconds=per_batch)

    def _schedule_over(self) -> bool:
        return self._state == _DONE and self.planner.peek(self.results, fresh=True) is None

    def _extras(self) -> Dict[str, Any]:
        return {
            "schedule": dict(
                self.schedule.to_dict(),
                order=[t.label for t in self.results.trials],
                warmups=self.planner.warmups_used(),
                decision_confidence=self.schedule.decision_confidence,
                stop_reason=self.planner.stop_reason,
            ),
            "epochs_started": self.epochs_started,
            "profiler": {
                "nvtx_tool_attached": self._ranges is not None,
                "profiler_mode": self.config.general.profiler_mode,
                "capture": list(self.config.general.profiler_capture),
                "events": list(self._profiler().events),
            },
            "synthetic_batch_samples": self._synthetic_samples,
            "lookahead": self._lookahead,
            "counting": self._counting,
            "loader": f"{self._record.kind} created at {self._record.where}",
            "other_loaders": self._registry.others(),
            "sweep": self._sweep_block(),
        }

    def _sweep_block(self) -> Optional[Dict[str, Any]]:
        r = self.results
        if not r.sweep:
            return None
        return sweep_document(r.sweep, r.sweep_own, r.sweep_applied, r.estimate(Mode.SYNTHETIC).mean)

    def _profiler(self) -> ProfilerWindow:
        if self._window is None:
            g = self.config.general
            self._window = ProfilerWindow(g.profiler_mode, global_rank(), [Mode(m) for m in g.profiler_capture],
                                          api=self._profiler_api)
        return self._window

    def _profiler_after(self, spec: TrialSpec) -> None:
        window = self._profiler()
        more = any(self.planner.may_run(m, self.results) for m in window.kinds)
        window.after_trial(spec, more)

    def _notes(self) -> None:
        """What the planner decided (warm-ups steady, why the trials stopped), said once each."""
        while self.planner.notes:
            self._output().line(info_line(self.planner.notes.pop(0)))

    def _begin(self, spec: TrialSpec, sync: Callable[[], None]) -> Callable[[], None]:
        """What runs just before a trial's clock starts: the device sync; with
        ``use_distributed_barrier`` and several ranks a barrier, so that all ranks start
        together; then the system-metrics sampler's baseline reading."""
        comm = self._comm if (self.config.general.use_distributed_barrier and self._world > 1) else None
        sampler = self._sampler

        def begin() -> None:
            sync()
            if comm is not None:
                comm.barrier(f"{spec.label} (start barrier)")
            sampler.start()

        return begin

    def _trial_clock(self, sync: Callable[[], None]) -> Callable[[], float]:
        """The trial clock; with ``sync_every_step`` it waits for the device before each reading."""
        if not self.config.general.sync_every_step:
            return self._clock
        clock = self._clock

        def synced() -> float:
            sync()
            return clock()

        return synced

    def _start(self) -> None:
        self._state = _RUNNING
        # Ranks are read now, at the first epoch, so a wrapper built before
        # init_process_group works; every rank reaches this point together.
        self._comm = make_comm(self.config.general.dist_timeout)
        self._rank, self._world = self._comm.rank, self._comm.world
        if self._world > 1:
            self._agree_on_schedule()
        self._ranges = nvtx_ranges(self.config.general.nvtx)
        out = self._output()
        self._sink_().clean_stale()
        if self._world > 1:
            out.line(info_line(
                f"{self._world} ranks: each measures its own trials; throughputs are of all ranks together "
                f"(samples of all ranks / the slowest rank's trial time)."
            ))
        if self.config.source == "defaults":
            out.line(info_line("Using default benchy configuration."))
        else:
            out.line(info_line(f"Using benchy configuration from {self.config.source}."))
        out.line(info_line(f"Schedule: {self.schedule.describe()}; {self._epochs_text()}."))
        if self.schedule.epoch_plans:
            out.line(info_line(
                f"Benchmarking the {self._record.kind} created at {self._record.where}; while the schedule runs, "
                f"len() of it is the trial's nbatches."
            ))
        if self._ranges is not None:
            out.line(info_line("NVTX: a tool is attached; ranges per trial, step and fetch in domain 'benchy'."))
        if self.config.general.sync_every_step:
            out.line(warning_line(
                "sync_every_step is on: the device is synchronized at every step, which serializes CPU and "
                "device work; throughputs are lower than in normal training."
            ))
        atexit.register(self._at_exit)
        self._install_sigterm()

    def _agree_on_schedule(self) -> None:
        """Ranks must run the same trials: each trial's results are exchanged and combined."""
        schedules = self._comm.gather("start (schedule check)", self.schedule.fingerprint())
        differ = disagreement(schedules)
        if differ is None:
            return
        try:  # every rank found the same difference: leave together, none still inside the gather
            self._comm.barrier("start (schedule check)")
        except DistributedError:
            pass
        self._state = _DONE
        self._record.finished = True
        raise DistributedError(
            f"benchy: the ranks were given different schedules: {differ}. Every rank must run the same trials "
            f"(their results are combined trial by trial): give all ranks the same benchy config."
        )

    def _make_counter(self) -> Callable[[Any], int]:
        """Sample counter specialised from the first batch, which is kept for the first trial."""
        if self._counter is None:
            batch = self._source.fetch()
            self._source.keep(batch)
            self._counter = make_counter(batch, self._fallback, self._counting_fallback)
            self._counting = describe_rule(batch, self._fallback)
            if self._constant is not None and self._counter(batch) != self._constant:
                self._constant = None  # the first batch says otherwise: count every batch
            if self._constant is not None:
                self._counting += (f"; the batch sampler makes {self._constant} per batch, so only the last batch "
                                   f"of each pass is counted in the trials")
        return self._counter

    def _counting_fallback(self, message: str) -> None:
        self._output().line(warning_line(message))

    def _epochs_text(self) -> str:
        s = self.schedule
        if s.epochs_fewest == s.epochs_needed:
            return f"the script must run at least {s.epochs_needed} epochs"
        return (f"the script must run up to {s.epochs_needed} epochs (the schedule stops as soon as the answer is "
                f"known, after {s.epochs_fewest} at the fewest; later epochs are plain)")

    def _drain(self) -> None:
        """Before a FULL trial, or an IO trial between epochs: take the batches the loader's workers
        hold ready, untimed, so that the trial does not start with free batches (all workers are
        then busy on fresh ones, as in steady training when loading is the limit; when compute is
        the limit the queue refills within a step or two)."""
        if self._queue_depth <= 0:
            return
        self._source.drop_pending()
        for _ in range(self._queue_depth):
            self._source.fetch()

    def _run_hidden_io(self, first: bool) -> None:
        """The IO trials due at this epoch boundary, hidden from the loop (all of them at the first)."""
        out = self._output()
        ran = False
        while True:
            spec = self.planner.peek(self.results)
            if spec is None or spec.mode is not Mode.IO:
                break
            self.planner.issue(spec)
            self._notes()
            if not first and not ran:
                self._drain()
            ran = True
            out.trial_started(spec)
            self._profiler().before_trial(spec)
            sync = synchronizer()
            self._hidden = spec
            args = (spec, self._source, self._make_counter(), self._trial_clock(sync), sync,
                    self._report, self.config.general.report_freq)
            begin = self._begin(spec, sync)
            try:
                if self._ranges is not None:
                    result = io_trial_annotated(*args, self._ranges, begin=begin)
                else:
                    result = io_trial(*args, begin=begin, constant=self._constant)
            except BaseException as err:
                self._trial_aborted(spec, 0, f"the data loader raised {type(err).__name__}: {err}")
                raise
            finally:
                self._hidden = None
            # No JSON between IO trials: a pause there lets loader workers fill their queue,
            # and the next trial would start with free batches.
            self._trial_done(result, checkpoint=False)
        if first and ran:
            self._run_h2d()
        if ran:
            self._sink_().checkpoint()

    def _side_trial(self, spec: TrialSpec, source: Any, counter: Callable[[Any], int]) -> TrialResult:
        """One IO trial outside the schedule (IO_H2D, a sweep setting): progress, the device sync,
        the optional barrier, and the system metrics sampled during it."""
        self._output().trial_started(spec)
        sync = synchronizer()
        try:
            result = io_trial(spec, source, counter, self._trial_clock(sync), sync, begin=self._begin(spec, sync))
        finally:
            system = self._sampler.stop()
        return result if system is None else dataclasses.replace(result, system=system)

    def _run_sweep(self) -> None:
        """The loader sweep (config ``sweep``), before the schedule: IO warm-ups and trials for each
        setting on a new loader over the same dataset, its workers shut down after each."""
        config = self.config.sweep
        if not config.enabled:
            return
        out = self._output()
        if self._sweeper is None:
            out.line(warning_line("sweep: only a BenchmarkDataLoader knows the settings to vary; this loader is "
                                  "not swept."))
            return
        own = self._sweeper.own()
        settings = expand(config, own, self._sweeper.cores())
        io = self.config.io
        ntrials = io.ntrials if isinstance(io.ntrials, int) and io.ntrials > 0 else 3
        nwarmup = io.nwarmup if isinstance(io.nwarmup, int) else 1
        out.line(info_line(
            f"Loader sweep: {len(settings)} setting(s), each {nwarmup} warm-up + {ntrials} IO trials of "
            f"{io.nbatches} batches, before the schedule (the loader's own: {own.text()})."))
        before = self._sweeper.processes()
        results: List[SettingResult] = []
        for j, setting in enumerate(settings, 1):
            results.append(self._sweep_one(j, setting, nwarmup, ntrials, io.nbatches))
            stray = self._sweeper.processes() - before
            if stray:
                self._sweeper.stop(stray)
                out.line(warning_line(f"sweep: {len(stray)} process(es) of setting {setting.text()} outlived it "
                                      f"and were stopped."))
        self.results.sweep, self.results.sweep_own = results, own
        for row in sweep_table(results, own).plain().splitlines():
            out.line(f"BENCHY::SWEEP::{row}")
        chosen = smallest_within(results)
        if self.config.general.sweep_apply and chosen is not None and chosen.setting != own:
            self._sweeper.apply(chosen.setting)
            self._workers = chosen.setting.num_workers
            self._queue_depth = chosen.setting.num_workers * (chosen.setting.prefetch_factor or 0)
            self.results.sweep_applied = chosen.setting
            out.line(info_line(f"sweep_apply: the schedule continues with {chosen.setting.text()} (the smallest "
                               f"setting within 5 % of the best)."))
        else:
            out.line(info_line(f"The schedule continues with the loader's own settings ({own.text()})"
                               + ("." if self.config.general.sweep_apply else "; sweep_apply: true would use the "
                                  "recommended ones.")))

    def _sweep_one(self, j: int, setting: Setting, nwarmup: int, ntrials: int, nbatches: int) -> SettingResult:
        """One setting's trials (labels ``SWEEP<j>_WARMUP_<k>``, ``SWEEP<j>_<k>``); a failure is recorded."""
        assert self._sweeper is not None
        found = SettingResult(setting)
        source: Optional[BatchSource] = None
        try:
            loader = self._sweeper.make(setting)
            source = BatchSource(lambda: iter(loader), self._clock)
            batch = source.fetch()
            source.keep(batch)
            counter = make_counter(batch, self._fallback)
            specs = [TrialSpec(Mode.IO, k, True, nbatches, variant=f"SWEEP{j}") for k in range(1, nwarmup + 1)]
            specs += [TrialSpec(Mode.IO, k, False, nbatches, variant=f"SWEEP{j}") for k in range(1, ntrials + 1)]
            for spec in specs:
                (found.warmups if spec.warmup else found.trials).append(self._side_trial(spec, source, counter))
        except Exception as err:  # too many workers for the shared memory, a worker that dies ...
            found.error = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".rstrip(": ")
            self._output().line(warning_line(f"sweep: setting {setting.text()} failed ({found.error}); skipped."))
        finally:
            if source is not None:
                try:
                    source.close()
                except Exception:  # a worker already gone: nothing left to shut down
                    pass
        return found

    def _run_h2d(self) -> None:
        """IO_H2D: after the first IO trials, the same trials copying each batch to the accelerator.

        Run when the program has an accelerator in use at its first epoch (a model moved to
        the GPU), as many as IO's trials (3 when IO's count is auto), this rank's own; said and
        recorded as skipped otherwise.
        """
        results = self.results
        if not self.config.general.io_h2d:
            results.h2d_skipped = "io_h2d: false"
            return
        copy, device = self._h2d_copy, "the injected copy"
        if copy is None:
            found = accelerator_in_use()
            if found is None:
                results.h2d_skipped = "no accelerator in use at the first epoch (the run computes on the CPU)"
                self._output().line(info_line(f"IO_H2D: skipped: {results.h2d_skipped}."))
                return
            copy, device = copier(found), found
        results.h2d_device = device
        plan = self.schedule.plan(Mode.IO)
        assert plan is not None
        source = CopyingSource(self._source, copy)
        for k in range(1, (plan.ntrials or 3) + 1):
            spec = TrialSpec(Mode.IO, k, False, plan.nbatches, variant="H2D")
            self._hidden = spec
            try:
                result = self._side_trial(spec, source, self._make_counter())
            except Exception as err:  # a copy that fails (device memory, an odd batch) costs only this
                results.h2d_skipped = f"{spec.label} raised {type(err).__name__}: {err}"
                self._output().line(warning_line(f"IO_H2D: stopped: {results.h2d_skipped}."))
                break
            finally:
                self._hidden = None
            results.h2d.append(result)
            self._sink_().trial(result, False)
        self._source.drop_pending()

    # --- per-trial callbacks ------------------------------------------------------------------

    def _report(self, spec: TrialSpec, i: int, stamps: List[float], sizes: List[int], pauses: Pauses) -> None:
        """Periodic line: throughput over the last ``report_freq`` steps; its time is excluded."""
        low = i - self.config.general.report_freq
        paused = 0.0
        for k, d in reversed(pauses):  # only the latest pauses can fall in [low, i)
            if k < low:
                break
            paused += d
        span = stamps[i] - stamps[low] - paused
        rate = sum(sizes[low:i]) / span if span > 0 else float("inf")
        out = self._output()
        out.line(iteration_line(spec.label, i, spec.nbatches, rate))
        out.trial_progress(i, rate)
        pauses.append((i, self._clock() - stamps[i]))

    def _combine(self, result: TrialResult, change: Optional[float]) -> Tuple[TrialResult, Optional[float]]:
        """All ranks' view of a trial: samples of all ranks over the slowest rank's time, and the
        warm-up change of the rank still speeding up most (None when a rank could not tell)."""
        if self._world == 1:
            return result, change
        reports = self._comm.exchange(result.label, result.samples, result.seconds,
                                      math.nan if change is None else change)
        changes = [c for _, _, c in reports]
        combined = dataclasses.replace(
            result,
            samples=sum(n for n, _, _ in reports),
            seconds=max(t for _, t, _ in reports),
            rank_samples=tuple(n for n, _, _ in reports),
            rank_seconds=tuple(t for _, t, _ in reports),
        )
        return combined, (None if any(math.isnan(c) for c in changes) else min(changes))

    def _warmup_change(self, result: TrialResult) -> Optional[float]:
        """For ``nwarmup: auto``: how much this mode's step time still changes (this rank)."""
        new = result.step_seconds
        # Only the latest periods are compared: keep no more than the next call can look at.
        periods = self._warm_periods.get(result.mode, array("d")) + new
        self._warm_periods[result.mode] = periods[-max(2 * MIN_STEADY_WINDOW, len(new)):]
        return warmup_change(periods, len(new) // 2)

    def _trial_done(self, result: TrialResult, closed_early: bool = False, checkpoint: bool = True) -> None:
        if self._signalled:
            return
        system = self._sampler.stop()
        if system is not None:
            result = dataclasses.replace(result, system=system)
        self._current = None
        result = self._lookahead_window(result)
        plan = self.schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and plan is not None and plan.nwarmup is None
        try:
            result, change = self._combine(result, self._warmup_change(result) if auto_warmup else None)
        except DistributedError:
            # Keep what was measured, then stop this rank with the error.
            self._trial_aborted(result.spec, result.spec.nbatches, "the ranks could not exchange its results")
            self._close_profiler("after a failed exchange")
            self._state = _DONE
            self._record.finished = True
            self._source.close()
            try:  # what was measured is printed, as a single-rank run prints it (the error follows)
                self._output().trial_ended()
                self._sink_().summary(exiting=False)
            except Exception:
                pass
            raise
        self.results.trials.append(result)
        if auto_warmup:
            self.planner.record_warmup(result.mode, change)
        self._profiler_after(result.spec)
        self._sink_().trial(result, closed_early)
        is_last = result.spec.mode is not Mode.IO and self.planner.peek(self.results, fresh=True) is None
        self._notes()
        if is_last:
            # A trial that counts when its iterator is dropped (gc, not an explicit close) must
            # not end the process from inside a finalizer: the exit waits for the next iter().
            self._finish(may_exit=not closed_early or self._closing)
        elif checkpoint:
            self._sink_().checkpoint()

    def _lookahead_window(self, result: TrialResult) -> TrialResult:
        """Leave out the first period of epoch trials when the loop fetches one batch ahead.

        Decided once, from the first SYNTHETIC trial with three periods or more; FULL trials
        follow that decision (the same loop asks for their batches).
        """
        if result.spec.mode is Mode.IO:
            return result
        if self._lookahead is None and result.spec.mode is Mode.SYNTHETIC and len(result.step_seconds) >= 3:
            self._lookahead = fetches_ahead(result)
            if self._lookahead:
                self._output().line(info_line(
                    "the loop asks for batch k + 1 before it runs step k (it fetches one batch ahead, as "
                    "CUDA prefetchers such as timm's PrefetchLoader do): the first period of each SYNTHETIC and "
                    "FULL trial holds no step and is left out of the trial."
                ))
        if self._lookahead and len(result.step_seconds) >= 2:
            return without_first_period(result)
        return result

    def _trial_aborted(self, spec: TrialSpec, batches_done: int, reason: str) -> None:
        """A trial that did not finish: not counted, recorded, reported (never raises)."""
        if self._signalled:
            return
        self._sampler.stop()
        self._current = None
        self.results.interruptions.append(Interruption(spec, batches_done, reason))
        try:
            self._profiler_after(spec)
            hint = reason == STOPPED.format(k=batches_done, n=spec.nbatches) and batches_done > 0
            self._sink_().lost(self.results.interruptions[-1], hint)
        except Exception:  # during interpreter shutdown stdout may be gone
            pass

    # --- the end ------------------------------------------------------------------------------

    def _finish(self, may_exit: bool) -> None:
        """Summary, table and final JSON; then exit (``exit_after_tests``) or go transparent."""
        self._state = _DONE
        self._record.finished = True
        self._restore_sigterm()
        self._source.close()
        self._synthetic_batch = _NOTHING
        self._close_profiler("at the end of the benchmark")
        sink = self._sink_()
        exit_after = self.config.general.exit_after_tests
        sink.summary(exiting=exit_after and not self._exiting)
        if exit_after and not may_exit:
            if not self._exiting:
                self._exit_pending = True
                self._output().line(info_line(
                    "Tests completed when the loop dropped its iterator; benchy ends the process at the next "
                    "iter() of this loader."
                ))
            return
        sink.end(exit_after)

    # --- SIGTERM (Slurm's preemption and time-out) -----------------------------------------------

    def _install_sigterm(self) -> None:
        """Print and write what was measured on SIGTERM, then let the signal take its course."""
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        try:
            self._previous_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        except (ValueError, OSError):  # pragma: no cover - unusual embeddings
            self._previous_sigterm = None

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is None or threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
        except (ValueError, OSError):  # pragma: no cover
            pass

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        previous = self._previous_sigterm
        try:
            self._stop_for_signal("SIGTERM")
        finally:
            self._restore_sigterm()
            if callable(previous):
                previous(signum, frame)  # the script's or launcher's own handler
            elif previous != signal.SIG_IGN:
                os.kill(os.getpid(), signum)  # the default action: end with the signal's status

    def _stop_for_signal(self, name: str) -> None:
        """The running trial is named as interrupted; the summary is printed and the JSON written."""
        if os.getpid() != self._pid or self._state != _RUNNING:
            return
        running: Optional[TrialSpec] = self._hidden
        done = 0
        if running is None and self._current is not None:
            running = self._current.spec
            done = handed_out(self._current.stamps, running.nbatches)
        self._signalled = True  # from here on, the trial's own handlers must not report it again
        self._state = _DONE
        self._record.finished = True
        self._current = None
        out = self._output()
        try:
            out.trial_ended()
            if running is not None:
                self.results.interruptions.append(Interruption(
                    running, done, f"interrupted by {name} after {done} of {running.nbatches} batches"))
                out.line(warning_line(
                    f"{name} received during trial {running.label} ({done} of {running.nbatches} batches): it is not "
                    f"counted; the results measured so far follow."))
            else:
                out.line(warning_line(f"{name} received between trials; the results measured so far follow."))
            self._close_profiler(f"at {name}")
            self._sink_().summary(exiting=False)
        except Exception:  # the signal must take its course whatever happens here
            pass

    def _close_profiler(self, when: str) -> None:
        window = self._profiler()
        window.close(when)
        if window.events and not self._profiler_reported:
            self._profiler_reported = True
            self._output().line(info_line("Profiler: " + "; ".join(window.events) + "."))

    def _at_exit(self) -> None:
        """The script ended before the schedule did: say so and keep what was measured."""
        if os.getpid() != self._pid or self._state != _RUNNING:
            return
        self._exiting = True
        self._close_current()
        if self._state != _RUNNING:
            return
        out = self._output()
        out.trial_ended()
        self._close_profiler("at exit")
        if self.planner.peek(self.results, fresh=True) is None:
            out.line(warning_line("the script ended before the last trial finished; results below."))
            self._finish(may_exit=False)
            return
        needed = self.schedule.epochs_needed
        upto = "" if self.schedule.epochs_fewest == needed else "up to "
        # New wrappers built where this one was, and iterated as plain loaders: the loader is
        # re-created every epoch (a validation loader, built elsewhere, is no reason).
        again = [r for r in self._registry.records
                 if r is not self._record and r.iterated and not r.benchmarked and r.where == self._record.where]
        hint = ""
        if again:
            hint = (f" {len(again)} more wrapped loader(s) were built at {self._record.where} and iterated as plain "
                    f"loaders: a script that builds a new loader every epoch never finishes the schedule; build it "
                    f"once, before the epoch loop.")
        out.line(warning_line(
            f"the script stopped after {self.epochs_started} of the {upto}{needed} epochs the benchy schedule "
            f"needs ({self.schedule.describe()}); the results below are partial. Run {upto or 'at least '}{needed} "
            f"epochs to finish the schedule." + hint
        ))
        _, per_epoch = self.schedule.order(longest=not self.schedule.adaptive)
        for spec in per_epoch:
            if not self.planner.was_issued(spec):
                self.results.interruptions.append(Interruption(
                    spec, 0, f"not run: the script stopped asking for epochs after {self.epochs_started}"))
        self._state = _DONE
        self._record.finished = True
        self._source.close()
        self._sink_().summary(exiting=False)
