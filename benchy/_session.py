"""One benchmark run: walks the schedule as the script asks for epochs (glue, no hot loop).

``iterate()`` is what a wrapper's ``__iter__`` returns: the hidden IO trials run inside
the first call, each later call is one SYNTHETIC or FULL trial, and after the last trial
the summary is printed, the JSON written, and the process exits (``exit_after_tests``)
or every later call returns the plain loader's iterator.
"""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import os
import sys
import time
import weakref
from typing import Any, Callable, Iterator, List, Optional

from ._batch import make_counter
from ._config import Config
from ._console import Output
from ._device import synchronizer
from ._dist import DistributedError, LocalComm, make_comm
from ._profiling import CudaProfilerApi, ProfilerWindow, global_rank, nvtx_ranges
from ._env import environment
from ._report import (
    info_line,
    iteration_line,
    result_document,
    summary_lines,
    trial_line,
    verdict,
    warning_line,
    write_json_atomic,
)
from ._results import Interruption, RunResults, TrialResult
from ._schedule import Mode, Schedule, TrialSpec
from ._source import BatchSource
from ._trial import (
    Pauses,
    epoch_trial_annotated,
    full_trial,
    io_trial,
    io_trial_annotated,
    synthetic_trial,
)

__all__ = ["Session"]

_NEW, _RUNNING, _DONE = "new", "running", "done"


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
    ) -> None:
        self.config = config
        self.schedule = Schedule.from_config(config)
        self.results = RunResults()
        self.epochs_started = 0
        self._make_iterator = make_iterator
        self._source = BatchSource(make_iterator)
        self._fallback = fallback_batch_size
        self._clock = clock
        self._out = output
        self._counter: Optional[Callable[[Any], int]] = None
        self._state = _NEW
        self._next = 0
        self._active: Optional["weakref.ReferenceType[Any]"] = None
        self._pid = os.getpid()
        self._json_error_shown = False
        self._comm: Any = LocalComm()
        self._rank = 0
        self._world = 1
        self._environment: Optional[dict] = None
        self._profiler_api = profiler_api
        self._ranges: Any = None
        self._window: Optional[ProfilerWindow] = None
        self._profiler_reported = False

    # --- public ---------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once every trial has run (the wrapper is transparent from then on)."""
        return self._state == _DONE

    def iterate(self) -> Iterator[Any]:
        """The iterator for the next epoch: a trial while the schedule runs, else the plain one."""
        if self._state == _DONE:
            return iter(self._make_iterator())
        self._close_active()
        first = self._state == _NEW
        if first:
            self._start()
            self._run_hidden_io()
        if self._next >= len(self.schedule.per_epoch):
            # Only IO was scheduled (its trials ran in this first epoch), or the last trial
            # was cut short and the script goes on.
            self.epochs_started += int(first)
            self._finish()
            return iter(self._make_iterator())
        self.epochs_started += 1
        spec = self.schedule.per_epoch[self._next]
        self._next += 1
        self._output().trial_started(spec)
        self._profiler().before_trial(spec)
        sync = synchronizer()
        args = (spec, self._source, self._make_counter(), self._trial_clock(sync), sync,
                self._trial_done, self._trial_aborted, self._report, self.config.general.report_freq)
        begin = self._begin(spec, sync)
        if self._ranges is not None:
            gen = epoch_trial_annotated(*args, self._ranges, begin=begin)
        elif spec.mode is Mode.SYNTHETIC:
            gen = synthetic_trial(*args, begin=begin)
        else:
            gen = full_trial(*args, begin=begin)
        # A weak reference: a loop that breaks out drops the generator at once, and its
        # interruption is reported then, not at the next epoch.
        self._active = weakref.ref(gen)
        return gen

    # --- schedule steps -------------------------------------------------------------------

    def _output(self) -> Output:
        if self._out is None:
            self._out = Output(self.config.general.console, enabled=self._rank == 0)
        return self._out

    def _profiler(self) -> ProfilerWindow:
        if self._window is None:
            g = self.config.general
            self._window = ProfilerWindow(
                g.profiler_mode, global_rank(), [Mode(m) for m in g.profiler_capture],
                self.schedule.hidden + self.schedule.per_epoch, api=self._profiler_api,
            )
        return self._window

    def _begin(self, spec: TrialSpec, sync: Callable[[], None]) -> Optional[Callable[[], None]]:
        """What runs just before a trial's clock starts: with ``use_distributed_barrier`` and
        several ranks, the device sync and then a barrier, so that all ranks start together."""
        if not (self.config.general.use_distributed_barrier and self._world > 1):
            return None
        comm = self._comm

        def begin() -> None:
            sync()
            comm.barrier(f"{spec.label} (start barrier)")

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
        self._environment = environment(self._world)
        self._ranges = nvtx_ranges(self.config.general.nvtx)
        out = self._output()
        if self._world > 1:
            out.line(info_line(
                f"{self._world} ranks: each measures its own trials; throughputs are of all ranks together "
                f"(samples of all ranks / the slowest rank's trial time)."
            ))
        if self.config.source == "defaults":
            out.line(info_line("Using default benchy configuration."))
        else:
            out.line(info_line(f"Using benchy configuration from {self.config.source}."))
        out.line(info_line(
            f"Schedule: {self.schedule.describe()}; the script must run at least "
            f"{self.schedule.epochs_needed} epochs."
        ))
        if self._ranges is not None:
            out.line(info_line("NVTX: a tool is attached; ranges per trial, step and fetch in domain 'benchy'."))
        if self.config.general.sync_every_step:
            out.line(warning_line(
                "sync_every_step is on: the device is synchronized at every step, which serializes CPU and "
                "device work; throughputs are lower than in normal training."
            ))
        atexit.register(self._at_exit)

    def _make_counter(self) -> Callable[[Any], int]:
        """Sample counter specialised from the first batch, which is kept for the first trial."""
        if self._counter is None:
            batch = self._source.fetch()
            self._source.keep(batch)
            self._counter = make_counter(batch, self._fallback)
        return self._counter

    def _run_hidden_io(self) -> None:
        out = self._output()
        for spec in self.schedule.hidden:
            out.trial_started(spec)
            self._profiler().before_trial(spec)
            sync = synchronizer()
            args = (spec, self._source, self._make_counter(), self._trial_clock(sync), sync,
                    self._report, self.config.general.report_freq)
            begin = self._begin(spec, sync)
            try:
                if self._ranges is not None:
                    result = io_trial_annotated(*args, self._ranges, begin=begin)
                else:
                    result = io_trial(*args, begin=begin)
            except BaseException as err:
                self._trial_aborted(spec, 0, f"the data loader raised {type(err).__name__}: {err}")
                raise
            # No JSON between IO trials: a pause there lets loader workers fill their queue,
            # and the next trial would start with free batches.
            self._trial_done(result, checkpoint=False)
        self._write_json(complete=False, announce=False)

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

    def _combine(self, result: TrialResult) -> TrialResult:
        """All ranks' view of a trial: samples of all ranks over the slowest rank's time."""
        if self._world == 1:
            return result
        reports = self._comm.exchange(result.label, result.samples, result.seconds)
        return dataclasses.replace(
            result,
            samples=sum(n for n, _ in reports),
            seconds=max(t for _, t in reports),
            rank_samples=tuple(n for n, _ in reports),
            rank_seconds=tuple(t for _, t in reports),
        )

    def _trial_done(self, result: TrialResult, checkpoint: bool = True) -> None:
        self._active = None
        try:
            result = self._combine(result)
        except DistributedError:
            # Keep what was measured, then stop this rank with the error.
            self._trial_aborted(result.spec, result.spec.nbatches, "the ranks could not exchange its results")
            self._close_profiler("after a failed exchange")
            self._state = _DONE
            raise
        self.results.trials.append(result)
        self._profiler().after_trial(result.spec)
        out = self._output()
        out.trial_ended()
        out.line(trial_line(result))
        is_last = self._next >= len(self.schedule.per_epoch) and result.spec.mode is not Mode.IO
        if is_last:
            self._finish()
        elif checkpoint:
            self._write_json(complete=False, announce=False)

    def _trial_aborted(self, spec: TrialSpec, batches_done: int, reason: str) -> None:
        """A trial that did not finish: not counted, recorded, reported (never raises)."""
        self._active = None
        self.results.interruptions.append(Interruption(spec, batches_done, reason))
        try:
            self._profiler().after_trial(spec)
            out = self._output()
            out.trial_ended()
            out.line(warning_line(
                f"trial {spec.label} stopped after {batches_done} of {spec.nbatches} batches: {reason}. "
                f"It is not counted. If your loop takes fewer steps per epoch, set nbatches to at most that."
            ))
            self._write_json(complete=False, announce=False)
        except Exception:  # during interpreter shutdown stdout may be gone
            pass

    def _close_active(self) -> None:
        ref, self._active = self._active, None
        gen = ref() if ref is not None else None
        if gen is None:
            return
        if inspect.getgeneratorstate(gen) == inspect.GEN_CREATED:
            gen.close()
            spec = self.schedule.per_epoch[self._next - 1]
            self._trial_aborted(spec, 0, "the epoch's iterator was never advanced")
        else:
            gen.close()  # a suspended trial records its own interruption

    def _finish(self, may_exit: bool = True) -> None:
        """Summary, table and final JSON; then exit (``exit_after_tests``) or go transparent."""
        self._state = _DONE
        self._source.close()
        out = self._output()
        self._close_profiler("at the end of the benchmark")
        modes = self.schedule.modes
        for line in summary_lines(self.results, modes):
            out.line(line)
        out.summary_table(self.results, modes, self._verdict())
        # Complete means nothing is missing: every scheduled trial ran to its end.
        self._write_json(complete=not self.results.interruptions, announce=True)
        if not may_exit:
            return
        if self.config.general.exit_after_tests:
            out.line(info_line("Tests completed.... exiting."))
            sys.stdout.flush()
            self._comm.shutdown()  # every rank got here through the last exchange
            sys.exit(0)  # the one place benchy ends the process: exit_after_tests
        out.line(info_line("Tests completed; the loader is now the plain one for the remaining epochs."))

    def _close_profiler(self, when: str) -> None:
        """Stop the capture if it still runs, and say once what the profiler calls were."""
        window = self._profiler()
        window.close(when)
        if window.wanted and window.events and not self._profiler_reported:
            self._profiler_reported = True
            self._output().line(info_line("Profiler: " + "; ".join(window.events) + "."))

    def _verdict(self) -> Optional[str]:
        modes = self.schedule.modes
        get = lambda m: self.results.estimate(m) if m in modes else None  # noqa: E731
        return verdict(get(Mode.IO), get(Mode.SYNTHETIC), get(Mode.FULL))

    def _at_exit(self) -> None:
        """The script ended before the schedule did: say so and keep what was measured."""
        if os.getpid() != self._pid or self._state != _RUNNING:
            return
        self._close_active()
        out = self._output()
        out.trial_ended()
        self._close_profiler("at exit")
        needed = self.schedule.epochs_needed
        if self._next >= len(self.schedule.per_epoch):
            out.line(warning_line("the script ended before the last trial finished; results below."))
            self._finish(may_exit=False)
            return
        out.line(warning_line(
            f"the script stopped after {self.epochs_started} of the {needed} epochs the benchy schedule "
            f"needs ({self.schedule.describe()}); the results below are partial. Run at least {needed} "
            f"epochs to finish the schedule."
        ))
        for line in summary_lines(self.results, self.schedule.modes):
            out.line(line)
        self._write_json(complete=False, announce=True)
        self._state = _DONE

    # --- JSON -------------------------------------------------------------------------------

    def _write_json(self, *, complete: bool, announce: bool) -> None:
        if self._rank != 0:
            return
        path = self.config.output_path
        document = result_document(
            self.results,
            self.schedule.modes,
            config=self.config.to_dict(),
            environment=self._environment or {},
            nranks=self._world,
            complete=complete,
            epochs_needed=self.schedule.epochs_needed,
            epochs_started=self.epochs_started,
            profiler={
                "nvtx_tool_attached": self._ranges is not None,
                "profiler_mode": self.config.general.profiler_mode,
                "capture": list(self.config.general.profiler_capture),
                "events": list(self._profiler().events),
            },
        )
        try:
            write_json_atomic(path, document)
        except (OSError, ValueError) as err:
            if announce or not self._json_error_shown:
                self._json_error_shown = True
                self._output().line(
                    f"BENCHY::ERROR::Message: cannot write the JSON result to {path}: {err}. "
                    f"The BENCHY:: lines printed here are the only copy of the results."
                )
            return
        if announce:
            self._output().line(info_line(f"Writing JSON output to {path}."))
