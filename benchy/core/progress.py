"""How far a run got, against what its schedule takes and what a decision would likely take (pure, no torch):
from where the loop is (:class:`Where`) and the machine's state, the :class:`Progress` an early end reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from . import machine as m
from .outcomes import Interruption
from .results import Imprecise, RunResults
from .schedule import FIGURE_PRECISION, Mode, Schedule, TrialSpec, abba_first
from .stats import t_quantile
from .verdict import trials_to_decide


@dataclass(frozen=True)
class Where:
    """Where the loop is: its epochs (1 = the first) and steps since the benchmark began; ``start_at``: the batches
    of its first epoch taken before (``benchy run``); ``epoch``: its own epoch length (None: unknown)."""

    epochs: int
    steps: int
    start_at: int
    epoch: Optional[int]
    left_early: bool
    queue_depth: int
    cycle: int = 1  # the loader's round (its workers), in batches


@dataclass(frozen=True)
class Progress:
    """How far the loop got when the script ended before the verdict was decided; ``fits``: with fixed counts, the
    longest windows that fit the steps this run took."""

    epochs: int
    steps: int
    steps_needed: int
    epoch_length: Optional[int]
    epochs_needed: Optional[int]
    where: str
    rebuilt: int
    failed: Optional[Interruption]
    raised: Optional[str]
    running: Optional[str]
    left_early: bool = False
    min_steps: int = 3
    cycle: int = 1  # the loader's round (its workers), as the schedule counts trials
    fits: Optional[int] = None
    likely: Optional[int] = None
    likely_epochs: Optional[int] = None

    @property
    def too_short(self) -> bool:
        """No number of the loop's epochs finishes the schedule: they are too short to hold a window."""
        return self.epoch_length is not None and self.epoch_length < self.min_steps


def steps_needed(schedule: Schedule, where: Where) -> int:
    """The loop's steps the schedule takes at the most, an estimate, in epochs of the loop's own length."""
    per = where.epoch
    return m.steps_of(schedule, where.queue_depth, per if per is None or per >= m.min_epoch_steps(where.cycle) else None)


def epochs_needed(schedule: Schedule, where: Where) -> Optional[int]:
    """The epochs the loop runs to finish the schedule at the most, counted from the start of the epoch the benchmark
    began in; None where its length is unknown or too short to hold a window."""
    if not schedule.window_plans:
        return 1
    per = where.epoch
    if per is None or per < m.min_epoch_steps(where.cycle):
        return None
    return m.epochs_for(steps_needed(schedule, where), per, where.start_at)


def likely_more(schedule: Schedule, state: m.State, results: RunResults, queue_depth: int) -> Optional[int]:
    """The loop's further steps a decision would likely take (None: the sides are too close to tell)."""
    io, syn = ([t.throughput for t in results.measured(mode)] for mode in (Mode.IO, Mode.SYNTHETIC))
    if len(io) >= 2 and len(syn) >= 2:
        more = trials_to_decide(io, syn, schedule.decision_confidence, schedule.plans[0].max_trials)
        if more is None:
            return None
    else:
        more = max(1, 3 - len(syn))  # a gap of 2x or more decides with about three trials a side
    counts = {mode: more + int(state.issued(mode) == 0 and mode not in state.warm) for mode in (Mode.SYNTHETIC, Mode.FULL)}
    return _steps(schedule, state, counts, queue_depth, rounds=False)


def trials_to_settle(values: Sequence[float], precision: float = FIGURE_PRECISION, most: int = 64) -> Optional[int]:
    """How many more trials would likely bring the 95 % interval of the mean within ``precision`` of it, if the mean
    and spread held; None: not within ``most`` in all, or fewer than two values."""
    data = np.asarray(values, dtype=float)
    if data.size < 2 or not np.all(np.isfinite(data)) or data.mean() <= 0:
        return None
    cv = float(data.std(ddof=1) / data.mean())
    for n in range(data.size, max(data.size, most) + 1):
        if t_quantile(0.95, n - 1) * cv / math.sqrt(n) <= precision:
            return n - data.size
    return None


def imprecise(schedule: Schedule, state: m.State, results: RunResults, queue_depth: int) -> Tuple[Imprecise, ...]:
    """The scheduled modes wider than the plan's figure precision, each with the loop's further steps more trials
    would likely take, or ``capped`` (the schedule's count ran out)."""
    found = {}
    for plan in schedule.plans:
        mode = plan.mode
        values = [t.throughput for t in results.measured(mode)]
        if not values:
            continue
        est = results.estimate(mode)
        share = None if est.half_width is None or not est.mean else est.half_width / est.mean
        if share is not None and share <= schedule.figure_precision:
            continue
        capped = state.issued(mode) >= plan.most_trials
        more = None if capped else trials_to_settle(values, schedule.figure_precision, plan.most_trials)
        if more is None and len(values) == 1 and not capped:
            more = 1  # an interval needs a second trial; what it shows decides the rest
        found[mode] = (share, len(values), more, capped, plan.ntrials is not None)
    needs = {mode: f[2] or 0 for mode, f in found.items()}
    return tuple(
        Imprecise(
            mode.value,
            share,
            n,
            None if more is None else _window_steps(schedule, state, needs, queue_depth, mode),
            capped,
            fixed,
        )
        for mode, (share, n, more, capped, fixed) in found.items()
    )


def _window_steps(schedule: Schedule, state: m.State, needs: Dict[Mode, int], queue_depth: int, mode: Mode) -> int:
    """The loop's steps the further trials ``needs[mode]`` would likely take, as the plan's next windows: the other
    mode's alongside (they alternate); IO's run between windows, so they take the alternation's next ones."""
    more = needs.get(mode, 0)
    counts = {w: 0 for w in (Mode.SYNTHETIC, Mode.FULL) if schedule.plan(w) is not None}
    if mode is Mode.IO:
        running = [w for w in counts if needs.get(w, 0) > 0]
        for i in range(more if running else 0):
            counts[running[0] if len(running) == 1 or abba_first(state.position + i) else running[1]] += 1
    else:
        counts = {w: more if w is mode else min(more, needs.get(w, 0)) for w in counts}
    return _steps(schedule, state, counts, queue_depth, rounds=True)


def _steps(schedule: Schedule, state: m.State, counts: Dict[Mode, int], queue_depth: int, *, rounds: bool) -> int:
    """The loop's steps the next ``counts`` windows of each mode take, each FULL one with its lead-in."""
    steps = 0
    for mode, count in counts.items():
        plan = schedule.plan(mode)
        if plan is None:
            continue
        steps += sum(plan.length(state.windows(mode) + i) for i in range(count))
        if mode is Mode.FULL:
            steps += count * (queue_depth + (plan.cycle + 1 if rounds else 0))
    return max(1, steps)


def not_run(schedule: Schedule, state: m.State, queue_depth: int) -> Tuple[TrialSpec, ...]:
    """With fixed counts, the planned windows that were not issued."""
    if schedule.stops_early:
        return ()
    planned = [a.spec for a, _ in m.longest_run(schedule, queue_depth) if isinstance(a, m.OpenWindow)]
    return tuple(spec for spec in planned if spec.index > state.issued(spec.mode, warmup=spec.warmup))


def progress(
    schedule: Schedule,
    state: m.State,
    results: RunResults,
    where: Where,
    loader: str,
    rebuilt: int,
    failed: Optional[Interruption],
    raised: Optional[str],
    running: Optional[str],
) -> Progress:
    """How far the loop got, against what a decision would likely take and the schedule's bound."""
    per, depth = where.epoch, where.queue_depth
    bound = steps_needed(schedule, where)
    epochs = epochs_needed(schedule, where)
    if epochs is not None and per is not None and epochs <= where.epochs:
        # The estimate fell short of this very run: count the epochs the steps still missing take.
        epochs = where.epochs + -(-max(1, bound - where.steps) // per)
    likely = likely_more(schedule, state, results, depth)
    likely_epochs = None
    if likely is not None and epochs is not None and per is not None:
        likely_epochs = max(where.epochs + 1, m.epochs_for(where.steps + likely, per, where.start_at) or 0)
    fits = None
    if not schedule.stops_early and (epochs is not None or per is None):
        fits = m.nbatches_to_fit(schedule, where.steps, depth, per)
    return Progress(
        where.epochs,
        where.steps,
        bound,
        per,
        epochs,
        loader,
        rebuilt,
        failed,
        raised,
        running,
        left_early=where.left_early,
        min_steps=m.min_epoch_steps(where.cycle),
        cycle=where.cycle,
        fits=fits,
        likely=likely,
        likely_epochs=likely_epochs,
    )
