"""What a run's figures still need (pure): the trials that would likely bring an interval within the figure precision,
and the steps of the loop they take, as the plan's next windows."""

from __future__ import annotations

import dataclasses
from typing import List

import pytest

from benchy import Mode, Schedule, load_config
from benchy.core import machine as m
from benchy.core.progress import imprecise, trials_to_settle
from benchy.core.results import RunResults, TrialResult
from benchy.core.schedule import TrialSpec


def trials(mode: Mode, rates: List[float]) -> List[TrialResult]:
    return [TrialResult(TrialSpec(mode, k + 1, False, 10), int(r), 1.0) for k, r in enumerate(rates)]


def test_trials_to_settle_follows_the_t_quantile() -> None:
    assert trials_to_settle([1000, 1001, 999]) == 0  # +/-0.25 %: within 5 % now
    # Two trials 4 % apart: sd 2.8 % of the mean; a third gives t(2) = 4.30 x 2.8 % / 1.73 = 7.0 %, a fourth 4.5 %.
    assert trials_to_settle([1000, 1040]) == 2
    assert trials_to_settle([1000, 1040], precision=0.10) == 1
    assert trials_to_settle([1000, 2000], most=8) is None  # a spread too wide for the schedule's bound
    assert trials_to_settle([1000]) is None  # no spread to go on


def test_each_imprecise_figure_gets_the_steps_its_next_windows_take() -> None:
    schedule = Schedule.from_config(load_config(environ={})).with_cycle(8)
    results = RunResults(
        trials=tuple(trials(Mode.IO, [1000, 1001]) + trials(Mode.SYNTHETIC, [3000, 3003]) + trials(Mode.FULL, [1000, 1040]))
    )
    state = m.State(schedule)
    state, _ = m.transition(state, m.Begin(queue_depth=16))
    found = {i.mode: i for i in imprecise(schedule, state, results, 16)}
    assert set(found) == {"FULL"}  # IO and SYNTHETIC are within 5 %
    full = found["FULL"]
    assert full.trials == 2 and full.share == pytest.approx(6.35 * 40 / 1020, rel=0.01) and not full.capped
    # Two more FULL windows (whole rounds of 8: 24 and 32 batches) with their lead-ins (16 + 8 + 1 each); SYNTHETIC,
    # settled, runs none beside them.
    assert full.more_steps == 24 + 32 + 2 * 25
    # A mode at the schedule's bound: no number of further steps, said as capped.
    capped = Schedule.from_config(load_config(overrides={"global": {"auto_max_trials": 2}}, environ={}))
    state = m.transition(m.State(capped), m.Begin())[0]
    for spec in (TrialSpec(Mode.FULL, k, False, 8) for k in (1, 2)):
        state = dataclasses.replace(state, trials={**state.trials, Mode.FULL: spec.index})
    (only,) = imprecise(capped, state, results, 0)
    assert only.mode == "FULL" and only.capped and only.more_steps is None
