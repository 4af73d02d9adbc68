"""The loader sweep (config ``sweep``), before the schedule: IO trials of each setting on a new loader over the same
dataset (a hidden side)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, List, Optional, Protocol, Set

import psutil

from ...core.events import SweepApplied, SweepFailed, SweepOverCap, SweepStarted, SweepStray, SweepUnavailable
from ...core.results import RunResults
from ...core.schedule import Mode, TrialSpec
from ...core.sweep import Setting, SettingResult, apply_cap, expand, memory_cap, smallest_within
from ...measure.counting import make_counter
from ...measure.source import BatchSource
from ...measure.system import available_cores, machine_memory, trainer_memory, worker_memory
from ..sink import ResultSink
from ..trials import TrialRunner
from . import SideEnv, close_quietly, side_counts


class Sweeper(Protocol):
    """What a loader sweep needs from the wrapper (``integrations.wrappers.LoaderSweeper`` for a DataLoader)."""

    def own(self) -> Setting: ...

    def make(self, setting: Setting) -> Iterable[Any]: ...

    def apply(self, setting: Setting) -> None: ...


def run(env: SideEnv, results: RunResults) -> RunResults:
    """The sweep; with ``sweep_apply``, the results say the setting applied to the loader."""
    config, sink = env.config, env.sink
    if not config.sweep.enabled:
        return results
    sweeper: Optional[Sweeper] = env.loader.sweeper
    if sweeper is None:
        sink.say(SweepUnavailable())
        return results
    own = sweeper.own()
    settings = expand(config.sweep, own, available_cores())
    ntrials, nwarmup = side_counts(config)
    nbatches = config.io.nbatches
    sink.say(SweepStarted(len(settings), nwarmup, ntrials, nbatches, own))
    before = _children()
    available, total = machine_memory()
    cap = memory_cap(available, total, trainer_memory())
    results = results.changed(sweep_memory_budget=cap)
    found: List[SettingResult] = []
    for j, setting in enumerate(settings, 1):
        specs = [TrialSpec(Mode.IO, k, True, nbatches, variant=f"SWEEP{j}") for k in range(1, nwarmup + 1)]
        specs += [TrialSpec(Mode.IO, k, False, nbatches, variant=f"SWEEP{j}") for k in range(1, ntrials + 1)]
        found.append(_one(setting, specs, sweeper, env.runner, sink, env.loader.batch_size))
        stray = _children() - before
        if stray:
            _terminate(stray)
            sink.say(SweepStray(setting, len(stray)))
    apply_cap(found, cap)
    results = results.changed(sweep=tuple(found), sweep_own=own)
    sink.sweep(results)
    over = [r.setting for r in found if r.over_cap]
    if over:
        sink.say(SweepOverCap(tuple(over), cap))
    chosen = smallest_within(found)
    if config.general.sweep_apply and chosen is not None and chosen.setting != own:
        sweeper.apply(chosen.setting)
        sink.say(SweepApplied(chosen.setting, applied=True, apply_on=True))
        return results.changed(sweep_applied=chosen.setting)
    sink.say(SweepApplied(own, applied=False, apply_on=config.general.sweep_apply))
    return results


def _one(
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
        sink.say(SweepFailed(setting, found.error))
    finally:
        close_quietly(source)
    return found


def _children() -> Set[int]:
    """This process's children now (loader workers among them)."""
    return {child.pid for child in psutil.Process().children(recursive=True)}


def _terminate(pids: Set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(psutil.Error):  # already gone
            psutil.Process(pid).terminate()
