"""NVTX for real: a recorder attached through NVTX_INJECTION64_PATH logs every push and pop.

The recorder (tests/nvtx/recorder.c) is built by the ``nvtx_recorder`` fixture; these tests
check the exact range tree of small runs, including the cut-short cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pytest
from helpers import small_config

from benchy.measure.profiling import nvtx_ranges

Event = Tuple[str, str, str]  # ("PUSH", message, payload) or ("POP", "", "")


def read_events(path: Path) -> List[Event]:
    events: List[Event] = []
    for line in path.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "PUSH":
            domain, message, payload = rest.split("\t")
            assert domain == "benchy", line
            events.append(("PUSH", message, payload))
        else:
            assert line == "POP benchy", line
            events.append(("POP", "", ""))
    return events


def assert_balanced(events: List[Event]) -> None:
    depth = 0
    for kind, _, _ in events:
        depth += 1 if kind == "PUSH" else -1
        assert depth >= 0, "a POP without a PUSH"
        assert depth <= 3, "ranges nest at most trial > step|fetch"
    assert depth == 0, f"{depth} range(s) left open"


def fetch(k: int) -> List[Event]:
    return [("PUSH", "fetch", str(k)), ("POP", "", "")]


def step(k: int) -> List[Event]:
    return [("PUSH", "step", str(k)), ("POP", "", "")]


def io_trial(label: str, n: int) -> List[Event]:
    body = [e for k in range(n + 1) for e in fetch(k)]
    return [("PUSH", label, "")] + body + [("POP", "", "")]


def synthetic(label: str, first: int, count: int) -> List[Event]:
    """A SYNTHETIC window's stretch: its steps (the window's hand-out index as the payload), no fetch."""
    return [("PUSH", label, "")] + [e for k in range(first, first + count) for e in step(k)] + [("POP", "", "")]


def full(label: str, first: int, count: int, held: bool = True) -> List[Event]:
    """A FULL window's stretch: on a batch already held (no fetch before its first step), or (``held``
    false: after a SYNTHETIC window, whose cached steps the pass was repaid for) fetching its first."""
    body = [e for k in range(first, first + count) for e in step(k) + fetch(k + 1)]
    return [("PUSH", label, "")] + ([] if held else fetch(first)) + body + [("POP", "", "")]


N = 3
CONFIG = small_config(nbatches=N, ntrials=1, nwarmup=1)
# One epoch of 100 batches holds the whole schedule: SYNTHETIC_WARMUP_1 from the epoch's step 0 (4 hand-outs: its
# first period is left out), FULL_WARMUP_1 (3; before it, untimed and outside any range, the pass gives up the 4
# batches the cached steps took the places of, the epoch's first among them, so the window fetches its first
# batch), FULL_1 (3, on the batch FULL_WARMUP_1's last period fetched), SYNTHETIC_1 (3); then the extras: the
# FLOPs' 2 untimed steps, outside any range, and PARTS_1.
BEFORE_FULL_1 = (
    io_trial("IO_WARMUP_1", N)
    + io_trial("IO_1", N)
    + synthetic("SYNTHETIC_WARMUP_1", 0, N + 1)
    + full("FULL_WARMUP_1", 0, N, held=False)
)
EXPECTED = BEFORE_FULL_1 + full("FULL_1", 0, N) + synthetic("SYNTHETIC_1", 0, N)
FULL_1_STEP = (N + 1) + N  # the epoch's step of FULL_1's first batch


@pytest.fixture
def run_recorded(run_script, nvtx_recorder: Path, tmp_path: Path):
    def run(*args: str, config=CONFIG):
        record = tmp_path / "ranges.txt"
        env = {"NVTX_INJECTION64_PATH": str(nvtx_recorder), "NVTX_RECORD_FILE": str(record)}
        result = run_script(config, "--samples", "400", "--batch_size", "4", *args, env=env)
        return result, read_events(record)

    return run


def test_exact_range_tree_of_a_full_run(run_recorded) -> None:
    run, events = run_recorded()
    assert run.returncode == 0, run
    assert "NVTX: a tool is attached" in run.stdout
    # Then the side windows PARTS_1 and CONTENTION_1 (5 steps each: half a trial, at least 5; the loader has no
    # workers, so beside CONTENTION_1's steps a copy of it with two runs in a process of its own); the stage trials
    # and the emulated-step trials push no range.
    assert events == EXPECTED + synthetic("PARTS_1", 0, 5) + synthetic("CONTENTION_1", 0, 5)
    assert_balanced(events)
    assert run.result()["profiler"]["nvtx_tool_attached"] is True


def test_exception_in_the_step_closes_the_step_and_trial(run_recorded) -> None:
    run, events = run_recorded("--raise_at", f"0:{FULL_1_STEP + 1}")  # FULL_1's second step raises
    assert run.returncode == 1 and "RuntimeError: boom" in run.stderr
    tail = [("PUSH", "FULL_1", "")] + step(0) + fetch(1) + [("PUSH", "step", "1"), ("POP", "", ""), ("POP", "", "")]
    assert events == BEFORE_FULL_1 + tail
    assert_balanced(events)


def test_loop_breaking_out_closes_the_step_and_trial_and_the_window_goes_on(run_recorded) -> None:
    run, events = run_recorded(f"--break_at=0:{FULL_1_STEP + 2}", "--epochs", "2")
    assert run.returncode == 0, run
    # The loop received FULL_1's third batch and broke out: that period is left out, and FULL_1 takes
    # two more steps in the next epoch (from its step 0, whose first period is left out too).
    tail = (
        [("PUSH", "FULL_1", "")]
        + step(0)
        + fetch(1)
        + step(1)
        + fetch(2)
        + [("PUSH", "step", "2"), ("POP", "", ""), ("POP", "", "")]
    )
    assert events[: len(BEFORE_FULL_1) + len(tail)] == BEFORE_FULL_1 + tail
    rest = events[len(BEFORE_FULL_1) + len(tail) :]
    # The new epoch's first batch was fetched when it began (untimed, outside any range): step 3 holds it.
    assert rest[0] == ("PUSH", "FULL_1", "") and rest[1] == ("PUSH", "step", "3")
    assert_balanced(events)
    assert run.result()["complete"] is True


def test_loader_raising_closes_the_fetch_and_trial(run_recorded) -> None:
    # Batches read before FULL_WARMUP_1's fetch 2: benchy's own pass 1 + IO_WARMUP_1's 3 + IO_1's 3 (each
    # opens on the batch the one before kept); the loop's epoch N + 1 (its first, fetched when it began, and
    # N more: the places of SYNTHETIC_WARMUP_1's N + 1 cached steps, given up before FULL_WARMUP_1), then
    # FULL_WARMUP_1's fetches 0 and 1. The loader fails on the first sample after those.
    # The stage trials read the same dataset (through a copy of the loader): off, so the count holds.
    failing_sample = 4 * (1 + 2 * N + (N + 1) + 2) + 1
    run, events = run_recorded(
        "--loader_raise_after", str(failing_sample), config=small_config(nbatches=N, ntrials=1, nwarmup=1, stages=False)
    )
    assert run.returncode == 1 and "OSError: cannot read sample" in run.stderr
    tail = (
        [("PUSH", "FULL_WARMUP_1", "")]
        + fetch(0)
        + step(0)
        + fetch(1)
        + step(1)
        + [("PUSH", "fetch", "2"), ("POP", "", ""), ("POP", "", "")]
    )
    prefix = io_trial("IO_WARMUP_1", N) + io_trial("IO_1", N) + synthetic("SYNTHETIC_WARMUP_1", 0, N + 1)
    assert events == prefix + tail
    assert_balanced(events)
    assert "trial FULL_WARMUP_1 did not count (1 of 3 steps measured): the data loader raised OSError" in run.stdout


def test_no_tool_attached_means_no_annotated_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    assert nvtx_ranges(True) is None
    assert nvtx_ranges(False) is None


def test_nvtx_off_by_config_even_with_a_tool(run_script, nvtx_recorder: Path, tmp_path: Path) -> None:
    record = tmp_path / "ranges.txt"
    env = {"NVTX_INJECTION64_PATH": str(nvtx_recorder), "NVTX_RECORD_FILE": str(record)}
    run = run_script(small_config(nbatches=N, ntrials=1, nvtx=False), env=env)
    assert run.returncode == 0, run
    assert not record.exists() or read_events(record) == []
