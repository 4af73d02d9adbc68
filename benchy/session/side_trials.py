"""Trials outside the schedule: the loader sweep before it; IO_H2D and the stage trials after the first IO trials.

Each runs IO trials through the session's :class:`~benchy.session.trials.TrialRunner`, on passes of
benchy's own (the session keeps the user's random streams through them), and leaves its findings in
the :class:`~benchy.core.results.RunResults`; what they have to say goes to the sink as events, and
their trial lines through it. All follow one rule for counts: IO's own ``ntrials`` and ``nwarmup``,
and for ``auto`` 3 trials and 1 warm-up (:func:`side_counts`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Protocol, Set, Tuple

from ..core.config import Config
from ..core.results import RunResults, Span, TrialResult, folded
from ..core.schedule import Mode, TrialSpec
from ..core.stages import StageTrial, WorkerMemory, analyse
from ..core.sweep import Setting, SettingResult, apply_cap, expand, memory_cap, smallest_within
from ..core.verdict import system_means
from ..core.whatif import SPEEDUPS, faster, from_results
from ..measure.counting import make_counter
from ..measure.device import accelerator_in_use, copier
from ..measure.emulate import EmulatedStep
from ..measure.source import BatchSource, CopyingSource
from ..measure.stages import Instrumented, has_in_order, stage_trial, timer_cost
from ..measure.system import machine_memory, trainer_memory, worker_memory
from .events import (
    EmulatedSkipped,
    EmulatedStarted,
    H2DSkipped,
    StagesStarted,
    StagesStopped,
    SweepApplied,
    SweepFailed,
    SweepOverCap,
    SweepStarted,
    SweepStray,
    SweepUnavailable,
)
from .sink import ResultSink
from .trials import TrialRunner

__all__ = [
    "AUTO_TRIALS",
    "AUTO_WARMUPS",
    "STAGE_TRIALS",
    "Recorder",
    "Sweeper",
    "run_emulated",
    "run_h2d",
    "run_stages",
    "run_sweep",
    "side_counts",
]

AUTO_TRIALS, AUTO_WARMUPS = 3, 1  # side trials for IO's ``auto`` counts
STAGE_TRIALS = 2  # stage trials after their one warm-up, at most (shares need few; each costs an IO trial)


class Recorder(Protocol):
    """Where side trials put what they measured: the session's latest results (a frozen value, replaced)."""

    results: RunResults


class Sweeper(Protocol):
    """What a loader sweep needs from the wrapper (``integrations.wrappers.LoaderSweeper`` for a DataLoader)."""

    def own(self) -> Setting: ...

    def cores(self) -> int: ...

    def make(self, setting: Setting) -> Iterable[Any]: ...

    def apply(self, setting: Setting) -> None: ...

    def processes(self) -> Set[int]: ...

    def stop(self, pids: Set[int]) -> None: ...


def side_counts(config: Config) -> Tuple[int, int]:
    """(trials, warm-ups) of each side trial series: IO's own, or 3 and 1 where IO's are ``auto``."""
    io = config.io
    ntrials = io.ntrials if isinstance(io.ntrials, int) and io.ntrials > 0 else AUTO_TRIALS
    nwarmup = io.nwarmup if isinstance(io.nwarmup, int) else AUTO_WARMUPS
    return ntrials, nwarmup


def run_sweep(
    config: Config,
    sweeper: Optional[Sweeper],
    runner: TrialRunner,
    sink: ResultSink,
    into: Recorder,
    fallback_batch_size: Optional[int],
) -> Optional[Setting]:
    """The loader sweep (config ``sweep``), before the schedule: IO warm-ups and trials for each
    setting on a new loader over the same dataset, its workers shut down after each. Returns the
    setting applied to the loader (``sweep_apply``), else None."""
    if not config.sweep.enabled:
        return None
    if sweeper is None:
        sink.say(SweepUnavailable())
        return None
    own = sweeper.own()
    settings = expand(config.sweep, own, sweeper.cores())
    ntrials, nwarmup = side_counts(config)
    nbatches = config.io.nbatches
    sink.say(SweepStarted(len(settings), nwarmup, ntrials, nbatches, own.text()))
    before = sweeper.processes()
    available, total = machine_memory()
    cap = memory_cap(available, total, trainer_memory())
    into.results = into.results.changed(sweep_memory_budget=cap)
    found: List[SettingResult] = []
    for j, setting in enumerate(settings, 1):
        specs = [TrialSpec(Mode.IO, k, True, nbatches, variant=f"SWEEP{j}") for k in range(1, nwarmup + 1)]
        specs += [TrialSpec(Mode.IO, k, False, nbatches, variant=f"SWEEP{j}") for k in range(1, ntrials + 1)]
        found.append(_sweep_one(setting, specs, sweeper, runner, sink, fallback_batch_size))
        stray = sweeper.processes() - before
        if stray:
            sweeper.stop(stray)
            sink.say(SweepStray(setting.text(), len(stray)))
    apply_cap(found, cap)
    into.results = into.results.changed(sweep=tuple(found), sweep_own=own)
    sink.sweep(into.results)
    over = [r.setting.text() for r in found if r.over_cap]
    if over:
        sink.say(SweepOverCap(tuple(over), cap))
    chosen = smallest_within(found)
    if config.general.sweep_apply and chosen is not None and chosen.setting != own:
        sweeper.apply(chosen.setting)
        into.results = into.results.changed(sweep_applied=chosen.setting)
        sink.say(SweepApplied(chosen.setting.text(), applied=True, apply_on=True))
        return chosen.setting
    sink.say(SweepApplied(own.text(), applied=False, apply_on=config.general.sweep_apply))
    return None


def _sweep_one(
    setting: Setting,
    specs: List[TrialSpec],
    sweeper: Sweeper,
    runner: TrialRunner,
    sink: ResultSink,
    fallback_batch_size: Optional[int],
) -> SettingResult:
    """One setting's trials (labels ``SWEEP<j>_WARMUP_<k>``, ``SWEEP<j>_<k>``); a failure is recorded."""
    found = SettingResult(setting)
    source: Optional[BatchSource] = None
    try:
        loader = sweeper.make(setting)
        source = BatchSource(lambda: iter(loader), runner.clock)
        batch = source.fetch()
        source.keep(batch)
        counter = make_counter(batch, fallback_batch_size)
        for spec in specs:
            sink.out.trial_started(spec)
            (found.warmups if spec.warmup else found.trials).append(runner.side(spec, source, counter))
        measured = worker_memory(source.worker_pids())
        found.memory = sum(m.uss for m in measured) if measured or setting.num_workers == 0 else None
    except Exception as err:  # too many workers for the shared memory, a worker that dies ...
        found.error = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".rstrip(": ")
        sink.say(SweepFailed(setting.text(), found.error))
    finally:
        if source is not None:
            try:
                source.close()
            except Exception:  # a worker already gone: nothing left to shut down
                pass
    return found


def run_h2d(
    config: Config,
    copy: Optional[Callable[[Any], Any]],
    runner: TrialRunner,
    sink: ResultSink,
    into: Recorder,
    running: Callable[[Optional[TrialSpec]], None],
) -> None:
    """IO_H2D: after the first IO trials, the same trials copying each batch to the accelerator.

    Run when the program has an accelerator in use at its first epoch (a model moved to the GPU),
    as many as IO's trials (:func:`side_counts`), this rank's own, on benchy's own pass; said and
    recorded as skipped otherwise. ``copy``: an injected copy (tests), else the accelerator's.
    ``running`` is told which trial runs (for a signal that comes during it).
    """
    if not config.general.io_h2d:
        into.results = into.results.changed(h2d_skipped="io_h2d: false")
        return
    device = "the injected copy"
    if copy is None:
        found = accelerator_in_use()
        if found is None:
            why = "no accelerator in use at the first epoch (the run computes on the CPU)"
            into.results = into.results.changed(h2d_skipped=why)
            sink.say(H2DSkipped(why))
            return
        copy, device = copier(found), found
    into.results = into.results.changed(h2d_device=device)
    own = runner.open_own()
    source = CopyingSource(own, copy)
    ntrials, _ = side_counts(config)
    for k in range(1, ntrials + 1):
        spec = TrialSpec(Mode.IO, k, False, config.io.nbatches, variant="H2D")
        running(spec)
        sink.out.trial_started(spec)
        try:
            result = runner.side(spec, source, runner.counter())
        except Exception as err:  # a copy that fails (device memory, an odd batch) costs only this
            why = f"{spec.label} raised {type(err).__name__}: {err}"
            into.results = into.results.changed(h2d_skipped=why)
            sink.say(H2DSkipped(why, stopped=True))
            break
        finally:
            running(None)
        into.results = into.results.add_h2d(result)
        sink.trial(result)
    own.drop_pending()


def run_emulated(
    config: Config,
    runner: TrialRunner,
    sink: ResultSink,
    into: Recorder,
    running: Callable[[Optional[TrialSpec]], None],
    workers: int,
) -> None:
    """EMULATED: at the end of the schedule, the real loader (benchy's own pass) with the training step
    replaced by a calibrated wait ``k`` times shorter than SYNTHETIC's step (:mod:`benchy.measure.emulate`),
    ``k`` where the model (:mod:`benchy.core.whatif`) says loading starts to limit FULL (1 when it limits
    now, 10 past that): a measurement of the model's prediction there. IO's warm-ups and trial count
    (:func:`side_counts`); never counted in a mode."""
    if not config.general.whatif:
        return
    results = into.results
    systems = {m: s for m in (Mode.IO, Mode.SYNTHETIC) if (s := system_means(results.measured(m))) is not None}
    model = from_results(results, systems, workers)
    if model is None:
        why = "no counted IO and SYNTHETIC trials to build the model from"
        into.results = results.changed(emulated_skipped=why)
        return
    k = model.flip if model.flip is not None else max(SPEEDUPS)
    k = max(1.0, k)
    step = faster(model.inputs.step[1], model.inputs.step_fixed, k)
    cpu = step * max(0.0, min(1.0, model.inputs.step_cores))
    ntrials, nwarmup = side_counts(config)
    nbatches = config.io.nbatches
    sink.say(EmulatedStarted(k, step, cpu, nwarmup, ntrials, nbatches))
    into.results = into.results.changed(emulated_speedup=k)
    source = CopyingSource(runner.open_own(), EmulatedStep(step, cpu))
    specs = [TrialSpec(Mode.IO, j, True, nbatches, variant="EMULATED") for j in range(1, nwarmup + 1)]
    specs += [TrialSpec(Mode.IO, j, False, nbatches, variant="EMULATED") for j in range(1, ntrials + 1)]
    runner.drain()
    for spec in specs:
        running(spec)
        sink.out.trial_started(spec)
        try:
            result = runner.side(spec, source, runner.counter())
        except Exception as err:  # the loader fails here: the model goes unchecked, the summary still comes
            why = f"{spec.label} raised {type(err).__name__}: {err}"
            into.results = into.results.changed(emulated_skipped=why)
            sink.say(EmulatedSkipped(why))
            break
        finally:
            running(None)
        into.results = into.results.changed(emulated=(*into.results.emulated, folded(result)))
        sink.trial(result)


def run_stages(
    config: Config,
    make: Optional[Callable[[], Instrumented]],
    runner: TrialRunner,
    sink: ResultSink,
    into: Recorder,
    running: Callable[[Optional[TrialSpec]], None],
    kind: str,
) -> None:
    """STAGES: after the first IO trials (and IO_H2D), diagnostic IO trials on an instrumented copy of
    the loader (``measure.stages``): each stage and each worker timed. One warm-up (the copy's first
    pass starts its workers), then IO's trial count (:func:`side_counts`) up to :data:`STAGE_TRIALS`;
    not counted in IO. ``make``: builds the copy (None: the loader is not a DataLoader)."""
    if not config.general.stages:
        into.results = into.results.changed(stages_skipped="stages: false")
        return
    if make is None:
        into.results = into.results.changed(
            stages_skipped=(
                f"only a DataLoader can be timed stage by stage (a BenchmarkDataLoader, or the loader benchy run chose); "
                f"this is a {kind}"
            )
        )
        return
    ntrials, nwarmup = min(STAGE_TRIALS, side_counts(config)[0]), 1
    nbatches = config.io.nbatches
    trials: List[StageTrial] = []
    source: Optional[BatchSource] = None
    memory: List[WorkerMemory] = []
    spec: Optional[TrialSpec] = None
    try:
        made = make()
        sink.say(StagesStarted(nwarmup, ntrials, nbatches, made.workers, made.plan.split))
        source = BatchSource(lambda: iter(made.loader), runner.clock)
        counter = runner.counter()
        specs = [TrialSpec(Mode.IO, k, True, nbatches, variant="STAGES") for k in range(1, nwarmup + 1)]
        specs += [TrialSpec(Mode.IO, k, False, nbatches, variant="STAGES") for k in range(1, ntrials + 1)]
        for spec in specs:
            running(spec)
            sink.out.trial_started(spec)
            began = runner.clock()
            found = stage_trial(spec.label, spec.warmup, nbatches, source.fetch, counter, made)
            into.results = into.results.add_span(
                Span(spec.label, "stages", runner.unix(began), runner.clock() - began, spec.warmup)
            )
            running(None)
            trials.append(found)
            sink.trial(TrialResult(spec, found.samples, found.seconds))
            if not spec.warmup:
                memory = _largest(memory, worker_memory(source.worker_pids()))
        spec = None
        means = system_means(into.results.measured(Mode.IO))
        free = (
            None
            if means is None
            else max(0.0, means["cpu_cores"] - means["cpu_cores_busy"] - (means.get("other_cores_busy") or 0.0))
        )
        report = analyse(trials, in_order=has_in_order(), split=made.plan.split, free_cores=free, memory=memory)
        if report is not None:
            report.instrumentation = timer_cost(len(made.plan.names))
        into.results = into.results.changed(stages=report)
    except Exception as err:  # a loader that cannot be copied or timed costs only this diagnosis
        running(None)
        where = f" in {spec.label}" if spec is not None else ""
        why = f"the instrumented loader raised {type(err).__name__}{where}: {err}"
        into.results = into.results.changed(stages_skipped=why)
        sink.say(StagesStopped(why))
    finally:
        if source is not None:
            try:
                source.close()
            except Exception:  # a worker already gone
                pass


def _largest(before: List[WorkerMemory], now: List[WorkerMemory]) -> List[WorkerMemory]:
    """Per worker, the reading with the larger unique set size."""
    found = {m.worker: m for m in before}
    for m in now:
        if m.worker not in found or m.uss > found[m.worker].uss:
            found[m.worker] = m
    return [found[k] for k in sorted(found)]
