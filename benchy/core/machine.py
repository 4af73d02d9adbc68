"""The schedule as a state machine (pure: no torch, no clock): see docs/guide/schedule.md for the order it follows.

A session feeds :func:`transition` one event at a time and carries out the one action it answers: an IO trial on
benchy's own pass, a SYNTHETIC or FULL window (the loop's next steps), an extra, or the end. Where the loop's length
is known (``room``), a window is shortened to fit, down to :data:`~benchy.core.schedule.MIN_WINDOW`; an extra that
does not fit is left out. Notes for the log collect in :attr:`State.notes`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterator, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from .results import Imprecise, RunResults, ScheduleState
from .schedule import MIN_AUTO_TRIALS, MIN_WINDOW, Extra, Mode, ModePlan, Schedule, TrialSpec, abba_first
from .verdict import Outcome, verdict
from .words import Said, Worded

# nwarmup auto: a step time whose median fell by at most this share is steady.
STEADY_TOLERANCE = 0.05
# A warm-up's rise in step time up to this share is said as information, beyond it as a warning.
NOISY_RISE = 0.25
# nwarmup auto: the fewest steps in each of the two halves compared.
MIN_STEADY_WINDOW = 4
# Steps the FLOPs' count takes, as a rule: two untimed steps on the cached batch, then two to four counted (more where
# the loop takes several batches at once: see measure.flops).
FLOPS_STEPS = 6


class Phase(str, enum.Enum):
    NEW = "new"
    MEASURING = "measuring"
    EXTRAS = "extras"
    DONE = "done"


class Stop(Worded):
    """Why measuring ended (the JSON's ``schedule.stop``), in words that :meth:`reason` fills in."""

    DECIDED = "decided", "the verdict is decided ({confidence:g} % confidence)"  # and FULL has its fewest trials
    PRECISE = "precise", "every interval is within {precision:g} % of its mean"  # every auto mode's
    BUDGET = "budget", "auto_max_trials{most} reached{capped} before the answer was known"
    ALL_RAN = "all-ran", "every scheduled trial ran"  # fixed counts
    HORIZON = "horizon", "the loop's {horizon} steps left no room for another window"
    NOTHING = "nothing", "no mode needs more trials"  # only IO is scheduled, say

    def reason(
        self,
        confidence: float,
        precision: float,
        horizon: Optional[int],
        capped: Sequence[str] = (),
        most: Optional[int] = None,
    ) -> str:
        """Why measuring ended, in words (``capped``: the modes at ``auto_max_trials``, ``most``)."""
        return self.words.format(
            confidence=100 * confidence,
            precision=100 * precision,
            horizon=horizon,
            most=f" ({most})" if most is not None else "",
            capped=f" for {', '.join(capped)}" if capped else "",
        )


# --- what the session hands over --------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """The evidence after a counted trial; ``settled``: the modes within the figure precision."""

    decided: bool = False
    outcome: Optional[Outcome] = None
    precise: FrozenSet[Mode] = frozenset()
    io_wider: bool = True
    settled: FrozenSet[Mode] = frozenset(Mode)


@dataclass(frozen=True)
class Begin:
    """The benchmark begins; ``queue_depth``: the batches the workers hold ready (a FULL window's lead-in)."""

    queue_depth: int = 0
    room: Optional[int] = None
    epoch_length: Optional[int] = None


@dataclass(frozen=True)
class Counted:
    """``spec`` counted; ``change``: an ``auto`` warm-up's :func:`warmup_change`."""

    spec: TrialSpec
    change: Optional[float] = None
    judgement: Judgement = Judgement()
    room: Optional[int] = None


@dataclass(frozen=True)
class Lost:
    """``spec`` did not count (the loader raised inside it, ...)."""

    spec: TrialSpec
    room: Optional[int] = None


@dataclass(frozen=True)
class ExtraEnded:
    """An extra ran (or could not run: the session says why)."""

    extra: Extra
    room: Optional[int] = None


Event = Union[Begin, Counted, Lost, ExtraEnded]


@dataclass(frozen=True)
class RunIO:
    """An IO trial on benchy's own pass, now (hidden from the loop)."""

    spec: TrialSpec


@dataclass(frozen=True)
class OpenWindow:
    """A SYNTHETIC or FULL window: the loop's next steps."""

    spec: TrialSpec


@dataclass(frozen=True)
class RunExtra:
    """An extra; ``spec``: the window of one that takes the loop's steps (PARTS, CONTENTION), else None."""

    extra: Extra
    spec: Optional[TrialSpec] = None


@dataclass(frozen=True)
class Finish:
    stop: Stop


Action = Union[RunIO, OpenWindow, RunExtra, Finish]


@dataclass(frozen=True)
class WarmupEnded:
    """``nwarmup: auto`` ended ``mode``'s warm-up: ``steady``, or it rose (more warm-up would not cure it), or it
    still fell at ``auto_max_warmup``."""

    mode: Mode
    done: int
    change: Optional[float]
    steady: bool

    def words(self) -> Said:
        what = "n/a" if self.change is None else f"{100.0 * self.change:+.1f} %"
        mode = self.mode.value
        if self.steady:
            return Said(
                False,
                f"{mode} warm-up: steady after {self.done} warm-up trial(s) (median step time of the last "
                f"steps {what} against the steps before, within {100 * STEADY_TOLERANCE:g} %; warm-up goes on "
                f"while it falls by more).",
            )
        if self.change is not None and STEADY_TOLERANCE < self.change <= NOISY_RISE:
            return Said(
                False,
                f"{mode} warm-up: over after {self.done} warm-up trial(s): the median step time of the last "
                f"steps moved {what} against the steps before (noise in a short window, or a step that gets "
                f"slower: more warm-up would not cure it); measuring begins, and the trials' intervals carry "
                f"the variation.",
            )
        if self.change is not None and self.change > STEADY_TOLERANCE:
            return Said(
                True,
                f"{mode} warm-up: not steady after {self.done} warm-up trial(s): the median step time of "
                f"the last steps rose {what} against the steps before (warm-up makes steps faster, not "
                f"slower: another process, throttling or a growing cost in the step); more warm-up would "
                f"not cure it, so measuring begins, and the trials' intervals carry the variation.",
            )
        return Said(
            False,
            f"{mode} warm-up: not steady after {self.done} warm-up trials (auto_max_warmup; the median "
            f"step time still changed {what}); measuring anyway: its first trials may be slower than "
            f"later ones. Raise global.auto_max_warmup or nbatches.",
        )


@dataclass(frozen=True)
class Stopped:
    """Measuring ended (an adaptive ``schedule``'s): why, and the warm-ups and trials each mode ran."""

    stop: Stop
    counts: Tuple[Tuple[Mode, int, int], ...]
    schedule: Schedule
    capped: Tuple[Mode, ...] = ()  # Stop.BUDGET: the modes at auto_max_trials

    def words(self) -> Said:
        counts = ", ".join(f"{mode.value} {w} warm-up + {t}" for mode, w, t in self.counts)
        s = self.schedule
        capped = [mode.value for mode in self.capped]
        most = s.plans[0].max_trials if s.plans else None
        why = self.stop.reason(s.decision_confidence, s.precision, s.horizon, capped, most)
        return Said(False, f"Schedule: done after {counts}: {why}.")


Note = Union[WarmupEnded, Stopped]


def judge(results: RunResults, schedule: Schedule) -> Judgement:
    """The evidence in ``results`` (no verdict before ``MIN_AUTO_TRIALS`` counted trials a side)."""
    widths = {mode: _relative_width(results, mode) for mode in Mode}
    precise = frozenset(mode for mode, w in widths.items() if w <= schedule.precision)
    settled = frozenset(mode for mode, w in widths.items() if w <= max(schedule.precision, schedule.figure_precision))
    io_wider = widths[Mode.IO] >= widths[Mode.SYNTHETIC]
    found = None
    if all(len(results.measured(mode)) >= MIN_AUTO_TRIALS for mode in (Mode.IO, Mode.SYNTHETIC)):
        found = verdict(results, schedule.modes, schedule.decision_confidence)  # None without IO or SYNTHETIC
    decided, outcome = (False, None) if found is None else (found.decided, found.outcome)
    return Judgement(decided, outcome, precise, io_wider, settled)


def _relative_width(results: RunResults, mode: Mode) -> float:
    est = results.estimate(mode)
    if est.mean is None or est.half_width is None or est.mean <= 0:
        return math.inf
    return est.half_width / est.mean


def warmup_change(periods: Sequence[float], window: int, cycle: int = 1) -> Optional[float]:
    """median(last ``window``) / median(the ``window`` before) - 1 (negative: steps got faster); None with too few
    periods. With ``cycle`` > 1 the periods are summed a round at a time, from the last: a median period alone would
    read the bursts' short hand-outs."""
    c = max(1, int(cycle))
    if c > 1:
        whole = len(periods) // c * c
        if whole < 2 * c:
            return None
        data = np.asarray(periods[len(periods) - whole :], dtype=float).reshape(-1, c).sum(axis=1)
        k = min(max(1, int(window) // c), len(data) // 2)
    else:
        k = max(MIN_STEADY_WINDOW, int(window))
        if len(periods) < 2 * k:
            return None
        data = np.asarray(periods[-2 * k :], dtype=float)
    data = data[-2 * k :]
    before, last = float(np.median(data[:k])), float(np.median(data[k:]))
    if not (before > 0 and math.isfinite(before) and math.isfinite(last)):
        return None
    return last / before - 1.0


# --- the state --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """Where the schedule is: its plan and everything decided so far (a frozen value)."""

    schedule: Schedule
    phase: Phase = Phase.NEW
    warmups: Mapping[Mode, int] = dataclasses.field(default_factory=dict)  # warm-ups issued (the profiled one included)
    trials: Mapping[Mode, int] = dataclasses.field(default_factory=dict)  # counted trials issued
    position: int = 0  # SYNTHETIC and FULL windows issued: the place in S F F S
    changes: Mapping[Mode, Optional[float]] = dataclasses.field(default_factory=dict)  # the last auto warm-up's
    warm: FrozenSet[Mode] = frozenset()  # modes whose warm-up is over
    profiled: FrozenSet[Mode] = frozenset()  # modes whose profiled warm-up was issued
    boundary: int = 0  # window boundaries so far
    io_boundary: int = -1  # the boundary of the last extra IO trial
    judgement: Judgement = Judgement()
    queue_depth: int = 0
    room: Optional[int] = None  # the loop's steps left, where known
    epoch_length: Optional[int] = None  # the loader's batches an epoch, where known
    stop: Optional[Stop] = None
    outcome: Optional[Outcome] = None  # the verdict when measuring stopped (orders the extras)
    extras: Tuple[Extra, ...] = ()  # still to run
    skipped: Tuple[Extra, ...] = ()  # extras left out: their steps did not fit the loop's known length
    notes: Tuple[Note, ...] = ()
    previous: Optional[Mode] = None  # the mode of the last window issued

    def issued(self, mode: Mode, *, warmup: bool = False) -> int:
        return (self.warmups if warmup else self.trials).get(mode, 0)

    def windows(self, mode: Mode) -> int:
        """Windows (or IO trials) issued for ``mode``, warm-ups included: the index of its next length."""
        return self.issued(mode, warmup=True) + self.issued(mode)

    @property
    def decided_phase(self) -> bool:
        """A script that ends now leaves a complete run: measuring is over, or an ``auto`` verdict is decided."""
        if self.phase in (Phase.EXTRAS, Phase.DONE):
            return True
        return self.phase is Phase.MEASURING and self.schedule.stops_early and self.judgement.decided

    def warmups_used(self) -> dict[str, int]:
        return {p.mode.value: self.issued(p.mode, warmup=True) for p in self.schedule.plans}

    def may_run(self, mode: Mode) -> bool:
        plan = self.schedule.plan(mode)
        return plan is not None and self.phase is Phase.MEASURING and _wanted(self, plan, _needs(self, mode)) is not None

    def counts(self) -> Tuple[Tuple[Mode, int, int], ...]:
        return tuple((p.mode, self.issued(p.mode, warmup=True), self.issued(p.mode)) for p in self.schedule.plans)


# --- the transition ---------------------------------------------------------------------------------


def transition(state: State, event: Event) -> Tuple[State, Action]:
    """The next state and what to do now."""
    if isinstance(event, Begin):
        if state.phase is not Phase.NEW:
            raise ValueError(f"Begin: expected the phase {Phase.NEW.value}, got {state.phase.value}")
        state = dataclasses.replace(
            state, phase=Phase.MEASURING, queue_depth=event.queue_depth, epoch_length=event.epoch_length, boundary=1
        )
    elif isinstance(event, Counted):
        spec = event.spec
        if spec.variant == "" and spec.warmup and not spec.profiled:
            state = dataclasses.replace(state, changes={**state.changes, spec.mode: event.change})
        state = dataclasses.replace(state, judgement=event.judgement)
    if isinstance(event, (Counted, Lost)) and event.spec.mode is not Mode.IO and event.spec.variant == "":
        state = dataclasses.replace(state, boundary=state.boundary + 1)
    return _next(dataclasses.replace(state, room=event.room))


def _next(state: State) -> Tuple[State, Action]:
    if state.phase is Phase.NEW:
        raise ValueError("the schedule has not begun: send Begin first")
    if state.phase is Phase.MEASURING:
        state = _settle(state)
        spec = _io_warmup_or_fewest(state)
        if spec is not None:
            return _issue(state, spec), RunIO(spec)
        window = _next_window(state)
        # IO runs at a boundary it has not run at where it is the wider side, never between two FULL windows.
        between_full = window is not None and window.mode is Mode.FULL and state.previous is Mode.FULL
        due = state.io_boundary != state.boundary and state.judgement.io_wider and not between_full
        if _io_needed(state) and (window is None or due):
            spec = _spec(state, Mode.IO, warmup=False)
            state = dataclasses.replace(_issue(state, spec), io_boundary=state.boundary)
            return state, RunIO(spec)
        if window is not None:
            return _issue(state, window), OpenWindow(window)
        state = _stop_measuring(state)
    if state.phase is Phase.EXTRAS:
        # The first extra whose steps fit the loop's known length runs; those before it are left out.
        for k, extra in enumerate(state.extras):
            spec = _extra_spec(state, extra)
            need = FLOPS_STEPS if extra is Extra.FLOPS else (spec.nbatches + 2 if spec is not None else 0)
            if not (extra.in_loop and state.room is not None and need > state.room):
                skipped = state.skipped + state.extras[:k]
                return dataclasses.replace(state, extras=state.extras[k + 1 :], skipped=skipped), RunExtra(extra, spec)
        state = dataclasses.replace(state, extras=(), skipped=state.skipped + state.extras, phase=Phase.DONE)
    assert state.stop is not None
    return state, Finish(state.stop)


def _settle(state: State) -> State:
    """Note each ``auto`` warm-up that has just ended (once)."""
    for plan in state.schedule.plans:
        mode = plan.mode
        if mode in state.warm or plan.nwarmup is not None or state.issued(mode, warmup=True) == 0 or _warming(state, plan):
            continue
        change = state.changes.get(mode)
        steady = change is not None and abs(change) <= STEADY_TOLERANCE
        note = WarmupEnded(mode, state.issued(mode, warmup=True) - int(mode in state.profiled), change, steady)
        state = dataclasses.replace(state, warm=state.warm | {mode}, notes=state.notes + (note,))
    return state


def _issue(state: State, spec: TrialSpec) -> State:
    if spec.warmup:
        state = dataclasses.replace(state, warmups={**state.warmups, spec.mode: state.issued(spec.mode, warmup=True) + 1})
        if spec.profiled:
            state = dataclasses.replace(state, profiled=state.profiled | {spec.mode})
    else:
        state = dataclasses.replace(state, trials={**state.trials, spec.mode: state.issued(spec.mode) + 1})
    if spec.mode is not Mode.IO:
        state = dataclasses.replace(state, position=state.position + 1, previous=spec.mode)
    return state


def _spec(state: State, mode: Mode, *, warmup: bool, profiled: bool = False, length: Optional[int] = None) -> TrialSpec:
    plan = state.schedule.plan(mode)
    assert plan is not None
    n = plan.length(state.windows(mode)) if length is None else length
    return TrialSpec(mode, state.issued(mode, warmup=warmup) + 1, warmup, n, profiled=profiled, cycle=plan.cycle)


def _warming(state: State, plan: ModePlan) -> bool:
    mode = plan.mode
    done = state.issued(mode, warmup=True)
    if state.issued(mode) > 0 or mode in state.profiled:
        return False  # measured trials started, or the profiled warm-up that ends warming up: it is over
    if plan.nwarmup is not None:
        return done < plan.nwarmup
    if done == 0:
        return True
    change = state.changes.get(mode)
    # Warm-up ends once the step time no longer falls (a step that got slower is not cured by more warm-up).
    settled = change is not None and change >= -STEADY_TOLERANCE
    return not (settled or done >= plan.max_warmup)


def _profile_due(state: State, plan: ModePlan) -> bool:
    return plan.profiled and plan.mode not in state.profiled and state.issued(plan.mode) == 0 and not _warming(state, plan)


def _needs(state: State, mode: Mode) -> bool:
    plan = state.schedule.plan(mode)
    if plan is None:
        return False
    issued = state.issued(mode)
    if issued < plan.fewest_trials:
        return True
    judgement = state.judgement
    if plan.ntrials is not None or issued >= plan.max_trials or mode in judgement.precise:
        return False
    # A decided verdict stops a mode once its interval is within the figure precision: the figures beside the verdict are
    # read too (two trials give a t quantile of 12.7, an interval wider than most figures).
    return not (judgement.decided and mode in judgement.settled)


def _wanted(state: State, plan: ModePlan, needed: bool) -> Optional[Tuple[bool, bool]]:
    """(warm-up, profiled) of ``plan``'s next trial: a warm-up, the profiled one, a counted one if ``needed``, or None."""
    if _warming(state, plan):
        return True, False
    if _profile_due(state, plan):
        return True, True
    return (False, False) if needed else None


def _io_warmup_or_fewest(state: State) -> Optional[TrialSpec]:
    plan = state.schedule.plan(Mode.IO)
    wanted = None if plan is None else _wanted(state, plan, state.issued(Mode.IO) < plan.fewest_trials)
    return None if wanted is None else _spec(state, Mode.IO, warmup=wanted[0], profiled=wanted[1])


def _beside(state: State, plan: ModePlan) -> bool:
    """SYNTHETIC goes on beside FULL while both FULL and IO need trials: IO runs only before a SYNTHETIC window."""
    if plan.mode is not Mode.SYNTHETIC or plan.ntrials is not None or state.issued(plan.mode) >= plan.max_trials:
        return False
    return _needs(state, Mode.FULL) and _io_needed(state)


def _io_needed(state: State) -> bool:
    return _needs(state, Mode.IO) and not any(_warming(state, p) for p in state.schedule.window_plans)


def _crossed(state: State, plan: ModePlan, n: int) -> int:
    """The most steps a window of ``n`` batches may leave out at the epochs' ends it crosses (it errs long)."""
    per = 2 + (state.queue_depth if plan.mode is Mode.FULL else 0) + max(1, plan.cycle) - 1
    return _epoch_ends(n, state.epoch_length, per)


def _epoch_ends(steps: int, epoch_length: Optional[int], per: int) -> int:
    """``per`` steps for each epoch a stretch of ``steps`` measured steps runs into (0 where the length is unknown)."""
    if not epoch_length or epoch_length <= 0 or steps <= 0:
        return 0
    return per * math.ceil(steps / max(1, epoch_length - per))


def _fitting(state: State, plan: ModePlan, length: int, budget: int) -> int:
    """The longest window up to ``length``, in whole rounds, that fits ``budget`` steps (0: none)."""
    if length + _crossed(state, plan, length) <= budget:
        return length
    low = _largest(0, max(0, min(length, budget)), lambda n: n + _crossed(state, plan, n) <= budget)
    return low - low % max(1, plan.cycle)


def _next_window(state: State) -> Optional[TrialSpec]:
    """The next SYNTHETIC or FULL window (S F F S ...), shortened to the loop's room; None: none needed or none fits."""
    wanted = [
        (plan, found)
        for plan in state.schedule.window_plans
        if (found := _wanted(state, plan, _needs(state, plan.mode) or _beside(state, plan))) is not None
    ]
    if not wanted:
        return None
    plan, (warmup, profiled) = wanted[0] if len(wanted) == 1 or abba_first(state.position) else wanted[1]
    mode = plan.mode
    length = plan.length(state.windows(mode))
    if mode is Mode.SYNTHETIC and state.queue_depth > 0:
        # As long as the loader's queue: the repay before the next FULL window takes what its workers made meanwhile.
        length = max(length, min(state.queue_depth, plan.nbatches))
    if state.room is not None:
        # Untimed steps before a window and the periods it may leave out (an epoch's end, its first), and the steps
        # kept for the FLOPs' count, so that a run whose windows grow to its known length still counts them.
        lead = (state.queue_depth + 1 if mode is Mode.FULL else 0) + 2
        kept = FLOPS_STEPS if Extra.FLOPS in state.schedule.extras else 0
        length = _fitting(state, plan, length, state.room - lead - kept)
        if length < max(min(MIN_WINDOW, plan.nbatches), plan.cycle):
            return None
    return _spec(state, mode, warmup=warmup, profiled=profiled, length=length)


def _stop_reason(state: State) -> Stop:
    schedule = state.schedule
    if not schedule.window_plans and schedule.plan(Mode.IO) is None:
        return Stop.NOTHING
    if state.room is not None and any(_warming(state, p) or _needs(state, p.mode) for p in schedule.window_plans):
        return Stop.HORIZON
    if not schedule.stops_early:
        return Stop.ALL_RAN
    if state.judgement.decided:
        return Stop.DECIDED
    auto = [p for p in schedule.plans if p.ntrials is None]
    if auto and all(p.mode in state.judgement.precise for p in auto):
        return Stop.PRECISE
    if any(state.issued(p.mode) >= p.max_trials for p in auto):
        return Stop.BUDGET
    return Stop.NOTHING


def _stop_measuring(state: State) -> State:
    stop = _stop_reason(state)
    outcome = state.judgement.outcome
    extras = extras_order(state.schedule.extras, outcome if state.judgement.decided else None)
    capped = tuple(p.mode for p in state.schedule.plans if p.ntrials is None and state.issued(p.mode) >= p.max_trials)
    notes = state.notes + (
        (Stopped(stop, state.counts(), state.schedule, capped if stop is Stop.BUDGET else ()),) if state.schedule.adaptive else ()
    )
    return dataclasses.replace(state, phase=Phase.EXTRAS, stop=stop, outcome=outcome, extras=extras, notes=notes)


_ORDERS: Dict[Optional[Outcome], Tuple[Extra, ...]] = {
    # no verdict, or one without an order of its own
    None: (Extra.FLOPS, Extra.STAGES, Extra.H2D, Extra.PARTS, Extra.CONTENTION, Extra.EMULATED),
    # data loading limits: why the loader is slow first (its stages, its copies), then what the step does beside it
    Outcome.DATA_LOADING: (Extra.STAGES, Extra.H2D, Extra.CONTENTION, Extra.FLOPS, Extra.PARTS, Extra.EMULATED),
    # compute limits: what the step is made of first (its FLOPs and MFU, its parts)
    Outcome.COMPUTE: (Extra.FLOPS, Extra.PARTS, Extra.H2D, Extra.CONTENTION, Extra.STAGES, Extra.EMULATED),
}


def extras_order(enabled: Tuple[Extra, ...], outcome: Optional[Outcome]) -> Tuple[Extra, ...]:
    """The enabled extras, most useful first for ``outcome`` (the emulated check, testing the others, last)."""
    return tuple(e for e in _ORDERS.get(outcome, _ORDERS[None]) if e in enabled)


def _extra_spec(state: State, extra: Extra) -> Optional[TrialSpec]:
    if extra not in (Extra.PARTS, Extra.CONTENTION):
        return None
    steps = state.schedule.diagnostic_steps
    if state.room is not None:
        steps = min(steps, state.room - 2)
    return TrialSpec(Mode.SYNTHETIC, 1, False, max(1, steps), variant=extra.value)


def schedule_state(
    state: State,
    order: Tuple[str, ...],
    stopped_at: Optional[int],
    *,
    decided_at: Optional[int] = None,
    decided_seconds: Optional[float] = None,
    stopped_seconds: Optional[float] = None,
    imprecise: Tuple[Imprecise, ...] = (),
) -> ScheduleState:
    """The schedule as it ran, for the results."""
    schedule = state.schedule
    return ScheduleState(
        adaptive=schedule.adaptive,
        precision=schedule.precision,
        windows_needed=schedule.windows_needed,
        windows_fewest=schedule.windows_fewest,
        order=order,
        warmups=state.warmups_used(),
        decision_confidence=schedule.decision_confidence,
        stop=None if state.stop is None else state.stop.value,
        extras=tuple(e.value for e in schedule.extras),
        extras_not_run=tuple((e.value, "horizon") for e in state.skipped)
        + tuple(
            (e.value, "ended")
            for e in (schedule.extras if state.phase is Phase.MEASURING and state.decided_phase else state.extras)
        ),
        horizon=schedule.horizon,
        stopped_at=stopped_at,
        cycle=schedule.cycle,
        decided_at=decided_at,
        decided_seconds=decided_seconds,
        stopped_seconds=stopped_seconds,
        figure_precision=schedule.figure_precision,
        imprecise=imprecise,
    )


# --- the plan's length ------------------------------------------------------------------------------


def longest_run(schedule: Schedule, queue_depth: int = 0, decided_after: Optional[int] = None) -> Iterator[Tuple[Action, int]]:
    """The actions, each with the loop's steps it takes, of the longest run the plan allows: warm-ups end as late as
    they may, and the verdict is never decided (``decided_after``: once SYNTHETIC has that many counted trials)."""
    taken, previous = 1, None  # the first period of the first epoch

    def room() -> Optional[int]:
        return None if schedule.horizon is None else max(0, schedule.horizon - taken)

    state, action = transition(State(schedule), Begin(queue_depth, room()))
    while True:
        steps = 0
        if isinstance(action, OpenWindow):
            mode = action.spec.mode
            steps = action.spec.nbatches + (queue_depth if mode is Mode.FULL and previous is not Mode.FULL else 0)
            previous = mode
        elif isinstance(action, RunExtra) and action.extra.in_loop:
            steps = FLOPS_STEPS if action.spec is None else action.spec.nbatches
            previous = None
        taken += steps
        yield action, steps
        if isinstance(action, Finish):
            return
        if isinstance(action, RunExtra):
            state, action = transition(state, ExtraEnded(action.extra, room()))
            continue
        spec = action.spec
        decided = decided_after is not None and state.issued(Mode.SYNTHETIC) >= decided_after
        change = 0.0 if decided_after is not None else None  # steady at once when a decision is assumed
        judgement = Judgement(decided=decided, outcome=Outcome.COMPUTE if decided else None)
        state, action = transition(state, Counted(spec, change, judgement, room()))


# A session asks for its plan's length at each window's end, with the same plan: the same figure each time (a
# pure function of its arguments, which are values), from a walk of the whole plan's transitions.
@functools.lru_cache(maxsize=128)
def steps_of(
    schedule: Schedule,
    queue_depth: int = 0,
    epoch_length: Optional[int] = None,
    decided_after: Optional[int] = None,
    *,
    verdict_only: bool = False,
) -> int:
    """The loop's steps the plan takes at the most (:func:`longest_run` and the epochs' ends), up to a known horizon."""
    steps = sum(n for a, n in longest_run(schedule, queue_depth, decided_after) if not (verdict_only and isinstance(a, RunExtra)))
    if not steps:
        return 0
    steps += 1
    # At each epoch's end after the first: its cut period, the next one's first, a new queue, and the part of a round
    # a window's stretch before the end leaves out (it counts whole rounds).
    per = 2 + queue_depth + schedule.cycle - 1
    steps += max(0, _epoch_ends(steps, epoch_length, per) - per)
    if schedule.horizon is not None:
        steps = min(steps, schedule.horizon)
    return steps


def min_epoch_steps(cycle: int = 1) -> int:
    """The fewest steps an epoch must run for a window to measure a round in it: its first and last periods are left
    out, or a FULL stretch's lead-in in a new pass (a round and one batch)."""
    return 3 if cycle <= 1 else 2 * cycle + 2


def rounds_fit(epoch_length: Optional[int], cycle: int) -> bool:
    """Whether the loop's epochs hold a FULL stretch of whole rounds: else trials count period by period."""
    return epoch_length is None or cycle <= 1 or epoch_length >= min_epoch_steps(cycle)


def epochs_for(steps: int, epoch_length: Optional[int], start_at: int = 0) -> Optional[int]:
    """Epochs the loop runs to take ``steps`` steps from step ``start_at`` (None: the loader has no length)."""
    if epoch_length is None or epoch_length <= 0:
        return None
    return max(1, math.ceil((steps + start_at) / epoch_length))


def nbatches_to_fit(
    schedule: Schedule, steps: int, queue_depth: int = 0, epoch_length: Optional[int] = None, least: int = MIN_WINDOW
) -> Optional[int]:
    """The longest windows, from ``least`` up, with which the plan takes at most ``steps`` (None: none fits)."""
    top = min((p.nbatches for p in schedule.window_plans), default=0) - 1

    def fits(n: int) -> bool:
        return steps_of(schedule.with_nbatches(n), queue_depth, epoch_length) <= steps

    if top < least or not fits(least):
        return None
    return _largest(least, top, fits)


def _largest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """Binary search: the largest ``n`` in [``low``, ``high``] that ``fits`` (monotone, true at ``low``)."""
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low
