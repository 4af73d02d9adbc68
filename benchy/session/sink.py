"""Where a run's results go: trial lines, warnings, the summary, the JSON and the exit status.

The :class:`~benchy.session.session.Session` walks the schedule and hands each event here, with
a typed :class:`~benchy.core.results.Snapshot` of its state for summaries and JSON writes; this
module decides nothing about trials, and every line a session prints goes out through it.
``exit_after_tests`` ends the process here, in one
place, with a status that CI can trust:

* ``0``: every scheduled mode has at least one counted trial;
* :data:`EXIT_MISSING_MODE` (3): the schedule ended but a scheduled mode has no counted
  trial (every one of its trials was interrupted); the summary says which and why.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..core.config import Config
from ..core.distribution import StepProfile, step_profile
from ..core.results import Interruption, RunResults, Snapshot, TrialResult
from ..core.schedule import Mode, Schedule
from ..core.verdict import Reading, read
from ..measure.environment import environment
from ..results import lines, steps
from ..results.files import remove_stale_temporaries, write_json_atomic
from ..results.schema import result_document
from ..results.summary import summary_lines, sweep_table
from .console import Output

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
        shutdown: Callable[[], None],
        exit: Callable[[int], Any] = sys.exit,
    ) -> None:
        self.config, self.schedule, self.results, self.out = config, schedule, results, output
        self.rank, self.world = rank, world
        self._environment: Optional[Dict[str, Any]] = None
        self._shutdown = shutdown  # the ranks' channel, closed before the process ends
        self._exit = exit
        self._json_error_shown = False
        self._early_noted = False
        self._steps_written = 0  # trials already in the steps file
        self._steps_failed = False
        self._peek_said = False
        self._rerun_said = False

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

    def started(self, schedule: Schedule, config: Config, loader: str, nvtx: bool) -> None:
        """What the benchmark does, said when it starts: ranks, the config, the schedule and the epochs
        it needs, the loader, NVTX, and a warning when every step is synchronized. The environment
        (with the start time that names the run by default) is read now."""
        self._environment = environment(self.world)
        if self.world > 1:
            self.info(f"{self.world} ranks: each measures its own trials; throughputs are of all ranks together "
                      f"(samples of all ranks / the slowest rank's trial time).")
        if config.source == "defaults":
            self.info("Using default benchy configuration.")
        else:
            self.info(f"Using benchy configuration from {config.source}.")
        if schedule.epochs_fewest == schedule.epochs_needed:
            epochs = f"the script must run at least {schedule.epochs_needed} epochs"
        else:
            epochs = (f"the script must run up to {schedule.epochs_needed} epochs (the schedule stops as soon as the "
                      f"answer is known, after {schedule.epochs_fewest} at the fewest; later epochs are plain)")
        self.info(f"Schedule: {schedule.describe()}; {epochs}.")
        if schedule.epoch_plans:
            self.info(f"Benchmarking the {loader}; while the schedule runs, len() of it is the trial's nbatches.")
        if nvtx:
            self.info("NVTX: a tool is attached; ranges per trial, step and fetch in domain 'benchy'.")
        if config.general.sync_every_step:
            self.warning("sync_every_step is on: the device is synchronized at every step, which serializes CPU and "
                         "device work; throughputs are lower than in normal training.")

    def stopped_early(self, epochs_started: int, where: str, rebuilt: int, failed: Optional[Interruption] = None,
                      raised: Optional[str] = None) -> None:
        """The script ended before the schedule did: how many epochs it ran and needs. ``rebuilt``:
        wrappers built where the benchmarked one was and iterated as plain loaders (one per epoch).
        ``failed``: the trial whose loader raised, when that is what ended it; ``raised``: the
        uncaught exception that ended the script (then more epochs are not the fix)."""
        if failed is not None:
            self.warning(f"the benchmark ended when trial {failed.spec.label} raised ({failed.reason}); the results "
                         f"below are partial. Fix the error, then run again.")
            return
        if raised is not None:
            self.warning(f"the script ended with an uncaught exception ({raised}) after {epochs_started} of the "
                         f"{self.schedule.epochs_needed} epochs the benchy schedule needs; the results below are "
                         f"partial. Fix the error, then run again.")
            return
        needed, upto = self._epochs_needed()
        hint = ""
        if rebuilt:
            hint = (f" {rebuilt} more wrapped loader(s) were built at {where} and iterated as plain loaders: a "
                    f"script that builds a new loader every epoch never finishes the schedule; build it once, before "
                    f"the epoch loop.")
        self.warning(f"the script stopped after {epochs_started} of the {upto}{needed} epochs the benchy schedule "
                     f"needs ({self.schedule.describe()}); the results below are partial. Run "
                     f"{upto or 'at least '}{needed} epochs to finish the schedule." + hint)

    def _epochs_needed(self) -> Tuple[int, str]:
        """The epochs the schedule needs, with one more for each trial that ran again after its
        iterator was dropped part-way; and "up to " when an adaptive schedule may need fewer."""
        upto = "" if self.schedule.epochs_fewest == self.schedule.epochs_needed else "up to "
        return self.schedule.epochs_needed + len(self.results.reruns), upto

    def sweep(self, own: Any) -> None:
        """The loader sweep's table, one ``BENCHY::SWEEP::`` line per row."""
        for row in sweep_table(self.results.sweep, own).plain().splitlines():
            self.out.line(lines.sweep_row(row))

    # --- status -------------------------------------------------------------------------------

    def missing_modes(self) -> List[Mode]:
        """Scheduled modes without a single counted trial."""
        return [m for m in self.schedule.modes if not self.results.measured(m)]

    def exit_status(self) -> int:
        return EXIT_MISSING_MODE if self.missing_modes() else 0

    # --- events -------------------------------------------------------------------------------

    def trial(self, result: TrialResult, closed_early: bool) -> None:
        self.out.trial_ended()
        self.out.line(lines.trial(result.label, result.throughput))
        share = result.data_wait
        if share is not None and result.work_median is not None and result.wait_median is not None:
            self.out.line(lines.trial_wait(result.label, share, result.work_median, result.wait_median))
        system = result.system or {}
        if system.get("disturbed"):
            self.warning(f"trial {result.label} ran on a busy machine: other processes kept "
                         f"{system['other_cores_busy']:.2f} of its {system['cpu_cores']:g} cores busy (more than "
                         f"busy_machine_share = {self.config.general.busy_machine_share:g}); its throughput is likely "
                         f"low.")
        if closed_early and not self._early_noted:
            self._early_noted = True
            self.info(
                f"{result.label}: the loop took all {result.spec.nbatches} batches and did not ask for "
                f"another (a loop sized by len()); such a trial counts over its first {result.spec.nbatches - 1} "
                f"steps (said once).")

    def lost(self, item: Interruption, hint: bool, twice: bool = False) -> None:
        """A trial that did not count, named with its reason (the caller writes the checkpoint).
        ``twice``: it had run again after its iterator was dropped, and was dropped again."""
        self.out.trial_ended()
        again = " again" if twice else ""
        text = (f"trial {item.spec.label} stopped after {item.batches_done} of {item.spec.nbatches} "
                f"batches{again}: {item.reason}. It is not counted.")
        if twice:
            text += (" Dropped twice: the loop stops early in every epoch, so from here on a trial whose iterator "
                     "is dropped is not run again.")
        if hint:
            steps = "step" if item.batches_done == 1 else "steps"
            text += (f" If your loop takes {item.batches_done} {steps} per epoch, set nbatches to at most "
                     f"{item.batches_done}.")
        self.warning(text)

    def again(self, item: Interruption, peek: bool, first: bool) -> None:
        """A trial whose iterator the loop dropped runs again: a peek (at most one batch, not an
        epoch) said once as information; a trial dropped part-way as a warning, with the epochs
        the schedule needs now."""
        label, k, n = item.spec.label, item.batches_done, item.spec.nbatches
        if peek:
            what = ("took 1 batch and dropped its iterator (a peek such as next(iter(loader)), e.g. for a batch's "
                    "shape)" if k else "was dropped unused (an iter(loader) whose result was discarded or replaced)")
            if first:
                self.info(f"an iter() before the benchmark's first epoch {what}: not an epoch; trial {label} starts at the next "
                          f"iter(), so it cost no trial.")
            elif not self._peek_said:
                self._peek_said = True
                self.info(f"an iter() {what}: not an epoch; trial {label} starts again at the next iter(), so such an "
                          f"iter() costs at most one batch's loading and no trial (said once).")
            return
        self.out.trial_ended()
        needed, upto = self._epochs_needed()
        if self._rerun_said:
            self.warning(f"trial {label} stopped after {k} of {n} batches: its iterator was dropped; it runs again at "
                         f"the next epoch (the schedule needs {upto}{needed} epochs now).")
            return
        self._rerun_said = True
        self.warning(f"trial {label} stopped after {k} of {n} batches: the loop dropped its iterator part-way (a "
                     f"break, an exception the script caught, or an iterator it replaced). It is not counted and runs "
                     f"again at the next epoch, so the schedule needs {upto}{needed} epochs now (len() is its "
                     f"nbatches). A trial dropped twice is not run a third time.")

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
            self.info(f"removed {len(removed)} stale temporary file(s) left by an interrupted benchy run: "
                      + ", ".join(removed))

    def checkpoint(self, snapshot: Snapshot) -> None:
        """The JSON after a trial: no per-step lists and no stall claim, so it costs the new trial only."""
        self.write_json(snapshot, self._reading(snapshot, None), final=False)

    # --- the end ------------------------------------------------------------------------------

    def _reading(self, snapshot: Snapshot, full_profile: Optional[StepProfile]) -> Reading:
        g = self.config.general
        return read(self.results, self.schedule.modes, self.schedule.decision_confidence, snapshot.workers,
                    snapshot.startup, full_profile, world=self.world, peak_flops=g.peak_flops,
                    tokens_source=snapshot.tokens)

    def summary(self, snapshot: Snapshot, exiting: bool) -> None:
        """The summary lines, the terminal table and the final JSON, from one :class:`Reading`.

        ``exiting``: benchy ends the process next (``exit_after_tests`` at the schedule's end),
        so the JSON records the status it exits with; otherwise ``exit_status`` stays null.
        """
        modes = self.schedule.modes
        if self.results.interruptions:
            labels = ", ".join(i.spec.label for i in self.results.interruptions)
            self.warning(f"{len(self.results.interruptions)} scheduled trial(s) did not count "
                         f"({labels}); the reasons are above and in the JSON's 'interrupted'.")
        # FULL's step profile for the verdict's stall claim: it reads every step, so only here.
        reading = self._reading(snapshot, step_profile(self.results.measured(Mode.FULL)))
        printed = summary_lines(self.results, modes, reading, snapshot.workers, self.world)
        for line in printed:
            self.out.line(line)
        self.out.summary_table(self.results, modes, reading.text)
        self.write_json(snapshot, reading, final=True, exit_status=self.exit_status() if exiting else None,
                        summary=printed)

    def end(self, exit_after_tests: bool) -> None:
        """After the summary: end the process (``exit_after_tests``) or say the loader is plain now."""
        status = self.exit_status()
        missing = self.missing_modes()
        if missing:
            names = ", ".join(m.value for m in missing)
            self.warning(f"no counted trial for {names}: the comparison is incomplete"
                         + (f"; exiting with status {status}." if exit_after_tests else "."))
        if not exit_after_tests:
            self.info("Tests completed; the loader is now the plain one for the remaining epochs.")
            return
        self.info("Tests completed.... exiting.")
        sys.stdout.flush()
        self._shutdown()  # every rank got here through the last exchange
        self._exit(status)  # the one place benchy ends the process: exit_after_tests

    def save_steps(self) -> Optional[str]:
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
            for result in self.results.trials[self._steps_written:]:
                steps.save(directory, result)
                self._steps_written += 1
        except (OSError, ValueError) as err:
            self._steps_failed = True
            self.warning(f"cannot save the per-step times in {directory}: {err}. The final JSON's 'rates' hold the "
                         f"counted trials' per-step throughputs; this run saves no further per-step files.")
            return None
        return os.path.basename(directory)

    def write_json(self, snapshot: Snapshot, reading: Reading, *, final: bool, exit_status: Optional[int] = None,
                   summary: Optional[List[str]] = None) -> None:
        """The JSON (rank 0): a checkpoint (``final`` false: no per-step lists, O(the new trials)) or
        the final document (with each mode's per-step ``rates``, announced)."""
        steps_dir = self.save_steps()
        if self.rank != 0:
            return
        path = self.config.output_path
        document = result_document(
            self.results, self.schedule.modes, snapshot, reading,
            config=self.config.to_dict(),
            environment=self.environment,
            nranks=self.world,
            epochs_needed=self._epochs_needed()[0],
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
                self.out.line(lines.error(f"cannot write the JSON result to {path}: {err}. "
                                          f"The BENCHY:: lines printed here are the only copy of the results."))
            return
        if final:
            self.info(f"Writing JSON output to {path}.")
