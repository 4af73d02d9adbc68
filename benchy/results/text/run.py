"""What a run says as it goes, in words: its events, the start-up lines, an early end, why a trial did not count or
a side did not run, the schedule and why it stopped (no torch). The sink (:class:`~benchy.session.sink.ResultSink`)
prints these; the JSON writes the same reasons (:mod:`benchy.results.schema`)."""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Sequence

from ...core import events as ev
from ...core import machine as m
from ...core.config import Config
from ...core.exits import EXIT_INCOMPLETE
from ...core.machine import Stop
from ...core.progress import Progress
from ...core.results import Snapshot, TrialResult
from ...core.schedule import Mode, ModePlan, Schedule
from .reports import setting
from .why import ranks, reason

__all__ = [
    "NOISY_RISE",
    "NOT_RUN",
    "Said",
    "busy_trial",
    "counting",
    "describe",
    "event",
    "incomplete",
    "json_failed",
    "lost_trials",
    "missing_modes",
    "never_iterated",
    "ranks",
    "reason",
    "stale_removed",
    "started",
    "steps_failed",
    "stop_words",
    "stopped_early",
]

# A warm-up's rise in step time up to this share is said as information, beyond it as a warning.
NOISY_RISE = 0.25


class Said(NamedTuple):
    """A line to print: a warning or information, and its text."""

    warning: bool
    text: str


NOT_RUN = {
    "ended": "the script ended before it ran",
    "horizon": "the loop's known length left no room for its steps",
}


def stop_words(
    stop: Stop,
    confidence: float,
    precision: float,
    horizon: Optional[int],
    capped: Sequence[str] = (),
    most: Optional[int] = None,
) -> str:
    """Why measuring ended, in words (``capped``: the modes at ``auto_max_trials``, ``most``)."""
    if stop is Stop.DECIDED:
        return f"the verdict is decided ({100 * confidence:g} % confidence)"
    if stop is Stop.PRECISE:
        return f"every interval is within {100 * precision:g} % of its mean"
    if stop is Stop.BUDGET:
        bound = f" ({most})" if most is not None else ""
        modes = f" for {', '.join(capped)}" if capped else ""
        return f"auto_max_trials{bound} reached{modes} before the answer was known"
    if stop is Stop.ALL_RAN:
        return "every scheduled trial ran"
    if stop is Stop.HORIZON:
        return f"the loop's {horizon} steps left no room for another window"
    return "no mode needs more trials"


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
    hidden = " on passes of its own" if p.mode is Mode.IO else ""
    rounds = f" (whole rounds of the loader's {p.cycle} workers)" if p.cycle > 1 else ""
    if p.ntrials is not None:
        return f"{p.mode.value} {warm}{profiled} + {p.ntrials} x {p.length(0)} batches{rounds}{hidden}"
    first, longest = p.length(0), p.length(64)
    size = f"{first} growing to {longest}" if first < longest else f"{longest}"
    return f"{p.mode.value} {warm}{profiled} + {p.fewest_trials} to {p.max_trials} trials of {size} batches{rounds}{hidden}"


def describe(schedule: Schedule) -> str:
    """The plan in one line, e.g. ``IO warm-ups until steady (1 to 4) + 2 to 8 trials of 8 growing to 50 batches on
    passes of its own; ...; then the extras: FLOPS, STAGES, ...``."""
    text = "; ".join(_plan(p) for p in schedule.plans)
    if schedule.extras:
        text += f"; then the extras, most useful first: {', '.join(e.value for e in schedule.extras)}"
    return text


# --- what happens ------------------------------------------------------------------------------------


def event(event: ev.Event, schedule: Schedule) -> Optional[Said]:
    """An event's words, as an information or a warning line."""
    if isinstance(event, ev.LoaderPlain):
        if event.same_site:
            return Said(
                True,
                f"a new {event.kind} was built at {event.where}, where the one running the benchmark "
                f"was built: a loader re-created every epoch never finishes the schedule (each epoch "
                f"gets a new wrapper, which is the plain loader). Build it once, before the epoch loop.",
            )
        else:
            return Said(
                False,
                f"{event.kind} created at {event.where} is the plain loader: a process runs one benchmark "
                f"at a time, and the {event.running or 'another loader'} is running it (the first loader "
                f"iterated).",
            )
    elif isinstance(event, ev.SideServed):
        during = f"during trial {event.label}" if event.label else "while the loop's epoch ran"
        return Said(
            False,
            f"an iter() {during} was served by the plain loader (a peek such as next(iter(loader)) inside "
            f"the loop); the loop's epoch and its trial go on, and the peek's time counts in the step it "
            f"ran in (said once).",
        )
    elif isinstance(event, ev.LookaheadFound):
        return Said(
            False,
            "the loop asks for batch k + 1 before it runs step k (it fetches one batch ahead, as CUDA "
            "prefetchers such as timm's PrefetchLoader and Accelerate's prepared loaders do): at each "
            "epoch's start its first period holds no step (the windows leave that period out).",
        )
    elif isinstance(event, ev.TrialLost):
        item = event.item
        return Said(
            True,
            f"trial {item.spec.label} did not count ({item.batches_done} of {item.spec.nbatches} steps "
            f"measured): {reason(item.reason)}.",
        )
    elif isinstance(event, ev.Signalled):
        who = ranks(event.failed)
        who = f" {who[0].upper()}{who[1:]}; the launcher stopped the others." if who else ""
        if event.running is not None:
            return Said(
                True,
                f"{event.name} received during trial {event.running.label} ({event.measured} of "
                f"{event.running.nbatches} steps measured): it is not counted.{who} The results measured "
                f"so far follow.",
            )
        else:
            return Said(True, f"{event.name} received between trials.{who} The results measured so far follow.")
    elif isinstance(event, ev.RankFailed):
        return Said(True, f"{ranks(event.failed)}: that is why the ranks could not exchange the trial's results.")
    elif isinstance(event, ev.NoExitHere):
        return Said(
            False,
            f"exit_after_tests: benchy does not end this process, a {event.host} ({event.host.split()[0]} "
            f"would report the training as failed); the training goes on with the plain loader.",
        )
    elif isinstance(event, m.WarmupEnded):
        what = "n/a" if event.change is None else f"{100.0 * event.change:+.1f} %"
        mode = event.mode.value
        if event.steady:
            return Said(
                False,
                f"{mode} warm-up: steady after {event.done} warm-up trial(s) (median step time of the last "
                f"steps {what} against the steps before, within {100 * event.tolerance:g} %; warm-up goes on "
                f"while it falls by more).",
            )
        elif event.change is not None and event.tolerance < event.change <= NOISY_RISE:
            return Said(
                False,
                f"{mode} warm-up: over after {event.done} warm-up trial(s): the median step time of the last "
                f"steps moved {what} against the steps before (noise in a short window, or a step that gets "
                f"slower: more warm-up would not cure it); measuring begins, and the trials' intervals carry "
                f"the variation.",
            )
        elif event.change is not None and event.change > event.tolerance:
            return Said(
                True,
                f"{mode} warm-up: not steady after {event.done} warm-up trial(s): the median step time of "
                f"the last steps rose {what} against the steps before (warm-up makes steps faster, not "
                f"slower: another process, throttling or a growing cost in the step); more warm-up would "
                f"not cure it, so measuring begins, and the trials' intervals carry the variation.",
            )
        else:
            return Said(
                False,
                f"{mode} warm-up: not steady after {event.done} warm-up trials (auto_max_warmup; the median "
                f"step time still changed {what}); measuring anyway: its first trials may be slower than "
                f"later ones. Raise global.auto_max_warmup or nbatches.",
            )
    elif isinstance(event, m.Stopped):
        counts = ", ".join(f"{mode.value} {w} warm-up + {t}" for mode, w, t in event.counts)
        s = schedule
        capped = [mode.value for mode in event.capped]
        most = s.plans[0].max_trials if s.plans else None
        why = stop_words(event.stop, s.decision_confidence, s.precision, s.horizon, capped, most)
        return Said(False, f"Schedule: done after {counts}: {why}.")
    elif isinstance(event, ev.SideFailed):
        return Said(True, f"{reason(event.reason)}; only it is lost.")
    elif isinstance(event, ev.CounterNote):
        return Said(True, event.text)
    elif isinstance(event, ev.TokensNotCounted):
        return Said(True, f"{event.error}; tokens are not counted, samples are")
    elif isinstance(event, ev.SweepUnavailable):
        return Said(True, "sweep: only a BenchmarkDataLoader knows the settings to vary; this loader is not swept.")
    elif isinstance(event, ev.SweepStarted):
        return Said(
            False,
            f"Loader sweep: {event.settings} setting(s), each {event.warmups} warm-up + {event.trials} IO "
            f"trials of {event.nbatches} batches, before the schedule (the loader's own: {setting(event.own)}).",
        )
    elif isinstance(event, ev.SweepFailed):
        return Said(True, f"sweep: setting {setting(event.setting)} failed ({event.error}); skipped.")
    elif isinstance(event, ev.SweepStray):
        return Said(
            True, f"sweep: {event.processes} process(es) of setting {setting(event.setting)} outlived it and were stopped."
        )
    elif isinstance(event, ev.SweepOverCap):
        return Said(
            True,
            f"sweep: the workers of {', '.join(setting(s) for s in event.settings)} took more memory than the cap of "
            f"{event.cap_bytes / 1e9:.2f} GB (the memory available at the sweep's start less room for the "
            f"training process); not recommended.",
        )
    elif isinstance(event, ev.SweepApplied):
        if event.applied:
            return Said(
                False,
                f"sweep_apply: the schedule continues with {setting(event.setting)} (the smallest setting within 5 % of "
                f"the best).",
            )
        else:
            return Said(
                False,
                f"The schedule continues with the loader's own settings ({setting(event.setting)})"
                + ("." if event.apply_on else "; sweep_apply: true would use the recommended ones."),
            )
    elif isinstance(event, ev.H2DSkipped):
        if event.stopped:
            return Said(True, f"IO_H2D: stopped: {reason(event.reason)}.")
        else:
            return Said(False, f"IO_H2D: skipped: {reason(event.reason)}.")
    elif isinstance(event, ev.StagesStarted) and event.other:
        why = (
            "what a worker's batch and its receive cost, which a loader without workers does not show"
            if event.workers
            else "the loading on the training thread alone, which workers beside each other do not show"
        )
        return Said(
            False,
            f"Stage trials at another setting (for the what-if model): {event.warmups} warm-up + {event.trials} IO "
            f"trial of {event.nbatches} batches on an instrumented copy with {event.workers} "
            f"worker{'' if event.workers == 1 else 's'} ({why}); not counted in IO.",
        )
    elif isinstance(event, ev.StagesStarted):
        return Said(
            False,
            f"Stage trials: {event.warmups} warm-up + {event.trials} IO trials of {event.nbatches} batches "
            f"on an instrumented copy of the loader ({event.workers} workers; transforms: {event.split}); "
            f"not counted in IO.",
        )
    elif isinstance(event, ev.EmulatedStarted):
        return Said(
            False,
            f"Emulated-step trials (what-if check): {event.warmups} warm-up + {event.trials} trials of "
            f"{event.nbatches} batches from the real loader, the step replaced by {1e3 * event.seconds:.3f} ms "
            f"a batch ({1e3 * event.cpu:.3f} ms of it CPU work): a step {event.speedup:.3g}x faster; not counted.",
        )
    elif isinstance(event, ev.EmulatedSkipped):
        return Said(True, f"emulated-step trials: stopped: {reason(event.reason)}.")
    elif isinstance(event, ev.StagesStopped) and event.other:
        return Said(
            True,
            f"stage trials at another setting: stopped: {reason(event.reason)}; the what-if model takes this "
            f"run's own loader costs for the changes across no workers.",
        )
    elif isinstance(event, ev.StagesStopped):
        return Said(True, f"stage trials: stopped: {reason(event.reason)}.")
    elif isinstance(event, ev.CaptureRange):
        return Said(
            False, "Profiler (the cudaProfilerStart/Stop capture range for Nsight Systems): " + "; ".join(event.events) + "."
        )
    elif isinstance(event, ev.TraceWritten):
        others = f" Every rank writes its own (rank<r>.<trial>.pt.trace.json in {event.others})." if event.others else ""
        return Said(
            False,
            f"torch.profiler (rank {event.rank}): {event.event}; an extra warm-up, not counted. Open it in "
            f"https://ui.perfetto.dev, chrome://tracing or TensorBoard's profiler plugin.{others}",
        )
    return None


def started(schedule: Schedule, config: Config, snapshot: Snapshot, world: int, nvtx: bool, queue_depth: int) -> List[Said]:
    """What the benchmark does, said when it starts: ranks, the config, the schedule and the steps it takes,
    the loader, NVTX, and a warning when every step is synchronized."""
    out: List[Said] = []
    if world > 1:
        out.append(
            Said(
                False,
                f"{world} ranks: each measures its own trials; throughputs are of all ranks together "
                f"(samples of all ranks / the slowest rank's trial time).",
            )
        )
    if config.source == "defaults":
        out.append(Said(False, "Using default benchy configuration."))
    else:
        out.append(Said(False, f"Using benchy configuration from {config.source}."))
    text = f"Schedule: {describe(schedule)}."
    if schedule.window_plans:
        epoch_length, epochs, most = snapshot.epoch_length, snapshot.epochs_needed, snapshot.steps_needed
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
        stops = (
            f"; it stops once the verdict is decided (sides 2x apart: typically within "
            f"{m.steps_of(schedule, queue_depth, None, decided_after=3, verdict_only=True)} steps) and each figure's "
            f"interval is within +/-{100 * schedule.figure_precision:g} % of it"
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
    out.append(Said(False, text))
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
            f"({reason(progress.failed.reason)}); the results below are partial. Fix the error, then run again."
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
    """At exit, when no wrapper was benchmarked and some were never iterated (``names``: each ``kind created at
    where``)."""
    return (
        f"benchy measured nothing: {'; '.join(names)} was never iterated, so no trial ran. A framework "
        f"probably replaced it with a loader of its own (Accelerate's prepare() does): wrap the loader "
        f"that the training loop iterates instead, e.g. "
        f"loader = BenchmarkGenericIteratorWrapper(accelerator.prepare(loader)) (the batch size is read "
        f"from the prepared loader). See the manual's 'Frameworks' page (docs/guide/frameworks.md)."
    )
