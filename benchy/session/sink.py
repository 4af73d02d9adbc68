"""Where a run's results go: every line, the summary, the JSON and the exit status, from the session's values and one
:class:`~benchy.core.results.Snapshot`; it decides nothing about trials. ``exit_after_tests`` ends the process here,
in one place. A benchmark that did not finish carries :data:`~benchy.core.exits.EXIT_INCOMPLETE` in the JSON, which
benchy never applies to the script's own process (``benchy run`` and ``benchy check`` do).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core import events as ev
from ..core.claims import MoreTrials
from ..core.config import Config
from ..core.exits import EXIT_INCOMPLETE, EXIT_MISSING_MODE
from ..core.results import RunResults, Snapshot, TrialResult
from ..core.schedule import Mode, Schedule
from ..core.verdict import Reading, read
from ..core.watch import Baseline, Watch, WatchedEpoch
from ..core.words import Said
from ..measure.environment import environment
from ..results import lines, steps
from ..results.files import remove_stale_temporaries, write_json_atomic
from ..results.schema import result_document
from ..results.summary import summary_lines, sweep_table
from ..results.text import run as run_text
from .console import Output

# Events that end a trial's progress line before they are said.
ENDS_TRIAL = (ev.TrialLost, ev.SideFailed, ev.H2DSkipped, ev.EmulatedSkipped, ev.StagesStopped)


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
        # The final summary as written (the watch's end writes the JSON again with its block).
        self._final: Optional[Tuple[Snapshot, Reading, List[str], int]] = None

    # --- messages -----------------------------------------------------------------------------

    def info(self, message: str) -> None:
        self.out.line(lines.info(message))

    def warning(self, message: str) -> None:
        self.out.line(lines.warning(message))

    def say(self, event: ev.Event) -> None:
        """An event, in its own words, as an information or a warning line."""
        if isinstance(event, ENDS_TRIAL):
            self.out.trial_ended()
        self.line(event.words())

    def line(self, said: Said) -> None:
        (self.warning if said.warning else self.info)(said.text)

    def started(self, schedule: Schedule, config: Config, snapshot: Snapshot, nvtx: bool, queue_depth: int) -> None:
        """What the benchmark does, said when it starts; the environment (with the start time that names the run by
        default) is read now."""
        self._environment = environment(self.world)
        for said in run_text.started(schedule, config, snapshot, self.world, nvtx, queue_depth):
            self.line(said)

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
        busy = run_text.busy_trial(result, self.config.general.busy_machine_share)
        if busy is not None:
            self.warning(busy)

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
            self.info(run_text.stale_removed(removed))

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
            depth=snapshot.queue_depth,
            more=MoreTrials(
                auto=any(p.ntrials is None for p in self.schedule.plans if p.mode in (Mode.IO, Mode.SYNTHETIC)),
                max_trials=g.auto_max_trials,
                finished=snapshot.finished,
                likely=snapshot.likely_steps,
            ),
        )

    def summary(self, snapshot: Snapshot, exit_status: int) -> None:
        """The summary lines, the terminal table and the final JSON (its ``exit_status``), from one :class:`Reading`."""
        modes = self.schedule.modes
        lost = snapshot.outcomes.lost
        if lost:
            self.warning(run_text.lost_trials([i.spec.label for i in lost]))
        # The step profiles (the verdict's stall claim, the STEPS lines, the JSON's steps) read every
        # step: worked out here only, once, in the reading every output renders from.
        results = snapshot.results
        reading = self.reading(snapshot, steps=True)
        printed = summary_lines(
            results, modes, reading, snapshot.workers, self.world, snapshot.schedule, self.config.general.auto_max_trials
        )
        for line in printed:
            self.out.line(line)
        self.out.summary_table(results, modes, reading)
        self.write_json(snapshot, reading, final=True, exit_status=exit_status, summary=printed)
        self._final = (snapshot, reading, printed, exit_status)

    def watch_rise(self, epoch: WatchedEpoch, baseline: Optional[Baseline]) -> None:
        """An epoch after the schedule whose data wait rose (``BENCHY::WATCH::``)."""
        self.out.line(lines.watch_rise(epoch.words(baseline)))

    def watch_end(self, watch: Watch) -> None:
        """At the process's end: the watch's summary line, and the final JSON again with its ``watch`` block."""
        line = lines.summary_text("WATCH", watch.words())
        self.out.line(line)
        if self._final is not None:
            snapshot, reading, printed, status = self._final
            self.write_json(
                dataclasses.replace(snapshot, watch=watch), reading, final=True, exit_status=status, summary=[*printed, line]
            )

    def end(self, results: RunResults, exit_after_tests: bool) -> None:
        """After the summary: end the process (``exit_after_tests``) or say the loader is plain now."""
        status = self.exit_status(results)
        missing = self.missing_modes(results)
        if missing:
            self.warning(run_text.missing_modes([m.value for m in missing], status, exit_after_tests))
        self.info(run_text.completed(exit_after_tests))
        if not exit_after_tests:
            return
        sys.stdout.flush()
        self._shutdown()  # every rank got here through the last exchange
        self._exit(status)  # the one place benchy ends the process: exit_after_tests

    def save_steps(self, results: RunResults) -> Optional[str]:
        """Save the trials that ended since the last call, one file each (the first call clears a previous run's);
        the directory's name."""
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
            self.warning(run_text.steps_failed(directory, err))
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
        """The JSON (rank 0): a checkpoint (no per-step lists) or the final document."""
        steps_dir = self.save_steps(snapshot.results)
        if self.rank != 0:
            return
        if self._environment is None:  # read when the benchmark starts (started), else at the first JSON
            self._environment = environment(self.world)
        path = self.config.output_path
        document = result_document(
            snapshot,
            self.schedule.modes,
            reading,
            config=self.config.to_dict(),
            environment=self._environment,
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
                self.out.line(lines.error(run_text.json_failed(path, err)))
            return
        if final:
            self.info(run_text.json_written(path))
