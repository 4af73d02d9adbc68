"""What a run says as it goes, in words, for the sink to print: the start-up lines, the schedule, an early end and
the lines around the summary (no torch; the events say themselves)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ...core import machine as m
from ...core.config import Config
from ...core.exits import EXIT_INCOMPLETE
from ...core.progress import Progress
from ...core.results import Snapshot, TrialResult
from ...core.schedule import Mode, ModePlan, Schedule
from ...core.words import Said

NOT_RUN = {
    "ended": "the script ended before it ran",
    "horizon": "the loop's known length left no room for its steps",
}


def counting(snapshot: Snapshot) -> str:
    """How samples are counted: the counter's rule, and a batch sampler's fixed count."""
    text = snapshot.counting
    if snapshot.per_batch is not None:
        text += (
            f"; the batch sampler makes {snapshot.per_batch} per batch, so only the last batch "
            f"of each pass is counted in the trials"
        )
    return text


# --- the schedule ----------------------------------------------------------------------------------


def _plan(p: ModePlan) -> str:
    warm = f"{p.nwarmup} warm-up" if p.nwarmup is not None else f"warm-ups until steady (1 to {p.max_warmup})"
    profiled = " + 1 profiled warm-up" if p.profiled else ""
    rounds = f" (whole rounds of the loader's {p.cycle} workers)" if p.cycle > 1 else ""
    if p.ntrials is not None:
        return f"{warm}{profiled} + {p.ntrials} x {p.length(0)} batches{rounds}"
    first, longest = p.length(0), p.length(64)
    size = f"{first} growing to {longest}" if first < longest else f"{longest}"
    return f"{warm}{profiled} + {p.fewest_trials} to {p.max_trials} trials of {size} batches{rounds}"


def _extras(schedule: Schedule) -> str:
    return f"then the extras, most useful first: {', '.join(e.value for e in schedule.extras)}"


def describe(schedule: Schedule, extras: bool = True) -> str:
    """The plan in one line: the modes that share a plan said together (``extras``: then the extras)."""
    plans: Dict[str, List[str]] = {}
    for p in schedule.plans:
        plans.setdefault(_plan(p), []).append(p.mode.value)
    text = "; ".join(
        (f"{', '.join(modes[:-1])} and {modes[-1]} each " if len(modes) > 1 else f"{modes[0]} ") + plan
        for plan, modes in plans.items()
    )
    if any(p.mode is Mode.IO for p in schedule.plans):
        text += " (IO on passes of its own)"
    if extras and schedule.extras:
        text += f"; {_extras(schedule)}"
    return text


def started(schedule: Schedule, config: Config, snapshot: Snapshot, world: int, nvtx: bool, queue_depth: int) -> List[Said]:
    """What the benchmark does, said when it starts."""
    out: List[Said] = []
    if world > 1:
        out.append(
            Said(
                False,
                f"{world} ranks: each measures its own trials; throughputs are of all ranks together "
                f"(samples of all ranks / the slowest rank's trial time).",
            )
        )
    source = "default benchy configuration" if config.source == "defaults" else f"benchy configuration from {config.source}"
    out.append(Said(False, f"Using {source}."))
    out.append(Said(False, f"Schedule: {describe(schedule, extras=False)}."))
    if schedule.extras:
        out.append(Said(False, f"Schedule: {_extras(schedule)}."))
    if schedule.window_plans:
        epoch_length, epochs, most = snapshot.epoch_length, snapshot.epochs_needed, snapshot.steps_needed
        out.append(
            Said(
                False,
                "Schedule: SYNTHETIC and FULL trials are windows of steps in the training loop, alternating from its "
                "first step; the loop's epochs, len() and random streams stay its own.",
            )
        )
        min_steps = m.min_epoch_steps(schedule.cycle)
        span = (
            f": {epochs} epoch(s) of {epoch_length} batches in all are enough, counting the one running now "
            f"(the most it may take)"
            if epochs is not None
            else f"; but epochs of {epoch_length} batches are too short to hold a window (each must run at least "
            f"{min_steps} steps), so no number of them finishes it"
            if epoch_length is not None and epoch_length < min_steps
            else ""
        )
        if schedule.stops_early:
            typically = m.steps_of(schedule, queue_depth, None, decided_after=3, verdict_only=True)
            out.append(
                Said(
                    False,
                    f"Schedule: it stops once the verdict is decided (sides 2x apart: typically within {typically} steps) "
                    f"and each figure's interval is within +/-{100 * schedule.figure_precision:g} % of it.",
                )
            )
        fit = f", fitted into the loop's {schedule.horizon} steps" if schedule.horizon is not None else ""
        out.append(Said(False, f"Schedule: at most about {most} steps{fit}{span}."))
    out.append(
        Said(
            False,
            "At the schedule's end: the summary, then benchy ends the process (exit_after_tests: true)."
            if config.general.exit_after_tests
            else "At the schedule's end: the summary, then the loop goes on with the plain loader and the "
            "process ends as the script ends it (exit_after_tests: false).",
        )
    )
    if schedule.window_plans:
        out.append(Said(False, f"Benchmarking the {snapshot.loader}."))
    if nvtx:
        out.append(Said(False, "NVTX: a tool is attached; ranges per trial, step and fetch in domain 'benchy'."))
    if config.general.sync_every_step:
        out.append(
            Said(
                True,
                "sync_every_step is on: the device is synchronized at every step, which serializes CPU and "
                "device work; throughputs are lower than in normal training.",
            )
        )
    return out


def stopped_early(progress: Progress, schedule: Schedule) -> str:
    """The script ended before the schedule did: how far it got, and what the schedule needs (a warning)."""
    if progress.failed is not None:
        return (
            f"the benchmark ended when trial {progress.failed.spec.label} raised "
            f"({progress.failed.reason.words()}); the results below are partial. Fix the error, then run again."
        )
    ran = f"{progress.epochs} epoch(s), {progress.steps} step(s) since the benchmark started"
    if progress.raised is not None:
        return (
            f"the script ended with an uncaught exception ({progress.raised}) after {ran}; the results "
            f"below are partial. Fix the error, then run again."
        )
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
            f", and before it a FULL window's lead-in, a round of the loader's {progress.cycle} workers and one batch "
            f"more, goes by untimed"
            if progress.cycle > 1
            else ", and so is its first"
        )
        return (
            f"{stopped} (its windows take {need} in epochs long enough to hold them: {describe(schedule)}); the "
            f"results below are partial. The epochs are "
            f"too short to hold a window: {each}, and a window measures nothing in an epoch of fewer than "
            f"{progress.min_steps} steps (the period an epoch's end cuts is left out{ready}), so no number of such "
            f"epochs finishes the schedule. Let each epoch run at least {progress.min_steps} steps." + _rebuilt(progress)
        )
    unit = "steps" if progress.left_early else "batches"
    most = f"about {max(1, progress.steps_needed - progress.steps)} more steps"
    if progress.epochs_needed is not None:
        need += f", {progress.epochs_needed} epoch(s) of {progress.epoch_length} {unit}"
        most = (
            f"{progress.epochs_needed} epochs in all ({max(1, progress.epochs_needed - progress.epochs)} more "
            f"than this run; the most it may take)"
        )
    if schedule.stops_early:
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
        return (
            f"the script stopped after {ran}{during}, before the verdict was decided ({need} in all at the most: "
            f"{describe(schedule)}); the results below are partial. {likely}" + _rebuilt(progress)
        )
    fits = (
        f", or make every window shorter so that the schedule fits in the {progress.steps} steps this run took "
        f"(nbatches: {progress.fits} in the synthetic and full sections of a config file)"
        if progress.fits is not None
        else ""
    )
    return (
        f"{stopped} ({need} in all: {describe(schedule)}); the results below are partial. Run it for "
        f"{most} to finish the schedule{fits}." + _rebuilt(progress)
    )


def _rebuilt(progress: Progress) -> str:
    if not progress.rebuilt:
        return ""
    return (
        f" {progress.rebuilt} more wrapped loader(s) were built at {progress.where} and iterated as plain "
        f"loaders: a script that builds a new loader every epoch never finishes the schedule; build it "
        f"once, before the epoch loop."
    )


def incomplete(path: str) -> str:
    """The script ended before the schedule: what status CI gets, said last (a warning)."""
    return (
        f"incomplete run: the script's exit status and exit handlers stay its own; benchy run (where the "
        f"script ends with 0) and benchy check {path} report status {EXIT_INCOMPLETE} "
        f"(the JSON's exit_status), so CI can tell a partial run from a complete one (benchy --help lists "
        f"the statuses)."
    )


def busy_trial(result: TrialResult, share: float) -> Optional[str]:
    """A trial that ran on a busy machine (a warning; None: it did not)."""
    system = result.system
    if system is None or not system.disturbed:
        return None
    return (
        f"trial {result.label} ran on a busy machine: other processes kept "
        f"{system.other_cores_busy or 0.0:.2f} of its {system.cpu_cores or 0:g} cores busy (more than "
        f"busy_machine_share = {share:g}); its throughput is likely low."
    )


def lost_trials(labels: Sequence[str]) -> str:
    """Before the summary: the scheduled trials that did not count (a warning)."""
    return (
        f"{len(labels)} scheduled trial(s) did not count ({', '.join(labels)}); the reasons are above and in the "
        f"JSON's 'interrupted'."
    )


def missing_modes(names: Sequence[str], status: int, exits: bool) -> str:
    """Scheduled modes without a counted trial (a warning)."""
    return f"no counted trial for {', '.join(names)}: the comparison is incomplete" + (
        f"; exiting with status {status}." if exits else "."
    )


def completed(exits: bool) -> str:
    """After the summary: the process ends, or the loader is the plain one from here on."""
    return (
        "Tests completed.... exiting." if exits else "Tests completed; the loader is now the plain one for the remaining epochs."
    )


def steps_failed(directory: str, err: BaseException) -> str:
    return (
        f"cannot save the per-step times in {directory}: {err}. The final JSON's 'rates' hold the "
        f"counted trials' per-step throughputs; this run saves no further per-step files."
    )


def json_failed(path: str, err: BaseException) -> str:
    return f"cannot write the JSON result to {path}: {err}. The BENCHY:: lines printed here are the only copy of the results."


def json_written(path: str) -> str:
    return f"Writing JSON output to {path}."


def stale_removed(removed: Sequence[str]) -> str:
    return f"removed {len(removed)} stale temporary file(s) left by an interrupted benchy run: " + ", ".join(removed)


def never_iterated(names: Sequence[str]) -> str:
    """At exit, when no wrapper was benchmarked and some were never iterated."""
    return (
        f"benchy measured nothing: {'; '.join(names)} was never iterated, so no trial ran. A framework "
        f"probably replaced it with a loader of its own (Accelerate's prepare() does): wrap the loader "
        f"that the training loop iterates instead, e.g. "
        f"loader = BenchmarkGenericIteratorWrapper(accelerator.prepare(loader)) (the batch size is read "
        f"from the prepared loader). See the manual's 'Frameworks' page (docs/guide/frameworks.md)."
    )
