"""EMULATED: the what-if model's check, last of the extras (a hidden side): the real loader with the training step
replaced by a calibrated wait ``k`` times shorter than SYNTHETIC's step, ``k`` where the model says loading starts
to limit FULL (1 when it limits now, 10 past that)."""

from __future__ import annotations

from ...core.events import EmulatedSkipped, EmulatedStarted
from ...core.outcomes import Reason, Why, raised
from ...core.results import RunResults, folded
from ...core.runinputs import run_inputs
from ...core.schedule import Mode, TrialSpec
from ...core.verdict import system_means
from ...core.whatif import SPEEDUPS, faster, flip_speedup
from ...measure.emulate import EmulatedStep
from ...measure.source import CopyingSource
from . import SideEnv, side_counts


def run(env: SideEnv, results: RunResults) -> RunResults:
    config, sink, runner = env.config, env.sink, env.runner
    systems = {m: s for m in (Mode.IO, Mode.SYNTHETIC) if (s := system_means(results.measured(m))) is not None}
    inp = run_inputs(results, systems, env.workers, depth=env.runner.queue_depth)
    if inp is None:
        return results.changed(emulated_skipped=Reason(Why.NO_MODEL))
    flip = flip_speedup(inp)  # the model's flip, without its predictions (the run's end works them out)
    k = max(1.0, flip if flip is not None else max(SPEEDUPS))
    step = faster(inp.step[1], inp.step_fixed, k)
    cpu = step * max(0.0, min(1.0, inp.step_cores))
    ntrials, nwarmup = side_counts(config)
    nbatches = config.io.nbatches
    sink.say(EmulatedStarted(k, step, cpu, nwarmup, ntrials, nbatches))
    results = results.changed(emulated_speedup=k)
    source = CopyingSource(runner.open_own(), EmulatedStep(step, cpu))
    specs = [TrialSpec(Mode.IO, j, True, nbatches, variant="EMULATED") for j in range(1, nwarmup + 1)]
    specs += [TrialSpec(Mode.IO, j, False, nbatches, variant="EMULATED") for j in range(1, ntrials + 1)]
    runner.drain()
    for spec in specs:
        env.running(spec)
        sink.out.trial_started(spec)
        try:
            result = runner.side(spec, source, runner.counter())
        except Exception as err:  # the loader fails here: the model goes unchecked, the summary still comes
            why = Reason(Why.TRIAL_RAISED, label=spec.label, error=raised(err))
            sink.say(EmulatedSkipped(why))
            return results.changed(emulated_skipped=why)
        finally:
            env.running(None)
        results = results.changed(emulated=(*results.emulated, folded(result)))
        sink.trial(result)
    return results
