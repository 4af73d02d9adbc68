"""The next trial, decided from the results so far (pure, no torch).

With fixed counts the :class:`Planner` walks :meth:`Schedule.order` exactly. With ``auto``:

* ``nwarmup: auto`` -- a mode warms up until its step time stops falling: the median period of
  the last ``k`` steps of its warm-ups is no more than :data:`STEADY_TOLERANCE` below the median
  of the ``k`` steps before them (``k`` = half a warm-up trial, at least 5), or until
  ``auto_max_warmup`` warm-ups. One-sided on purpose: warm-up (caches, allocator, autotuning,
  lazy initialisation) makes steps faster; a step time that grows or wanders on a shared
  machine is not cured by more warm-up, and is left to the interleaving. The session measures
  the change and hands it over (:meth:`Planner.record_warmup`), the slowest-settling rank's
  under torch.distributed.
* ``ntrials: auto`` -- at least :data:`MIN_AUTO_TRIALS` trials, then more until the answer
  is known: the IO-vs-SYNTHETIC verdict is decided (data loading, compute or balanced, at the
  schedule's decision confidence) or the mode's interval is within ``auto_precision`` of its
  mean; at most ``auto_max_trials``. SYNTHETIC and FULL trials keep the S F F S order. An IO
  trial beyond the fewest runs hidden between two windows, one per boundary, when IO is the
  less precise side of the comparison (or as many as needed when no window mode needs more).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..core.results import RunResults, TrialResult
from ..core.schedule import MIN_AUTO_TRIALS, Mode, ModePlan, Schedule, TrialSpec, abba_first
from ..core.verdict import verdict
from .events import Event, ScheduleStopped, WarmupDone

__all__ = ["MIN_STEADY_WINDOW", "STEADY_TOLERANCE", "Planner", "warmup_change"]

# nwarmup auto: a step time whose median fell by at most this share is steady.
STEADY_TOLERANCE = 0.05
# nwarmup auto: the fewest steps in each of the two windows compared.
MIN_STEADY_WINDOW = 5


def warmup_change(periods: Sequence[float], window: int) -> Optional[float]:
    """median(last ``window``) / median(the ``window`` before) - 1 (negative: steps got faster);
    None with too few periods."""
    k = max(MIN_STEADY_WINDOW, int(window))
    if len(periods) < 2 * k:
        return None
    data = np.asarray(periods[-2 * k :], dtype=float)
    before, last = float(np.median(data[:k])), float(np.median(data[k:]))
    if not (before > 0 and math.isfinite(before) and math.isfinite(last)):
        return None
    return last / before - 1.0


class Planner:
    """Decides the next trial; :meth:`peek` is side-effect free, :meth:`issue` records it."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.confidence = schedule.decision_confidence
        self._issued: Dict[Tuple[Mode, bool], int] = {}
        self._change: Dict[Mode, Optional[float]] = {}
        self._warm_periods: Dict[Mode, array[float]] = {}
        self._position = 0  # measured SYNTHETIC/FULL trials issued: the place in S F F S
        self._boundary = 0
        self._io_boundary = -1  # the boundary of the last extra IO trial
        self.events: List[Event] = []  # what the planner decided, for the log (read and cleared by the session)
        self._noted: Set[str] = set()
        self.stop_reason: Optional[str] = None
        self._profiled: Set[Mode] = set()  # kinds whose profiled warm-up was issued (profiler: torch)

    # --- what the session tells ------------------------------------------------------------

    def new_boundary(self) -> None:
        """A window ended: one more extra IO trial may run hidden before the next."""
        self._boundary += 1

    def warmup_change(self, result: TrialResult) -> Optional[float]:
        """For ``nwarmup: auto``: how much this mode's step time still changes (this rank's warm-up
        steps, the latest periods only: no more are kept than the next call can look at)."""
        new = result.step_seconds
        periods = self._warm_periods.get(result.mode, array("d")) + new
        self._warm_periods[result.mode] = periods[-max(2 * MIN_STEADY_WINDOW, len(new)) :]
        return warmup_change(periods, len(new) // 2)

    def record_warmup(self, mode: Mode, change: Optional[float]) -> None:
        """How much ``mode``'s step time changed over its last warm-up steps (None: too few to tell)."""
        self._change[mode] = change

    def issue(self, spec: TrialSpec) -> None:
        key = (spec.mode, spec.warmup)
        self._issued[key] = self._issued.get(key, 0) + 1
        if spec.profiled:
            self._profiled.add(spec.mode)
        if spec.mode is Mode.IO and not spec.warmup and self._issued[key] > self._fewest_trials(Mode.IO):
            self._io_boundary = self._boundary
        if spec.mode is not Mode.IO and not spec.warmup:
            self._position += 1

    def issued(self, mode: Mode, *, warmup: bool = False) -> int:
        return self._issued.get((mode, warmup), 0)

    def was_issued(self, spec: TrialSpec) -> bool:
        return spec.index <= self.issued(spec.mode, warmup=spec.warmup)

    # --- decisions ----------------------------------------------------------------------------

    def next(self, results: RunResults) -> Optional[TrialSpec]:
        spec = self.peek(results)
        if spec is not None:
            self.issue(spec)
        return spec

    def peek(self, results: RunResults, fresh: bool = False) -> Optional[TrialSpec]:
        """The next trial (IO ones run hidden), or None when the schedule is over.

        ``fresh``: as seen from the next boundary (after the running window).
        """
        spec = self._warmup_or_fewest(Mode.IO, results)
        if spec is not None:
            return spec
        window = self.next_window_spec(results)
        if self._io_needed(results) and (window is None or self._io_due(results, fresh)):
            return self._spec(Mode.IO, warmup=False)
        if window is None and self.stop_reason is None:
            self.stop_reason = self._why_stopped(results)
            if self.schedule.adaptive:
                self._note("stop", ScheduleStopped(self._counts(), self.stop_reason))
        return window

    def next_window_spec(self, results: RunResults) -> Optional[TrialSpec]:
        """The next SYNTHETIC or FULL trial (warm-ups, then S F F S ...), or None."""
        for mode in (Mode.SYNTHETIC, Mode.FULL):
            spec = self._warmup_or_fewest(mode, results, trials=False)
            if spec is not None:
                return spec
        wanted = [m for m in (Mode.SYNTHETIC, Mode.FULL) if self._needs(m, results)]
        if not wanted:
            return None
        if len(wanted) == 2:
            mode = Mode.SYNTHETIC if abba_first(self._position) else Mode.FULL
        else:
            mode = wanted[0]
        return self._spec(mode, warmup=False)

    def may_run(self, mode: Mode, results: RunResults) -> bool:
        """Whether a trial of ``mode`` may still be issued."""
        plan = self.schedule.plan(mode)
        if plan is None:
            return False
        return self._warming(plan, results) or self._profile_due(plan) or self._needs(mode, results)

    def warmups_used(self) -> Dict[str, int]:
        return {p.mode.value: self.issued(p.mode, warmup=True) for p in self.schedule.plans}

    # --- rules ----------------------------------------------------------------------------

    def _spec(self, mode: Mode, warmup: bool) -> TrialSpec:
        plan = self.schedule.plan(mode)
        assert plan is not None
        return TrialSpec(mode, self.issued(mode, warmup=warmup) + 1, warmup, plan.nbatches)

    def _warming(self, plan: ModePlan, results: RunResults) -> bool:
        """True while ``plan``'s mode still has a warm-up to run."""
        done = self.issued(plan.mode, warmup=True)
        if self.issued(plan.mode) > 0 or plan.mode in self._profiled:
            return False  # measured trials started, or the profiled warm-up that ends warming up: it is over
        if plan.nwarmup is not None:
            return done < plan.nwarmup
        if done == 0:
            return True
        change = self._change.get(plan.mode)
        # Warm-up ends once the step time no longer falls; it is *steady* only when it did not rise
        # either (a step that got slower is not cured by more warm-up, and is said as such).
        settled = change is not None and change >= -STEADY_TOLERANCE
        if settled or done >= plan.max_warmup:
            steady = change is not None and abs(change) <= STEADY_TOLERANCE
            self._note_warmup(plan, done, change, steady)
            return False
        return True

    def _note_warmup(self, plan: ModePlan, done: int, change: Optional[float], steady: bool) -> None:
        self._note("warm-" + plan.mode.value, WarmupDone(plan.mode, done, change, steady, STEADY_TOLERANCE))

    def _warmup_or_fewest(self, mode: Mode, results: RunResults, trials: bool = True) -> Optional[TrialSpec]:
        """A warm-up of ``mode`` if one is due, else (``trials``) a trial up to the fewest count."""
        plan = self.schedule.plan(mode)
        if plan is None:
            return None
        if self._warming(plan, results):
            return self._spec(mode, warmup=True)
        if self._profile_due(plan):
            return dataclasses.replace(self._spec(mode, warmup=True), profiled=True)
        if trials and self.issued(mode) < plan.fewest_trials:
            return self._spec(mode, warmup=False)
        return None

    def _profile_due(self, plan: ModePlan) -> bool:
        """The mode's profiled warm-up is next: its warm-ups are over and no measured trial ran yet."""
        return plan.profiled and plan.mode not in self._profiled and self.issued(plan.mode) == 0

    def _fewest_trials(self, mode: Mode) -> int:
        plan = self.schedule.plan(mode)
        return 0 if plan is None else plan.fewest_trials

    def _needs(self, mode: Mode, results: RunResults) -> bool:
        """Whether ``mode`` needs another measured trial."""
        plan = self.schedule.plan(mode)
        if plan is None:
            return False
        issued = self.issued(mode)
        if issued < plan.fewest_trials:
            return True
        if plan.ntrials is not None or issued >= plan.max_trials:
            return False
        return not (self._answered(results) or self._precise(mode, results))

    def _io_needed(self, results: RunResults) -> bool:
        return self._needs(Mode.IO, results) and not self._warming_any_window_mode(results)

    def _warming_any_window_mode(self, results: RunResults) -> bool:
        return any(self._warming(p, results) for p in self.schedule.window_plans)

    def _io_due(self, results: RunResults, fresh: bool) -> bool:
        """One extra IO trial per boundary, when IO is the less precise side."""
        if self._io_boundary == self._boundary + int(fresh):
            return False
        return self._relative_width(Mode.IO, results) >= self._relative_width(Mode.SYNTHETIC, results)

    def _relative_width(self, mode: Mode, results: RunResults) -> float:
        est = results.estimate(mode)
        if est.mean is None or est.half_width is None or est.mean <= 0:
            return math.inf
        return est.half_width / est.mean

    def _precise(self, mode: Mode, results: RunResults) -> bool:
        return self._relative_width(mode, results) <= self.schedule.precision

    def _answered(self, results: RunResults) -> bool:
        """The IO-vs-SYNTHETIC verdict is decided and FULL is not impossible."""
        if any(len(results.measured(m)) < MIN_AUTO_TRIALS for m in (Mode.IO, Mode.SYNTHETIC)):
            return False
        found = verdict(results, self.schedule.modes, self.confidence)  # None without IO or SYNTHETIC
        return found is not None and found.decided

    def _why_stopped(self, results: RunResults) -> str:
        if not self.schedule.adaptive or all(p.ntrials is not None for p in self.schedule.plans):
            return "every scheduled trial ran"
        if self._answered(results):
            return f"the verdict is decided ({100 * self.confidence:g} % confidence)"
        auto = [p for p in self.schedule.plans if p.ntrials is None]
        if all(self._precise(p.mode, results) for p in auto):
            return f"every interval is within {100 * self.schedule.precision:g} % of its mean"
        capped = [p.mode.value for p in auto if self.issued(p.mode) >= p.max_trials]
        return (
            f"auto_max_trials ({self.schedule.plans[0].max_trials}) reached for {', '.join(capped)} before the answer was known"
            if capped
            else "no mode needs more trials"
        )

    def _counts(self) -> str:
        return ", ".join(
            f"{p.mode.value} {self.issued(p.mode, warmup=True)} warm-up + {self.issued(p.mode)}" for p in self.schedule.plans
        )

    def _note(self, key: str, event: Event) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.events.append(event)
