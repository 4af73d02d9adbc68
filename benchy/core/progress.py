"""How far a run got, against what its schedule takes and what a decision would likely take (pure, no torch).

A session hands over where its loop is (:class:`Where`: the epochs and steps since the benchmark began, the loop's
own epoch length, the batches the loader's workers hold ready); these functions turn the plan
(:class:`~benchy.core.schedule.Schedule`) and the machine's state into the steps and epochs it takes at the most
(:func:`steps_needed`, :func:`epochs_needed`), the further steps a decision would likely take from the trials so far
(:func:`likely_more`), the planned windows a fixed plan did not run (:func:`not_run`) and the :class:`Progress` an
early end reports.
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

__all__ = [
    "Progress",
    "Where",
    "epochs_needed",
    "imprecise",
    "likely_more",
    "not_run",
    "progress",
    "steps_needed",
    "trials_to_settle",
]


@dataclass(frozen=True)
class Where:
    """Where the loop is: its epochs (1 = the first) and steps since the benchmark began, the batches it had taken of
    its first epoch when the benchmark began (``benchy run``), its own epoch (None: unknown), whether it leaves every
    epoch early, and the batches the loader's workers hold ready."""

    epochs: int
    steps: int
    start_at: int
    epoch: Optional[int]
    left_early: bool
    queue_depth: int
    cycle: int = 1  # the loader's round (its workers), in batches


@dataclass(frozen=True)
class Progress:
    """How far the loop got when the script ended before the verdict was decided, against the schedule's steps and
    epochs at the most (:func:`steps_needed`, :func:`epochs_needed`; ``epoch_length``: the loop's own epoch), the
    further steps a decision would likely take (:func:`likely_more`), and with fixed counts the longest windows that
    fit the steps this run took (``fits``)."""

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
        """The loop's epochs are too short to hold a window: no number of them finishes the schedule."""
        return self.epoch_length is not None and self.epoch_length < self.min_steps


def steps_needed(schedule: Schedule, where: Where, decided_after: Optional[int] = None) -> int:
    """The loop's steps the schedule takes at the most (``decided_after``: where the verdict is decided after that
    many SYNTHETIC trials), an estimate, in epochs of the loop's own length (where long enough to hold a window)."""
    per = where.epoch
    fits = per is None or per >= m.min_epoch_steps(where.cycle)
    return m.steps_of(schedule, where.queue_depth, per if fits else None, decided_after)


def epochs_needed(schedule: Schedule, where: Where) -> Optional[int]:
    """The epochs of the loop's own length it runs to finish the schedule (at the most), counted as the script counts
    them (from the start of the epoch the benchmark began in); None where that length is unknown or too short to
    hold a window."""
    if not schedule.window_plans:
        return 1
    per = where.epoch
    if per is None or per < m.min_epoch_steps(where.cycle):
        return None
    return m.epochs_for(steps_needed(schedule, where), per, where.start_at)


def likely_more(schedule: Schedule, state: m.State, results: RunResults, queue_depth: int) -> Optional[int]:
    """The loop's further steps a decision would likely take (None: the sides are too close to tell in the schedule's
    bound): the trials :func:`~benchy.core.verdict.trials_to_decide` says, a side, as the plan's next windows."""
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
    """How many more trials would likely bring the 95 % interval of the mean of ``values`` within ``precision`` of it,
    if their mean and spread held: the fewest ``k`` up to ``most - len(values)``; 0: within now; None: not within
    ``most`` trials in all, or too few (two) to estimate a spread."""
    data = np.asarray(values, dtype=float)
    if data.size < 2 or not np.all(np.isfinite(data)) or data.mean() <= 0:
        return None
    cv = float(data.std(ddof=1) / data.mean())
    for n in range(data.size, max(data.size, most) + 1):
        if t_quantile(0.95, n - 1) * cv / math.sqrt(n) <= precision:
            return n - data.size
    return None


def imprecise(schedule: Schedule, state: m.State, results: RunResults, queue_depth: int) -> Tuple[Imprecise, ...]:
    """The scheduled modes whose 95 % interval is wider than the plan's figure precision of their mean, each with the
    loop's further steps more trials of it would likely take to settle it (:func:`trials_to_settle`, as the plan's next
    windows: :func:`_window_steps`), or why no number of them would (the schedule's count ran out: ``capped``)."""
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
    """The loop's steps the further trials ``needs[mode]`` of ``mode`` would likely take, as the plan's next windows: a
    window mode's own, and the other's beside them as far as it needs as many (they alternate, S F F S); IO's, which
    run between two windows, one a boundary: the next windows of the alternation (none where no window runs: IO's
    trials then follow each other at the next boundary). FULL's windows with their lead-ins."""
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
    """The loop's steps the next ``counts`` windows of each scheduled mode take, each FULL one with its lead-in: the
    workers' ready batches, and with ``rounds`` a round and one batch more."""
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
    """With fixed counts, the planned windows that were not issued (an ``auto`` plan names no trials it might have
    run: what a decision would likely take is said instead)."""
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
