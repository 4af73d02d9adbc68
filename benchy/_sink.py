"""Where a run's results go: trial lines, warnings, the summary, the JSON and the exit status.

The :class:`~benchy._session.Session` walks the schedule and hands each event here; this
module decides nothing about trials. ``exit_after_tests`` ends the process here, in one
place, with a status that CI can trust:

* ``0``: every scheduled mode has at least one counted trial;
* :data:`EXIT_MISSING_MODE` (3): the schedule ended but a scheduled mode has no counted
  trial (every one of its trials was interrupted); the summary says which and why.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import _steps
from ._config import Config
from ._console import Output
from ._distribution import StepProfile, step_profile
from ._report import (
    Verdict,
    diagnosis,
    info_line,
    remove_stale_temporaries,
    summary_lines,
    trial_line,
    verdict,
    verdict_text,
    wait_line,
    warning_line,
    write_json_atomic,
)
from ._results import Interruption, RunResults, TrialResult
from ._schedule import Mode, Schedule
from ._schema import result_document
from ._startup import Startup
from ._sweep import summary_line as sweep_summary_line

__all__ = ["EXIT_MISSING_MODE", "ResultSink"]

EXIT_MISSING_MODE = 3


class ResultSink:
    """Prints and writes what a :class:`Session` measured (rank 0 writes the JSON)."""

    def __init__(
        self,
        config: Config,
        schedule: Schedule,
        results: RunResults,
        output: Output,
        *,
        rank: int,
        world: int,
        environment: Mapping[str, Any],
        extras: Callable[[], Dict[str, Any]],
        shutdown: Callable[[], None],
        finished: Callable[[], bool],
        exit: Callable[[int], Any] = sys.exit,
        workers: int = 0,
        startup: Callable[[], Optional[Startup]] = lambda: None,
    ) -> None:
        self.config, self.schedule, self.results, self.out = config, schedule, results, output
        self.rank, self.world = rank, world
        self.environment = dict(environment)
        self._extras = extras
        self._shutdown = shutdown
        self._finished = finished
        self._exit = exit
        self.workers = workers  # the loader's num_workers (periodic stalls are compared with it)
        self._startup = startup
        self._json_error_shown = False
        self._early_noted = False
        # FULL's step profile for the verdict's stall claim: read from every step, so only for the
        # final summary (a checkpoint costs the new trial); None in checkpoints.
        self._final_profile: Optional[StepProfile] = None
        self._steps_written = 0  # trials already in the steps file
        self._steps_failed = False

    # --- status -------------------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        """True only when the schedule ran to its end and every trial it issued counted."""
        return self._finished() and not self.results.interruptions

    def missing_modes(self) -> List[Mode]:
        """Scheduled modes without a single counted trial."""
        return [m for m in self.schedule.modes if not self.results.measured(m)]

    def exit_status(self) -> int:
        return EXIT_MISSING_MODE if self.missing_modes() else 0

    # --- events -------------------------------------------------------------------------------

    def trial(self, result: TrialResult, closed_early: bool) -> None:
        self.out.trial_ended()
        self.out.line(trial_line(result))
        wait = wait_line(result)
        if wait is not None:
            self.out.line(wait)
        if closed_early and not self._early_noted:
            self._early_noted = True
            self.out.line(info_line(
                f"{result.label}: the loop took all {result.spec.nbatches} batches and did not ask for "
                f"another (a loop sized by len()); such a trial counts over its first {result.spec.nbatches - 1} "
                f"steps (said once)."
            ))

    def lost(self, item: Interruption, hint: bool) -> None:
        self.out.trial_ended()
        text = (f"trial {item.spec.label} stopped after {item.batches_done} of {item.spec.nbatches} batches: "
                f"{item.reason}. It is not counted.")
        if hint:
            text += (f" If your loop takes {item.batches_done} steps per epoch, set nbatches to at most "
                     f"{item.batches_done}.")
        self.out.line(warning_line(text))
        self.checkpoint()

    def clean_stale(self) -> None:
        """Remove temporary files a killed benchy left in the output and per-step directories (rank 0)."""
        if self.rank != 0:
            return
        removed = remove_stale_temporaries(os.path.dirname(os.path.abspath(self.config.output_path)))
        if self.config.steps_dir is not None:
            removed += remove_stale_temporaries(self.config.steps_dir)
        if removed:
            self.out.line(info_line(
                f"removed {len(removed)} stale temporary file(s) left by an interrupted benchy run: "
                + ", ".join(removed)))

    def checkpoint(self) -> None:
        self.write_json(announce=False)

    # --- the end ------------------------------------------------------------------------------

    def _reading(self) -> Tuple[Optional[Verdict], Optional[Startup], List[str]]:
        """The verdict, the loader's start-up and what the verdict adds (see :func:`_report.diagnosis`),
        worked out once per summary or JSON write."""
        found = verdict(self.results, self.schedule.modes, self.schedule.decision_confidence)
        start = self._startup()
        return found, start, diagnosis(self.results, found, self.workers, start, self._final_profile)

    def summary(self, exiting: bool) -> None:
        """The summary lines, the terminal table and the final JSON.

        ``exiting``: benchy ends the process next (``exit_after_tests`` at the schedule's end),
        so the JSON records the status it exits with; otherwise ``exit_status`` stays null.
        """
        modes = self.schedule.modes
        if self.results.interruptions:
            labels = ", ".join(i.spec.label for i in self.results.interruptions)
            self.out.line(warning_line(
                f"{len(self.results.interruptions)} scheduled trial(s) did not count "
                f"({labels}); the reasons are above and in the JSON's 'interrupted'."
            ))
        self._final_profile = step_profile(self.results.measured(Mode.FULL))
        reading = self._reading()
        found, start, clauses = reading
        lines = summary_lines(self.results, modes, self.schedule.decision_confidence, self.workers,
                              startup=start, clauses=clauses, world=self.world)
        swept = sweep_summary_line(self.results.sweep)
        if swept is not None:
            at = next((k for k, line in enumerate(lines) if line.startswith("BENCHY::SUMMARY::VERDICT")), len(lines))
            lines.insert(at, swept + (" [rank 0]" if self.world > 1 else ""))
        for line in lines:
            self.out.line(line)
        self.out.summary_table(self.results, modes, None if found is None else verdict_text(found, clauses))
        self.write_json(announce=True, exit_status=self.exit_status() if exiting else None, summary=lines,
                        reading=reading)

    def end(self, exit_after_tests: bool) -> None:
        """After the summary: end the process (``exit_after_tests``) or say the loader is plain now."""
        status = self.exit_status()
        missing = self.missing_modes()
        if missing:
            names = ", ".join(m.value for m in missing)
            self.out.line(warning_line(
                f"no counted trial for {names}: the comparison is incomplete"
                + (f"; exiting with status {status}." if exit_after_tests else ".")
            ))
        if not exit_after_tests:
            self.out.line(info_line("Tests completed; the loader is now the plain one for the remaining epochs."))
            return
        self.out.line(info_line("Tests completed.... exiting."))
        sys.stdout.flush()
        self._shutdown()  # every rank got here through the last exchange
        self._exit(status)  # the one place benchy ends the process: exit_after_tests

    def save_steps(self) -> Optional[str]:
        """Save the trials that ended since the last call, one file each; the directory's name.

        Each trial's per-step data is written once, so a checkpoint costs the new trials only.
        The first call of a run clears a previous run's trial files from the directory.
        """
        directory = self.config.steps_dir
        if directory is None or self._steps_failed:
            return None
        try:
            if self._steps_written == 0:
                _steps.clear(directory)
            for result in self.results.trials[self._steps_written:]:
                _steps.save(directory, result)
                self._steps_written += 1
        except (OSError, ValueError) as err:
            self._steps_failed = True
            self.out.line(warning_line(
                f"cannot save the per-step times in {directory}: {err}. The final JSON's 'rates' hold the "
                f"counted trials' per-step throughputs; this run saves no further per-step files."))
            return None
        return os.path.basename(directory)

    def write_json(self, *, announce: bool, exit_status: Optional[int] = None,
                   summary: Optional[List[str]] = None,
                   reading: Optional[Tuple[Optional[Verdict], Optional[Startup], List[str]]] = None) -> None:
        """The JSON: a checkpoint (``announce`` false: no per-step lists, O(the new trials)) or the
        final document (``announce`` true: with each mode's per-step ``rates``). ``reading``: the
        summary's :meth:`_reading`, when it has it."""
        if self.rank != 0:
            return
        path = self.config.output_path
        steps_dir = self.save_steps()
        extras = self._extras()
        _, start, clauses = reading if reading is not None else self._reading()
        extras["loader_startup"] = None if start is None else start.to_dict()
        extras["summary"] = summary  # the summary lines as printed (final document only)
        document = result_document(
            self.results,
            self.schedule.modes,
            config=self.config.to_dict(),
            environment=self.environment,
            nranks=self.world,
            complete=self.complete,
            epochs_needed=self.schedule.epochs_needed,
            epochs_started=extras.pop("epochs_started", 0),
            profiler=extras.pop("profiler", None),
            exit_status=exit_status,
            extras=extras,
            confidence=self.schedule.decision_confidence,
            per_step=announce,
            steps_dir=steps_dir,
            clauses=clauses,
            run_name=self.config.general.run_name,
        )
        try:
            write_json_atomic(path, document)
        except (OSError, ValueError) as err:
            if announce or not self._json_error_shown:
                self._json_error_shown = True
                self.out.line(
                    f"BENCHY::ERROR::Message: cannot write the JSON result to {path}: {err}. "
                    f"The BENCHY:: lines printed here are the only copy of the results."
                )
            return
        if announce:
            self.out.line(info_line(f"Writing JSON output to {path}."))
