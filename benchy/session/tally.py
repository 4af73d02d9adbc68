"""What a benchmark measured so far, and how a trial comes to count (glue, no hot loop).

:class:`Tally` holds the results and the outcomes (frozen values, replaced) and counts each trial the session hands
it: exchanged with the other ranks (a :class:`~benchy.measure.ranks.DistributedError` where they cannot exchange),
recorded, its line said, and, for an ``auto`` warm-up, how much its step time still changes; the machine's event
for it comes back. It also runs what runs on benchy's own pass between two steps: an IO trial, a hidden extra.
"""

from __future__ import annotations

from array import array
from typing import Any, Callable, Dict, Optional, Tuple

from ..core import events as ev
from ..core import machine as m
from ..core.config import Config
from ..core.outcomes import FailedRank, Interruption, Outcomes, Reason, Why, raised
from ..core.results import PERIOD_CODE, RunResults, TrialResult
from ..core.schedule import Extra, Mode, Schedule, TrialSpec
from ..measure.ranks import combine
from .context import RunContext
from .sides import HIDDEN, SideEnv
from .trials import TrialRunner

__all__ = ["Tally"]


class Tally:
    """The results and outcomes of one benchmark, and the counting of its trials."""

    def __init__(self, config: Config, runner: TrialRunner) -> None:
        self.config, self.runner = config, runner
        self.results = RunResults()
        self.outcomes = Outcomes()
        self.hidden: Optional[TrialSpec] = None  # the IO or side trial running now, if any
        self._warm: Dict[Mode, array[float]] = {}  # each mode's latest warm-up periods (nwarmup: auto)

    def count(self, result: TrialResult, ctx: RunContext, schedule: Schedule, room: Optional[int]) -> m.Counted:
        """A scheduled trial that counted: exchanged with the other ranks, recorded, said; its event for the machine."""
        plan = schedule.plan(result.mode)
        auto_warmup = result.spec.warmup and not result.spec.profiled and plan is not None and plan.nwarmup is None
        change = self._warmup_change(result) if auto_warmup else None
        result, change = combine(ctx.comm, result, change, self.config.general.dist_rank_lists)
        self.results = self.results.add_trial(result)
        self.outcomes = self.outcomes.count()
        ctx.sink.trial(result)
        return m.Counted(result.spec, change, m.judge(self.results, schedule), room)

    def _warmup_change(self, result: TrialResult) -> Optional[float]:
        """How much this mode's step time still changes over its latest warm-up steps (no more kept than it reads)."""
        new, cycle = result.step_seconds, max(1, result.spec.cycle)
        periods = self._warm.get(result.mode, array(PERIOD_CODE)) + new
        keep = -(-max(10, len(new)) // cycle) * cycle  # whole rounds of the loader (its periods come in them)
        self._warm[result.mode] = periods[-keep:]
        return m.warmup_change(periods, len(new) // 2, cycle)

    def io(self, spec: TrialSpec, ctx: RunContext, first: bool, lose: Callable[[Interruption], None]) -> TrialResult:
        """One IO trial on benchy's own pass (``lose``: a loader that raises loses it, then the error propagates).
        Every IO trial but the first starts with the batches the workers hold ready taken, untimed: the state of
        a plain loop that drains the loader as fast as it can."""
        ctx.out.trial_started(spec)
        ranges = ctx.profilers.before_trial(spec, self.runner.ranges)
        self.hidden = spec
        try:
            result = self.runner.io(spec, ctx.out, ranges, drain=not first)
        except BaseException as err:
            self.hidden = None
            lose(Interruption(spec, 0, Reason(Why.LOADER_RAISED, error=raised(err))))
            raise
        self.hidden = None
        return self.runner.finish(result)

    def side(self, extra: Extra, env: SideEnv) -> None:
        """A hidden extra; one that raises costs only itself (said, and recorded as skipped)."""
        try:
            self.results = HIDDEN[extra](env, self.results)
        except Exception as err:
            self.hidden = None
            why = Reason(Why.EXTRA_RAISED, extra=extra, error=raised(err))
            self.results = self.results.changed(diagnostics_skipped=(*self.results.diagnostics_skipped, why))
            env.sink.say(ev.SideFailed(why))

    def running(self, spec: Optional[TrialSpec]) -> None:
        """A side says which trial runs (for a signal that comes during it)."""
        self.hidden = spec

    # --- what the endings record ----------------------------------------------------------------

    def interrupt(self, item: Interruption) -> None:
        self.outcomes = self.outcomes.lose(item)

    def signalled(self, name: str, failed: Tuple[FailedRank, ...]) -> None:
        self.outcomes = self.outcomes.signalled(name).with_failed(failed)

    def failed_ranks(self, failed: Tuple[FailedRank, ...]) -> None:
        self.outcomes = self.outcomes.with_failed(failed)

    def changed(self, **fields: Any) -> None:
        self.results = self.results.changed(**fields)
