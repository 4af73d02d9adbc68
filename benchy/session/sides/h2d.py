"""IO_H2D: the IO trials again, copying each batch to the accelerator (a hidden side, after the verdict)."""

from __future__ import annotations

import functools

from ...core.events import H2DSkipped
from ...core.outcomes import Reason, Why, raised
from ...core.results import RunResults
from ...core.schedule import Mode, TrialSpec
from ...measure.device import accelerator_in_use, to_device
from ...measure.source import NO_BATCH, CopyingSource
from . import SideEnv, side_counts


def run(env: SideEnv, results: RunResults) -> RunResults:
    """IO_H2D, where the program has an accelerator in use (a model moved to the GPU), this rank's own; said and
    recorded as skipped otherwise."""
    config, sink, runner = env.config, env.sink, env.runner
    device, copy = "the injected copy", env.h2d_copy
    if copy is None:
        found = accelerator_in_use()
        if found is None:
            why = Reason(Why.NO_ACCELERATOR)
            sink.say(H2DSkipped(why))
            return results.changed(h2d_skipped=why)
        copy, device = functools.partial(to_device, device=found), found
    results = results.changed(h2d_device=device)
    own = runner.open_own()
    source = CopyingSource(own, copy)
    ntrials, _ = side_counts(config)
    runner.drain()
    for k in range(1, ntrials + 1):
        spec = TrialSpec(Mode.IO, k, False, config.io.nbatches, variant="H2D")
        env.running(spec)
        sink.out.trial_started(spec)
        try:
            result = runner.side(spec, source, runner.counter())
        except Exception as err:  # a copy that fails (device memory, an odd batch) costs only this
            why = Reason(Why.TRIAL_RAISED, label=spec.label, error=raised(err))
            sink.say(H2DSkipped(why, stopped=True))
            return results.changed(h2d_skipped=why)
        finally:
            env.running(None)
        results = results.add_h2d(result)
        sink.trial(result)
    own.pending = NO_BATCH
    return results
