"""The watch over the rest of the run, through the public surface: a loop whose training goes on after the schedule."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "watch_loop.py"
# A schedule that ends within the loop's first four epochs of 60 batches, the training going on after it; FULL's 4
# trials give its data wait an interval the watch can hold the epochs against (2 trials' would span 50 points).
CONFIG = {
    "global": {"exit_after_tests": False, "whatif": False},
    **{m: {"nbatches": 16, "ntrials": 4, "nwarmup": 1} for m in ("IO", "synthetic", "full")},
}


def own_shares(stdout: str) -> Dict[int, float]:
    return {int(k): float(v) for k, v in re.findall(r"^EPOCH ([0-9]+) ([0-9.]+)$", stdout, re.M)}


@pytest.mark.timing
def test_a_loader_that_slows_down_is_named_at_the_epoch_it_did(run_script) -> None:
    # 10 ms of loading and 20 ms of step a batch: a third of the time waiting; from epoch 6 the loading doubles, half
    # of it. The watch counts as the script does (its time in next() after each epoch's first batch): within 3
    # points of the script's own share. A timing test: on a busy machine both sleeps oversleep alike, the shares move
    # by a point or two; the rise (17 points) is over three times the least one the watch reports (5).
    run = run_script(CONFIG, "--slow_from", "6", "--batches", "60", "--epochs", "9", script=SCRIPT, timeout=400)
    assert run.returncode == 0, run
    rises = [line for line in run.stdout.splitlines() if line.startswith("BENCHY::WATCH::")]
    assert len(rises) == 1 and rises[0].startswith("BENCHY::WATCH::epoch 6: the loop waited for data "), rises
    doc = run.result()
    watch = doc["watch"]
    assert watch["first_rise"] == 6 and watch["rises"] == 4, watch
    epochs = {e["epoch"]: e for e in watch["epochs"]}
    truth = own_shares(run.stdout)
    assert set(epochs) <= set(truth) and {5, 6, 7, 8, 9} <= set(epochs)
    for k, e in epochs.items():
        assert abs(e["data_wait"] - truth[k]) <= 0.03, (k, e, truth[k])
        assert e["rise"] is (k >= 6)
    assert abs(epochs[6]["data_wait"] - 0.5) <= 0.05  # 20 ms of 40: the sleeps' own share
    summary = [line for line in run.stdout.splitlines() if line.startswith("BENCHY::SUMMARY::WATCH ")]
    assert len(summary) == 1 and "from epoch 6" in summary[0], summary
    assert summary[0] in doc["summary"]


@pytest.mark.timing
def test_a_steady_loop_raises_nothing(run_script) -> None:
    # A timing test: another process taking the cores part-way slows the loader for real, which the watch is there to
    # tell; on a quiet machine the epochs' shares stay within a point or two of FULL's (5 points would be a rise).
    run = run_script(CONFIG, "--epochs", "10", "--batches", "60", script=SCRIPT, timeout=400)
    assert run.returncode == 0, run
    assert not [line for line in run.stdout.splitlines() if line.startswith("BENCHY::WATCH::")]
    watch = run.result()["watch"]
    assert watch["rises"] == 0 and watch["first_rise"] is None and watch["watched"] >= 5, watch
    assert "no rise past" in run.stdout


def test_a_loop_that_stops_at_its_length_is_watched(run_script) -> None:
    # A loop that takes len(loader) batches and never asks past the last, as Lightning's fit loop does: each later
    # epoch is watched all the same (up to the ask for its last batch), numbered as the loop's.
    run = run_script(CONFIG, "--stop_at_len", "--epochs", "8", "--batches", "60", script=SCRIPT, timeout=400)
    assert run.returncode == 0, run
    watch = run.result()["watch"]
    assert watch is not None and watch["watched"] >= 4, watch
    epochs = [e["epoch"] for e in watch["epochs"]]
    assert epochs == list(range(9 - len(epochs), 9)) and all(e["steps"] == 58 for e in watch["epochs"]), watch
    assert set(epochs) <= set(own_shares(run.stdout))
