"""Where a run's results go: the English of every event, trial lines, the summary, the JSON and the
exit status.

The :class:`~benchy.session.session.Session` walks the schedule and hands each event here (values of
:mod:`benchy.session.events`, or a trial's result), with a typed :class:`~benchy.core.results.Snapshot`
of its state for summaries and JSON writes; this module decides nothing about trials, and every line a
session prints goes out through it. ``exit_after_tests`` ends the process here, in one place, with a
status that CI can trust:

* ``0``: every scheduled mode has at least one counted trial;
* :data:`EXIT_MISSING_MODE` (3): the schedule ended but a scheduled mode has no counted
  trial (every one of its trials was interrupted); the summary says which and why.

Every result file carries the status benchy advises for CI (``exit_status``): those two, and
:data:`~benchy.core.exits.EXIT_INCOMPLETE` (4) in a checkpoint and where the benchmark did not finish
(the script ended first, a signal, an error). benchy never applies 4 to the script's own process: a
tool that owns it does (``benchy run``, ``benchy check``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Optional

from ..core import machine as m
from ..core.config import Config
from ..core.exits import EXIT_INCOMPLETE, EXIT_MISSING_MODE
from ..core.outcomes import FailedRank
from ..core.progress import Progress
from ..core.results import RunResults, Snapshot, TrialResult
from ..core.schedule import Mode, ModePlan, Schedule
from ..core.verdict import MoreTrials, Reading, read
from ..measure.environment import environment
from ..results import lines, steps
from ..results.files import remove_stale_temporaries, write_json_atomic
from ..results.schema import result_document, stop_words
from ..results.summary import summary_lines, sweep_table
from . import events as ev
from .console import Output

__all__ = ["EXIT_MISSING_MODE", "ResultSink", "describe"]


# A warm-up's rise in step time up to this share is said as information, beyond it as a warning.
NOISY_RISE = 0.25


def _plan_text(p: ModePlan) -> str:
    warm = f"{p.nwarmup} warm-up" if p.nwarmup is not None else f"warm-ups until steady (1 to {p.max_warmup})"
    profiled = " + 1 profiled warm-up" if p.profiled else ""
    hidden = " on passes of its own" if p.mode is Mode.IO else ""
    if p.ntrials is not None:
        return f"{p.mode.value} {warm}{profiled} + {p.ntrials} x {p.nbatches} batches{hidden}"
    first = p.length(0)
    size = f"{first} growing to {p.nbatches}" if first < p.nbatches else f"{p.nbatches}"
    return f"{p.mode.value} {warm}{profiled} + {p.fewest_trials} to {p.max_trials} trials of {size} batches{hidden}"


def describe(schedule: Schedule) -> str:
    """The plan in one line, e.g. ``IO warm-ups until steady (1 to 4) + 2 to 8 trials of 8 growing to 50 batches on
    passes of its own; ...; then the extras: FLOPS, STAGES, ...``."""
    text = "; ".join(_plan_text(p) for p in schedule.plans)
    if schedule.extras:
        text += f"; then the extras, most useful first: {', '.join(e.value for e in schedule.extras)}"
    return text


def _ranks_text(failed: Any) -> str:
    """``rank 1 failed first (ValueError: boom)``, for one or more failed ranks."""
    found: List[FailedRank] = list(failed)
    if not found:
        return ""
    first = found[0]
    text = f"rank {first.rank} failed first ({first.reason})"
    if len(found) > 1:
        text += "; then " + ", ".join(f"rank {f.rank} ({f.reason})" for f in found[1:4])
    return text


class ResultSink:
    """Prints and writes what a :class:`Session` measured (rank 0 writes the JSON)."""

    def __init__(
        self,
        config: Config,
        schedule: Schedule,
        output: Output,
        *,
        rank: int,
        world: int,
        shutdown: Callable[[], None],
        exit: Callable[[int], Any] = sys.exit,
    ) -> None:
        self.config, self.schedule, self.out = config, schedule, output
        self.rank, self.world = rank, world
        self._environment: Optional[Dict[str, Any]] = None
        self._shutdown = shutdown  # the ranks' channel, closed before the process ends
        self._exit = exit
        self._json_error_shown = False
        self._steps_written = 0  # trials already in the steps file
        self._steps_failed = False

    @property
    def environment(self) -> Dict[str, Any]:
        """The run's environment for the JSON (torch, device, host, start time ...), read when the
        benchmark starts (:meth:`started`); a sink that never started reads it at its first use."""
        if self._environment is None:
            self._environment = environment(self.world)
        return self._environment

    # --- messages -----------------------------------------------------------------------------

    def info(self, message: str) -> None:
        self.out.line(lines.info(message))

    def warning(self, message: str) -> None:
        self.out.line(lines.warning(message))

    def say(self, event: ev.Event) -> None:
        """An event's English, as an information or a warning line."""
        if isinstance(event, ev.LoaderPlain):
            if event.same_site:
                self.warning(
                    f"a new {event.kind} was built at {event.where}, where the one running the benchmark "
                    f"was built: a loader re-created every epoch never finishes the schedule (each epoch "
                    f"gets a new wrapper, which is the plain loader). Build it once, before the epoch loop."
                )
            else:
                self.info(
                    f"{event.kind} created at {event.where} is the plain loader: a process runs one benchmark "
                    f"at a time, and the {event.running or 'another loader'} is running it (the first loader "
                    f"iterated)."
                )
        elif isinstance(event, ev.SideServed):
            during = f"during trial {event.label}" if event.label else "while the loop's epoch ran"
            self.info(
                f"an iter() {during} was served by the plain loader (a peek such as next(iter(loader)) inside "
                f"the loop); the loop's epoch and its trial go on, and the peek's time counts in the step it "
                f"ran in (said once)."
            )
        elif isinstance(event, ev.LookaheadFound):
            self.info(
                "the loop asks for batch k + 1 before it runs step k (it fetches one batch ahead, as CUDA "
                "prefetchers such as timm's PrefetchLoader and Accelerate's prepared loaders do): at each "
                "epoch's start its first period holds no step (the windows leave that period out)."
            )
        elif isinstance(event, ev.TrialLost):
            item = event.item
            self.out.trial_ended()
            self.warning(
                f"trial {item.spec.label} did not count ({item.batches_done} of {item.spec.nbatches} steps "
                f"measured): {item.reason}."
            )
        elif isinstance(event, ev.Signalled):
            who = _ranks_text(event.failed)
            who = f" {who[0].upper()}{who[1:]}; the launcher stopped the others." if who else ""
            if event.running is not None:
                self.warning(
                    f"{event.name} received during trial {event.running.label} ({event.measured} of "
                    f"{event.running.nbatches} steps measured): it is not counted.{who} The results measured "
                    f"so far follow."
                )
            else:
                self.warning(f"{event.name} received between trials.{who} The results measured so far follow.")
        elif isinstance(event, ev.RankFailed):
            self.warning(f"{_ranks_text(event.failed)}: that is why the ranks could not exchange the trial's results.")
        elif isinstance(event, ev.NoExitHere):
            self.info(
                f"exit_after_tests: benchy does not end this process, a {event.host} ({event.host.split()[0]} "
                f"would report the training as failed); the training goes on with the plain loader."
            )
        elif isinstance(event, m.WarmupEnded):
            what = "n/a" if event.change is None else f"{100.0 * event.change:+.1f} %"
            mode = event.mode.value
            if event.steady:
                self.info(
                    f"{mode} warm-up: steady after {event.done} warm-up trial(s) (median step time of the last "
                    f"steps {what} against the steps before, within {100 * event.tolerance:g} %; warm-up goes on "
                    f"while it falls by more)."
                )
            elif event.change is not None and event.tolerance < event.change <= NOISY_RISE:
                self.info(
                    f"{mode} warm-up: over after {event.done} warm-up trial(s): the median step time of the last "
                    f"steps moved {what} against the steps before (noise in a short window, or a step that gets "
                    f"slower: more warm-up would not cure it); measuring begins, and the trials' intervals carry "
                    f"the variation."
                )
            elif event.change is not None and event.change > event.tolerance:
                self.warning(
                    f"{mode} warm-up: not steady after {event.done} warm-up trial(s): the median step time of "
                    f"the last steps rose {what} against the steps before (warm-up makes steps faster, not "
                    f"slower: another process, throttling or a growing cost in the step); more warm-up would "
                    f"not cure it, so measuring begins, and the trials' intervals carry the variation."
                )
            else:
                self.info(
                    f"{mode} warm-up: not steady after {event.done} warm-up trials (auto_max_warmup; the median "
                    f"step time still changed {what}); measuring anyway: its first trials may be slower than "
                    f"later ones. Raise global.auto_max_warmup or nbatches."
                )
        elif isinstance(event, m.Stopped):
            counts = ", ".join(f"{mode.value} {w} warm-up + {t}" for mode, w, t in event.counts)
            s = self.schedule
            capped = [mode.value for mode in event.capped]
            most = s.plans[0].max_trials if s.plans else None
            why = stop_words(event.stop.value, s.decision_confidence, s.precision, s.horizon, capped, most)
            self.info(f"Schedule: done after {counts}: {why}.")
        elif isinstance(event, ev.SideFailed):
            self.out.trial_ended()
            self.warning(f"{event.reason}; only it is lost.")
        elif isinstance(event, ev.CounterNote):
            self.warning(event.text)
        elif isinstance(event, ev.SweepUnavailable):
            self.warning("sweep: only a BenchmarkDataLoader knows the settings to vary; this loader is not swept.")
        elif isinstance(event, ev.SweepStarted):
            self.info(
                f"Loader sweep: {event.settings} setting(s), each {event.warmups} warm-up + {event.trials} IO "
                f"trials of {event.nbatches} batches, before the schedule (the loader's own: {event.own})."
            )
        elif isinstance(event, ev.SweepFailed):
            self.warning(f"sweep: setting {event.setting} failed ({event.error}); skipped.")
        elif isinstance(event, ev.SweepStray):
            self.warning(f"sweep: {event.processes} process(es) of setting {event.setting} outlived it and were stopped.")
        elif isinstance(event, ev.SweepOverCap):
            self.warning(
                f"sweep: the workers of {', '.join(event.settings)} took more memory than the cap of "
                f"{event.cap_bytes / 1e9:.2f} GB (the memory available at the sweep's start less room for the "
                f"training process); not recommended."
            )
        elif isinstance(event, ev.SweepApplied):
            if event.applied:
                self.info(
                    f"sweep_apply: the schedule continues with {event.setting} (the smallest setting within 5 % of the best)."
                )
            else:
                self.info(
                    f"The schedule continues with the loader's own settings ({event.setting})"
                    + ("." if event.apply_on else "; sweep_apply: true would use the recommended ones.")
                )
        elif isinstance(event, ev.H2DSkipped):
            self.out.trial_ended()
            if event.stopped:
                self.warning(f"IO_H2D: stopped: {event.reason}.")
            else:
                self.info(f"IO_H2D: skipped: {event.reason}.")
        elif isinstance(event, ev.StagesStarted):
            self.info(
                f"Stage trials: {event.warmups} warm-up + {event.trials} IO trials of {event.nbatches} batches "
                f"on an instrumented copy of the loader ({event.workers} workers; transforms: {event.split}); "
                f"not counted in IO."
            )
        elif isinstance(event, ev.EmulatedStarted):
            self.info(
                f"Emulated-step trials (what-if check): {event.warmups} warm-up + {event.trials} trials of "
                f"{event.nbatches} batches from the real loader, the step replaced by {1e3 * event.seconds:.3f} ms "
                f"a batch ({1e3 * event.cpu:.3f} ms of it CPU work): a step {event.speedup:.3g}x faster; not counted."
            )
        elif isinstance(event, ev.EmulatedSkipped):
            self.out.trial_ended()
            self.warning(f"emulated-step trials: stopped: {event.reason}.")
        elif isinstance(event, ev.StagesStopped):
            self.out.trial_ended()
            self.warning(f"stage trials: stopped: {event.reason}.")
        elif isinstance(event, ev.CaptureRange):
            self.info("Profiler (the cudaProfilerStart/Stop capture range for Nsight Systems): " + "; ".join(event.events) + ".")
        elif isinstance(event, ev.TraceWritten):
            others = f" Every rank writes its own (rank<r>.<trial>.pt.trace.json in {event.others})." if event.others else ""
            self.info(
                f"torch.profiler (rank {event.rank}): {event.event}; an extra warm-up, not counted. Open it in "
                f"https://ui.perfetto.dev, chrome://tracing or TensorBoard's profiler plugin.{others}"
            )

    def started(self, schedule: Schedule, config: Config, snapshot: Snapshot, nvtx: bool, queue_depth: int) -> None:
        """What the benchmark does, said when it starts: ranks, the config, the schedule and the steps it takes,
        the loader, NVTX, and a warning when every step is synchronized. The environment (with the start time that
        names the run by default) is read now."""
        self._environment = environment(self.world)
        if self.world > 1:
            self.info(
                f"{self.world} ranks: each measures its own trials; throughputs are of all ranks together "
                f"(samples of all ranks / the slowest rank's trial time)."
            )
        if config.source == "defaults":
            self.info("Using default benchy configuration.")
        else:
            self.info(f"Using benchy configuration from {config.source}.")
        text = f"Schedule: {describe(schedule)}."
        if schedule.window_plans:
            epoch_length, epochs, most = snapshot.epoch_length, snapshot.epochs_needed, snapshot.steps_needed
            min_steps = m.min_epoch_steps(queue_depth)
            span = (
                f": {epochs} epoch(s) of {epoch_length} batches in all are enough, counting the one running now "
                f"(the most it may take)"
                if epochs is not None
                else f"; but epochs of {epoch_length} batches are too short to hold a window (each must run at least "
                f"{min_steps} steps), so no number of them finishes it"
                if epoch_length is not None and epoch_length < min_steps
                else ""
            )
            stops = (
                f"; it stops as soon as the verdict is decided (sides 2x apart: typically within "
                f"{m.steps_of(schedule, queue_depth, None, decided_after=3, verdict_only=True)} steps)"
                if schedule.stops_early
                else ""
            )
            fit = f", fitted into the loop's {schedule.horizon} steps" if schedule.horizon is not None else ""
            text += (
                f" SYNTHETIC and FULL trials are windows of steps in the training loop, alternating from its first "
                f"step{stops}; at most about {most} steps{fit}{span}; the loop's epochs, len() and random streams "
                f"stay its own."
            )
        text += (
            " At the schedule's end: the summary, then benchy ends the process (exit_after_tests: true)."
            if config.general.exit_after_tests
            else " At the schedule's end: the summary, then the loop goes on with the plain loader and the "
            "process ends as the script ends it (exit_after_tests: false)."
        )
        self.info(text)
        if schedule.window_plans:
            self.info(f"Benchmarking the {snapshot.loader}.")
        if nvtx:
            self.info("NVTX: a tool is attached; ranges per trial, step and fetch in domain 'benchy'.")
        if config.general.sync_every_step:
            self.warning(
                "sync_every_step is on: the device is synchronized at every step, which serializes CPU and "
                "device work; throughputs are lower than in normal training."
            )

    def stopped_early(self, progress: Progress) -> None:
        """The script ended before the schedule did: how far it got, and what the schedule needs."""
        if progress.failed is not None:
            self.warning(
                f"the benchmark ended when trial {progress.failed.spec.label} raised "
                f"({progress.failed.reason}); the results below are partial. Fix the error, then run again."
            )
            return
        ran = f"{progress.epochs} epoch(s), {progress.steps} step(s) since the benchmark started"
        if progress.raised is not None:
            self.warning(
                f"the script ended with an uncaught exception ({progress.raised}) after {ran}; the results "
                f"below are partial. Fix the error, then run again."
            )
            return
        need = f"about {progress.steps_needed} steps"
        during = f" during trial {progress.running}" if progress.running else ""
        stopped = f"the script stopped after {ran}{during}, before the benchy schedule's end"
        if progress.too_short:
            each = (
                f"the loop leaves each epoch after {progress.epoch_length} step(s)"
                if progress.left_early
                else f"its epochs are {progress.epoch_length} step(s) long"
            )
            ready = (
                f", and before it the {progress.queue_depth} batches the loader's workers hold ready and the one the "
                f"epoch's first step fetched go by untimed"
                if progress.queue_depth
                else ", and so is its first"
            )
            self.warning(
                f"{stopped} (its windows take {need} in epochs long enough to hold them: {describe(self.schedule)}); the "
                f"results below are partial. The epochs are "
                f"too short to hold a window: {each}, and a window measures nothing in an epoch of fewer than "
                f"{progress.min_steps} steps (the period an epoch's end cuts is left out{ready}), so no number of such "
                f"epochs finishes the schedule. Let each epoch run at least {progress.min_steps} steps." + self._rebuilt(progress)
            )
            return
        unit = "steps" if progress.left_early else "batches"
        most = f"about {max(1, progress.steps_needed - progress.steps)} more steps"
        if progress.epochs_needed is not None:
            need += f", {progress.epochs_needed} epoch(s) of {progress.epoch_length} {unit}"
            most = (
                f"{progress.epochs_needed} epochs in all ({max(1, progress.epochs_needed - progress.epochs)} more "
                f"than this run; the most it may take)"
            )
        if self.schedule.stops_early:
            if progress.likely is None:
                likely = (
                    "The sides are too close to tell from the trials so far: a decision may take the whole schedule. "
                    f"Run it for {most}."
                )
            elif progress.likely_epochs is not None:
                likely = (
                    f"From the trials so far, a decision would likely take about {progress.likely} more steps: run it "
                    f"for {progress.likely_epochs} epochs in all ({max(1, progress.likely_epochs - progress.epochs)} "
                    f"more than this run), or, to be sure, {most}."
                )
            else:
                likely = (
                    f"From the trials so far, a decision would likely take about {progress.likely} more steps of the "
                    f"loop ({most} at the most)."
                )
            self.warning(
                f"the script stopped after {ran}{during}, before the verdict was decided ({need} in all at the most: "
                f"{describe(self.schedule)}); the results below are partial. {likely}" + self._rebuilt(progress)
            )
            return
        fits = (
            f", or make every window shorter so that the schedule fits in the {progress.steps} steps this run took "
            f"(nbatches: {progress.fits} in the synthetic and full sections of a config file)"
            if progress.fits is not None
            else ""
        )
        self.warning(
            f"{stopped} ({need} in all: {describe(self.schedule)}); the results below are partial. Run it for "
            f"{most} to finish the schedule{fits}." + self._rebuilt(progress)
        )

    @staticmethod
    def _rebuilt(progress: Progress) -> str:
        if not progress.rebuilt:
            return ""
        return (
            f" {progress.rebuilt} more wrapped loader(s) were built at {progress.where} and iterated as plain "
            f"loaders: a script that builds a new loader every epoch never finishes the schedule; build it "
            f"once, before the epoch loop."
        )

    def incomplete(self) -> None:
        """The script ended before the schedule: what status CI gets, said last."""
        self.warning(
            f"incomplete run: the script's exit status and exit handlers stay its own; benchy run (where the "
            f"script ends with 0) and benchy check {self.config.output_path} report status {EXIT_INCOMPLETE} "
            f"(the JSON's exit_status), so CI can tell a partial run from a complete one (benchy --help lists "
            f"the statuses)."
        )

    def sweep(self, results: RunResults) -> None:
        """The loader sweep's table, one ``BENCHY::SWEEP::`` line per row."""
        for row in sweep_table(results.sweep, results.sweep_own).plain().splitlines():
            self.out.line(lines.sweep_row(row))

    # --- status -------------------------------------------------------------------------------

    def missing_modes(self, results: RunResults) -> List[Mode]:
        """Scheduled modes without a single counted trial."""
        return [m for m in self.schedule.modes if not results.measured(m)]

    def exit_status(self, results: RunResults) -> int:
        return EXIT_MISSING_MODE if self.missing_modes(results) else 0

    # --- events -------------------------------------------------------------------------------

    def trial(self, result: TrialResult) -> None:
        self.out.trial_ended()
        self.out.line(lines.trial(result.label, result.throughput))
        share = result.data_wait
        if share is not None and result.work_median is not None and result.wait_median is not None:
            self.out.line(lines.trial_wait(result.label, share, result.work_median, result.wait_median))
        system = result.system
        if system is not None and system.disturbed:
            self.warning(
                f"trial {result.label} ran on a busy machine: other processes kept "
                f"{system.other_cores_busy or 0.0:.2f} of its {system.cpu_cores or 0:g} cores busy (more than "
                f"busy_machine_share = {self.config.general.busy_machine_share:g}); its throughput is likely "
                f"low."
            )

    def clean_stale(self) -> None:
        """Remove temporary files a killed benchy left in the output and per-step directories (rank 0)."""
        if self.rank != 0:
            return
        removed = remove_stale_temporaries(os.path.dirname(os.path.abspath(self.config.output_path)))
        if self.config.steps_dir is not None:
            removed += remove_stale_temporaries(self.config.steps_dir)
            # Ranks' files of an earlier run (save_steps: all) must not pass for this run's: removed now, before
            # any rank saves (each saves after its first trial's exchange, which waits for this rank).
            steps.clear_ranks(self.config.steps_dir)
        if removed:
            self.info(f"removed {len(removed)} stale temporary file(s) left by an interrupted benchy run: " + ", ".join(removed))

    def checkpoint(self, snapshot: Snapshot) -> None:
        """The JSON after a trial: no per-step lists and no stall claim, so it costs the new trial only; an
        unfinished run, so its ``exit_status`` is :data:`EXIT_INCOMPLETE`."""
        self.write_json(snapshot, self.reading(snapshot, steps=False), final=False, exit_status=EXIT_INCOMPLETE)

    # --- the end ------------------------------------------------------------------------------

    def reading(self, snapshot: Snapshot, *, steps: bool = True) -> Reading:
        g = self.config.general
        return read(
            snapshot.results,
            self.schedule.modes,
            self.schedule.decision_confidence,
            snapshot.workers,
            snapshot.startup,
            steps=steps,
            world=self.world,
            peak_flops=g.peak_flops,
            tokens_source=snapshot.tokens,
            whatif=g.whatif and steps,  # the final summary's: a checkpoint does not work the model out
            price=g.price_per_hour,
            epoch_batches=snapshot.epoch_length,
            more=MoreTrials(
                auto=any(p.ntrials is None for p in self.schedule.plans if p.mode in (Mode.IO, Mode.SYNTHETIC)),
                max_trials=g.auto_max_trials,
                finished=snapshot.finished,
                likely=snapshot.likely_steps,
            ),
        )

    def summary(self, snapshot: Snapshot, exit_status: int) -> None:
        """The summary lines, the terminal table and the final JSON, from one :class:`Reading`;
        ``exit_status``: the status benchy advises for CI (0, 3, or 4 for a benchmark that did not
        finish), the JSON's ``exit_status``.
        """
        modes = self.schedule.modes
        lost = snapshot.outcomes.lost
        if lost:
            labels = ", ".join(i.spec.label for i in lost)
            self.warning(
                f"{len(lost)} scheduled trial(s) did not count ({labels}); the reasons are above and in the JSON's 'interrupted'."
            )
        # The step profiles (the verdict's stall claim, the STEPS lines, the JSON's steps) read every
        # step: worked out here only, once, in the reading every output renders from.
        results = snapshot.results
        reading = self.reading(snapshot, steps=True)
        printed = summary_lines(results, modes, reading, snapshot.workers, self.world)
        for line in printed:
            self.out.line(line)
        self.out.summary_table(results, modes, reading)
        self.write_json(snapshot, reading, final=True, exit_status=exit_status, summary=printed)

    def end(self, results: RunResults, exit_after_tests: bool) -> None:
        """After the summary: end the process (``exit_after_tests``) or say the loader is plain now."""
        status = self.exit_status(results)
        missing = self.missing_modes(results)
        if missing:
            names = ", ".join(m.value for m in missing)
            self.warning(
                f"no counted trial for {names}: the comparison is incomplete"
                + (f"; exiting with status {status}." if exit_after_tests else ".")
            )
        if not exit_after_tests:
            self.info("Tests completed; the loader is now the plain one for the remaining epochs.")
            return
        self.info("Tests completed.... exiting.")
        sys.stdout.flush()
        self._shutdown()  # every rank got here through the last exchange
        self._exit(status)  # the one place benchy ends the process: exit_after_tests

    def save_steps(self, results: RunResults) -> Optional[str]:
        """Save the trials that ended since the last call, one file each; the directory's name.

        Each trial's per-step data is written once, so a checkpoint costs the new trials only.
        The first call of a run clears a previous run's trial files from the directory. Rank 0
        saves into ``steps_dir``; with ``save_steps: all`` every other rank into its ``rank<r>/``.
        """
        directory = self.config.rank_steps_dir(self.rank)
        if directory is None or self._steps_failed:
            return None
        try:
            if self._steps_written == 0:
                steps.clear(directory)
            for result in results.trials[self._steps_written :]:
                steps.save(directory, result)
                self._steps_written += 1
        except (OSError, ValueError) as err:
            self._steps_failed = True
            self.warning(
                f"cannot save the per-step times in {directory}: {err}. The final JSON's 'rates' hold the "
                f"counted trials' per-step throughputs; this run saves no further per-step files."
            )
            return None
        return os.path.basename(directory)

    def write_json(
        self,
        snapshot: Snapshot,
        reading: Reading,
        *,
        final: bool,
        exit_status: Optional[int] = None,
        summary: Optional[List[str]] = None,
    ) -> None:
        """The JSON (rank 0): a checkpoint (``final`` false: no per-step lists, O(the new trials)) or
        the final document (with each mode's per-step ``rates``, announced)."""
        steps_dir = self.save_steps(snapshot.results)
        if self.rank != 0:
            return
        path = self.config.output_path
        document = result_document(
            snapshot,
            self.schedule.modes,
            reading,
            config=self.config.to_dict(),
            environment=self.environment,
            nranks=self.world,
            exit_status=exit_status,
            per_step=final,
            steps_dir=steps_dir,
            summary=summary,
            run_name=self.config.general.run_name,
        )
        try:
            write_json_atomic(path, document)
        except (OSError, ValueError) as err:
            if final or not self._json_error_shown:
                self._json_error_shown = True
                self.out.line(
                    lines.error(
                        f"cannot write the JSON result to {path}: {err}. "
                        f"The BENCHY:: lines printed here are the only copy of the results."
                    )
                )
            return
        if final:
            self.info(f"Writing JSON output to {path}.")
