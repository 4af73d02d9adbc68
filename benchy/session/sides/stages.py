"""STAGES: diagnostic IO trials on an instrumented copy of the loader, each stage and each worker timed (a hidden
side, after the verdict, not counted in IO). With the what-if model on, one short trial more at the model's other
setting (``STAGES_ALONE`` or ``STAGES_WORKER``): what the loader costs there, which its own setting does not show."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ...core.events import StagesStarted, StagesStopped
from ...core.outcomes import Reason, Why, raised
from ...core.results import RunResults, Span, TrialResult
from ...core.schedule import Mode, TrialSpec
from ...core.stages import StageTrial, WorkerMemory, analyse
from ...core.verdict import system_means
from ...core.whatif import other_workers
from ...measure.source import BatchSource
from ...measure.stages import Instrumented, has_in_order, stage_trial, timer_cost
from ...measure.system import available_cores, processes_cpu, worker_memory
from . import SideEnv, close_quietly, side_counts

STAGE_TRIALS = 2  # stage trials after their one warm-up, at most (shares need few; each costs an IO trial)
OTHER_WARMUP = 4  # the other setting's warm-up batches (a worker starting, its first prefetching)
OTHER_LEAST = 8  # ... its trial's batches at least
OTHER_SECONDS = 5.0  # ... and at most what this long would take at the stage trials' pace (a slow loader alone)


def run(env: SideEnv, results: RunResults) -> RunResults:
    config, sink, runner = env.config, env.sink, env.runner
    make = env.loader.instrument
    if make is None:
        return results.changed(stages_skipped=Reason(Why.NOT_A_DATALOADER, detail=env.loader.kind))
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
            found, results = _trial(env, spec, source, made, counter, results)
            trials.append(found)
            if not spec.warmup:
                memory = _largest(memory, worker_memory(source.worker_pids()))
        spec = None
        means = system_means(results.measured(Mode.IO))
        free = (
            None
            if means is None
            else max(0.0, means["cpu_cores"] - means["cpu_cores_busy"] - (means.get("other_cores_busy") or 0.0))
        )
        report = analyse(trials, in_order=has_in_order(), split=made.plan.split, free_cores=free, memory=memory)
        if report is not None:
            report.instrumentation = timer_cost(len(made.plan.names))
        results = results.changed(stages=report)
        close_quietly(source)  # its workers end before the other setting's copy starts
        source = None
        if report is not None and config.general.whatif:
            # Alone on one thread a batch takes about a worker's time: so many as fit in OTHER_SECONDS at that pace.
            per = report.period * max(1, made.workers)
            fits = int(OTHER_SECONDS / per) if per > 0 else nbatches
            other = other_workers(made.workers, available_cores())
            results = _other(env, results, other, max(OTHER_LEAST, min(nbatches // 2, fits)))
    except Exception as err:  # a loader that cannot be copied or timed costs only this diagnosis
        env.running(None)
        why = Reason(Why.INSTRUMENTED_RAISED, label="" if spec is None else spec.label, error=raised(err))
        results = results.changed(stages_skipped=why)
        sink.say(StagesStopped(why))
    finally:
        close_quietly(source)
    return results


def _trial(
    env: SideEnv, spec: TrialSpec, source: BatchSource, made: Instrumented, counter: Any, results: RunResults
) -> Tuple[StageTrial, RunResults]:
    """One stage trial of ``spec.nbatches`` batches: its line, its span on the timeline."""
    runner = env.runner
    env.running(spec)
    env.sink.out.trial_started(spec)
    began = runner.clock()
    found = stage_trial(spec.label, spec.warmup, spec.nbatches, source.fetch, counter, made)
    results = results.add_span(Span(spec.label, "stages", runner.unix(began), runner.clock() - began, spec.warmup))
    env.running(None)
    env.sink.trial(TrialResult(spec, found.samples, found.seconds))
    return found, results


def _other(env: SideEnv, results: RunResults, workers: int, nbatches: int) -> RunResults:
    """The stage trials at the what-if model's other setting, its workers' CPU time read around them; a loader
    that cannot run there (a dataset that fails or times out in a worker) costs only this figure."""
    sink, runner = env.sink, env.runner
    source: Optional[BatchSource] = None
    variant = "STAGES_WORKER" if workers else "STAGES_ALONE"
    specs = [TrialSpec(Mode.IO, 1, True, OTHER_WARMUP, variant=variant), TrialSpec(Mode.IO, 1, False, nbatches, variant=variant)]
    spec: Optional[TrialSpec] = None
    try:
        made = env.loader.instrument(workers)
        sink.say(StagesStarted(1, 1, nbatches, made.workers, made.plan.split, other=True))
        source = BatchSource(lambda: iter(made.loader), runner.clock)
        counter = runner.counter()
        trials: List[StageTrial] = []
        for spec in specs:
            pids, before = _cpu(source)  # the last reading is after the warm-up: the workers before the trial
            found, results = _trial(env, spec, source, made, counter, results)
            trials.append(found)
        still, after = _cpu(source)
        spec = None
        report = analyse(trials, in_order=has_in_order(), split=made.plan.split)
        if report is not None and pids == still and before is not None and after is not None and trials[-1].batches:
            report.worker_cpu = max(0.0, after - before) / trials[-1].batches
        return results.changed(stages_other=report)
    except Exception as err:  # the model does without this figure, and says so: nothing the run measured is lost
        env.running(None)
        why = Reason(Why.INSTRUMENTED_RAISED, label="" if spec is None else spec.label, error=raised(err))
        sink.say(StagesStopped(why, other=True))
        return results.changed(stages_other_skipped=why)
    finally:
        close_quietly(source)


def _cpu(source: BatchSource) -> Tuple[List[int], Optional[float]]:
    """The pass's workers now and the CPU seconds they have run."""
    pids = source.worker_pids()
    return pids, processes_cpu(pids)


def _largest(before: List[WorkerMemory], now: List[WorkerMemory]) -> List[WorkerMemory]:
    """Per worker, the reading with the larger unique set size."""
    found = {m.worker: m for m in before}
    for m in now:
        if m.worker not in found or m.uss > found[m.worker].uss:
            found[m.worker] = m
    return [found[k] for k in sorted(found)]
