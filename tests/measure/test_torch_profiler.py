"""``profiler: torch``'s ranges, driven the way the hot loops drive them: the profiler starts at
the first profiled step and stops after the last, a short trial is profiled to its end, a profiler that
cannot start leaves the loop running, and an earlier run's files are cleared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import torch

from benchy.core.schedule import Mode, TrialSpec
from benchy.measure.profiling import TRACE_FILE, TorchProfiler, TorchRanges, profiled_steps
from benchy.results.files import remove_matching


def full_loop(ranges: Any, spec: TrialSpec, work: Any = None) -> None:
    """The FULL window's pushes and pops (measure.trial.epoch_loop), with ``work`` as the step."""
    ranges.push(ranges.trial(spec))
    ranges.fetch.payload = 0
    ranges.push(ranges.fetch)
    ranges.pop()
    for k in range(spec.nbatches):
        ranges.step.payload = k
        ranges.push(ranges.step)
        if work is not None:
            work()
        ranges.pop()
        ranges.fetch.payload = k + 1
        ranges.push(ranges.fetch)
        ranges.pop()
    ranges.pop()


def test_the_profiled_steps_are_whole_steps_after_the_first_two() -> None:
    assert profiled_steps(50, 5) == (2, 5)
    assert profiled_steps(6, 5) == (1, 5)  # one step short of the usual start: starts earlier
    assert profiled_steps(3, 5) == (0, 3)  # a short trial: all of it
    assert profiled_steps(1, 5) == (0, 1)


def test_start_and_stop_come_at_the_profiled_steps_edges() -> None:
    calls: List[str] = []
    spec = TrialSpec(Mode.FULL, 2, True, 10, profiled=True)
    ranges = TorchRanges(
        spec, lambda: calls.append(f"start {ranges.step.payload}"), lambda: calls.append(f"stop {ranges.step.payload}"), 5
    )
    full_loop(ranges, spec)
    assert calls == ["start 2", "stop 7"] and ranges.state == "done"
    calls.clear()
    short = TrialSpec(Mode.FULL, 2, True, 3, profiled=True)
    ranges = TorchRanges(short, lambda: calls.append("start"), lambda: calls.append("stop"), 5)
    full_loop(ranges, short)
    assert calls == ["start", "stop"]  # stopped when the trial's range closed


def synthetic_stretch(ranges: Any, spec: TrialSpec, first: int, count: int) -> None:
    """One stretch of a SYNTHETIC window (measure.trial.epoch_loop): its steps, no fetch."""
    ranges.push(ranges.trial(spec))
    for k in range(first, first + count):
        ranges.step.payload = k
        ranges.push(ranges.step)
        ranges.pop()
    ranges.pop()


def named(events: List[Any]) -> List[str]:
    return [e["name"] for e in sorted(events, key=lambda e: e["ts"]) if e.get("ph") == "X" and e["name"].startswith("benchy")]


def test_a_profile_its_epoch_end_would_cut_starts_in_the_next_stretch(tmp_path: Path) -> None:
    # SYNTHETIC_WARMUP_2 spans epochs: its first stretch holds steps 0 to 3 (the loop's epoch ends there), its
    # second steps 4 on. Steps 2 to 6 do not fit in the first: the profile starts with the second and holds the 5
    # steps asked, 4 to 8.
    profiler = TorchProfiler("single", 0, str(tmp_path), 5)
    spec = TrialSpec(Mode.SYNTHETIC, 2, True, 10, profiled=True)
    ranges = profiler.ranges(spec, None)
    assert isinstance(ranges, TorchRanges)
    ranges.stretch(0, 4)
    synthetic_stretch(ranges, spec, 0, 4)
    ranges.stretch(4, 7)
    synthetic_stretch(ranges, spec, 4, 7)
    profiler.close()
    path = tmp_path / "rank0.SYNTHETIC_WARMUP_2.pt.trace.json"
    assert profiler.events == [f"SYNTHETIC_WARMUP_2 profiled (CPU; steps 4 to 8): {path}"]
    assert named(json.loads(path.read_text())["traceEvents"]) == [
        "benchy: SYNTHETIC_WARMUP_2 (steps 4 to 8 profiled)",
        *[f"benchy: step {k}" for k in range(4, 9)],
    ]


def test_a_profile_no_stretch_holds_says_why_it_is_short(tmp_path: Path) -> None:
    # Epochs of 4 steps: no stretch of the 8-step window holds the 5 steps asked. The profile holds what the first
    # stretch does, and the range and the event say why it is short.
    profiler = TorchProfiler("single", 0, str(tmp_path), 5)
    spec = TrialSpec(Mode.SYNTHETIC, 2, True, 8, profiled=True)
    ranges = profiler.ranges(spec, None)
    assert isinstance(ranges, TorchRanges)
    for first in (0, 4):
        ranges.stretch(first, 4)
        synthetic_stretch(ranges, spec, first, first + 4)
    profiler.close()
    path = tmp_path / "rank0.SYNTHETIC_WARMUP_2.pt.trace.json"
    why = "the loop's epoch ended after step 3"
    assert profiler.events == [f"SYNTHETIC_WARMUP_2 profiled (CPU; steps 2 to 3, 2 of the 5 asked: {why}): {path}"]
    assert named(json.loads(path.read_text())["traceEvents"]) == [
        f"benchy: SYNTHETIC_WARMUP_2 (steps 2 to 3 profiled of 5 asked: {why})",
        "benchy: step 2",
        "benchy: step 3",
    ]


def test_a_loop_that_leaves_the_window_early_is_named_in_the_trace(tmp_path: Path) -> None:
    # The loop breaks out after step 3 where the stretch was to run on (its epoch's end unknown ahead): the
    # range named steps 2 to 6, and a marker inside it says which were not profiled.
    profiler = TorchProfiler("single", 0, str(tmp_path), 5)
    spec = TrialSpec(Mode.SYNTHETIC, 2, True, 10, profiled=True)
    ranges = profiler.ranges(spec, None)
    assert isinstance(ranges, TorchRanges)
    ranges.stretch(0, 11)
    synthetic_stretch(ranges, spec, 0, 4)  # the loop left after step 3: the trial's range closes there
    profiler.close()
    path = tmp_path / "rank0.SYNTHETIC_WARMUP_2.pt.trace.json"
    why = "2 of the 5 asked: the loop left the window after step 3"
    assert profiler.events == [f"SYNTHETIC_WARMUP_2 profiled (CPU; steps 2 to 3, {why}): {path}"]
    assert named(json.loads(path.read_text())["traceEvents"]) == [
        "benchy: SYNTHETIC_WARMUP_2 (steps 2 to 6 profiled)",
        "benchy: step 2",
        "benchy: step 3",
        "benchy: the loop left SYNTHETIC_WARMUP_2 after step 3: steps 4 to 6 not profiled",
    ]


def test_a_profiler_that_cannot_start_leaves_the_training_alone() -> None:
    spec = TrialSpec(Mode.FULL, 2, True, 8, profiled=True)

    def refuse() -> None:
        raise RuntimeError("Profiler is already enabled on this thread")

    stopped: List[int] = []
    ranges = TorchRanges(spec, refuse, lambda: stopped.append(1), 5)
    full_loop(ranges, spec)  # no exception reaches the loop
    assert ranges.state == "done" and not stopped
    assert ranges.failed == "torch.profiler could not start (RuntimeError: Profiler is already enabled on this thread)"


def test_a_real_capture_holds_the_steps_work_inside_benchy_ranges(tmp_path: Path) -> None:
    profiler = TorchProfiler("single", 0, str(tmp_path), 3)
    spec = TrialSpec(Mode.FULL, 2, True, 8, profiled=True)
    assert profiler.ranges(TrialSpec(Mode.FULL, 1, True, 8), None) is None  # not the profiled warm-up
    ranges = profiler.ranges(spec, None)
    a = torch.randn(16, 16)
    full_loop(ranges, spec, lambda: a @ a)
    profiler.close()
    path = tmp_path / "rank0.FULL_WARMUP_2.pt.trace.json"
    assert profiler.files == [str(path)] and profiler.events == [f"FULL_WARMUP_2 profiled (CPU; steps 2 to 4): {path}"]
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    names = [e["name"] for e in sorted(events, key=lambda e: e["ts"]) if e["name"].startswith("benchy")]
    assert names == [
        "benchy: FULL_WARMUP_2 (steps 2 to 4 profiled)",
        "benchy: step 2",
        "benchy: fetch 3",
        "benchy: step 3",
        "benchy: fetch 4",
        "benchy: step 4",
        "benchy: fetch 5",
    ]
    steps = [e for e in events if e["name"].startswith("benchy: step")]
    mms = [e for e in events if e["name"] in ("aten::mm", "aten::matmul")]
    assert mms and all(any(s["ts"] <= m["ts"] and m["ts"] + m["dur"] <= s["ts"] + s["dur"] for s in steps) for m in mms)
    # Another rank does not profile under profiler_mode single; "all" makes every rank profile.
    assert TorchProfiler("single", 1, str(tmp_path), 3).ranges(spec, None) is None
    assert TorchProfiler("all", 1, str(tmp_path), 3).ranges(spec, None) is not None


def test_an_earlier_runs_trace_files_are_cleared_and_nothing_else(tmp_path: Path) -> None:
    for name in (
        "rank0.FULL_WARMUP_2.pt.trace.json",
        "rank7.IO_WARMUP_3.pt.trace.json",
        "notes.json",
        "rank0.FULL_1.pt.trace.json",
    ):
        (tmp_path / name).write_text("{}")
    removed = remove_matching(str(tmp_path), TRACE_FILE)
    assert sorted(removed) == ["rank0.FULL_WARMUP_2.pt.trace.json", "rank7.IO_WARMUP_3.pt.trace.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.json", "rank0.FULL_1.pt.trace.json"]
    assert remove_matching(str(tmp_path / "missing"), TRACE_FILE) == []
