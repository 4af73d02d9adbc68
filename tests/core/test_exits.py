"""The exit-status rule of ``benchy run`` (pure)."""

from __future__ import annotations

from benchy.core.exits import run_status


def test_benchy_run_reports_the_scripts_status_but_an_incomplete_run_that_ended_0() -> None:
    assert run_status(0, [0]) == 0
    assert run_status(0, [4]) == 4 and run_status(0, [0, 4]) == 4  # a rank that did not finish
    assert run_status(0, [3, 0]) == 3  # a mode without a counted trial
    assert run_status(0, []) == 4  # nothing was benchmarked
    assert run_status(3, [4]) == 3 and run_status(1, []) == 1  # the script's own failure stands
    assert run_status(-15, [4]) == -15  # ended by a signal: passed on as it is
