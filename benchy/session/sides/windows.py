"""The side windows after the verdict, on the cached batch, never counted in a mode, both feeding the what-if model
(docs/guide/whatif.md): ``PARTS_1`` splits the step into its parts (global hooks on only there); ``CONTENTION_1``
times the step while the loader's workers run flat out beside it in a process of their own."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from ...core.diagnostics import ContentionRun, StepParts
from ...core.outcomes import Reason, Why, raised
from ...core.results import RunResults, TrialResult
from ...core.schedule import Extra
from ...core.whatif import other_workers
from ...measure.diagnostics import Drainer, StepHooks
from ...measure.system import available_cores
from . import SideEnv

BURSTS = 0.5  # CONTENTION_1's median period below this share of its mean: the loop takes its batches in bursts


class Parts:
    def start(self, env: SideEnv, results: RunResults) -> Tuple[Any, RunResults]:
        hooks = StepHooks(env.runner.clock)
        hooks.install()
        return hooks, results

    def finish(self, env: SideEnv, helper: Any, result: TrialResult, results: RunResults, handed: int) -> RunResults:
        t = helper.remove()
        steps = len(result.step_seconds)
        period = result.own_seconds / steps if steps else 0.0
        counts = (t.forwards, t.backwards, t.steps)
        parts = StepParts.from_times(result.label, period, steps, handed, t.forward, t.backward, t.optimizer, counts)
        return results.changed(parts=parts)

    def stop(self, helper: Any) -> None:
        helper.remove()


class Contention:
    def start(self, env: SideEnv, results: RunResults) -> Tuple[Optional[Any], RunResults]:
        workers, depth, make, pace = env.workers, env.runner.queue_depth, env.runner.own.fresh, 0.0
        if not workers:
            # No workers: the loader at the what-if model's other setting (a copy with workers) runs beside the step,
            # which is what the changes to workers meet; without a copy to make, nothing runs beside it in FULL.
            instrument = env.loader.instrument
            if instrument is None:
                why = Reason(Why.NO_WORKERS, label="CONTENTION_1", extra=Extra.CONTENTION)
                return None, results.changed(diagnostics_skipped=(*results.diagnostics_skipped, why))
            workers = other_workers(0, available_cores())
            depth = workers * 2  # torch's prefetch_factor where a loader without workers is given some
            make = lambda: iter(instrument(workers).loader)  # noqa: E731 (made in the forked process)
            pace = results.step_alone() or 0.0  # a batch a step, as FULL with those workers would take them
        try:
            drainer = Drainer(make, workers=workers, pace=pace)  # a forked process's pass: its random draws are its own
            drainer.start()
        except Exception as err:  # no fork here (Windows), or no process to start: the window is left out, and why
            why = Reason(Why.EXTRA_RAISED, extra=Extra.CONTENTION, error=raised(err))
            return None, results.changed(diagnostics_skipped=(*results.diagnostics_skipped, why))
        drainer.wait_running(2 * max(1, depth) + 1)  # past the workers' first prefetching
        return drainer, results

    def finish(self, env: SideEnv, helper: Any, result: TrialResult, results: RunResults, handed: int) -> RunResults:
        helper.stop()
        steps = len(result.step_seconds)
        period = result.own_seconds / steps if steps else 0.0
        # The median step: a loader flat out gives the step bursts of waits for a core, which its mean over a
        # short window overstates. But a loop that takes its batches in bursts (a Trainer taking an update's
        # micro-batches at once) has periods of a fetch and of several steps: a median below half the mean is a
        # fetch, and the mean is the step there.
        median = result.median_period or period
        if median < BURSTS * period:
            median = period
        if not helper.batches:  # nothing ran beside the step: no figure, and why
            why = Reason(Why.NO_LOADER, label=result.label, cause=helper.ended, extra=Extra.CONTENTION)
            return results.changed(diagnostics_skipped=(*results.diagnostics_skipped, why))
        run = ContentionRun(
            result.label,
            median,
            steps,
            helper.batches,
            helper.seconds,
            workers=helper.workers,
            ended=None if helper.ended is None else helper.ended.words(),
            synthetic_period=results.step_alone(),
        )
        return results.changed(contention=run)

    def stop(self, helper: Any) -> None:
        helper.stop()
