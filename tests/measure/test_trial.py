"""The hot loops against a fake clock: the IO trial, and the epoch loop with its windows' segments.

Each test here runs with NVTX ranges attached and without (a recording stand-in for benchy's ranges),
with a scripted machine standing in for the session: it hands out the segments it was given and
settles each window stretch as the session does.
"""

from __future__ import annotations

import dataclasses
import gc
from typing import Any, Iterator, List, Optional, Tuple

import pytest
from helpers import FakeClock, workers_loader

from benchy import EmptyLoaderError, Mode, TrialSpec
from benchy.core.results import WindowSpan
from benchy.measure.counting import make_counter
from benchy.measure.source import BatchSource
from benchy.measure.trial import (
    CACHED,
    END,
    FULL,
    PLAIN,
    SYNTHETIC,
    EpochArgs,
    EpochState,
    IOArgs,
    Segment,
    epoch_loop,
    io_trial,
)
from benchy.measure.window import WindowArgs, WindowRun

VARIANTS = ["nvtx-off", "nvtx-on"]


class Attr:
    def __init__(self, message: str) -> None:
        self.message, self.payload = message, 0


class RecordingRanges:
    """Stands in for benchy's NVTX ``Ranges``: records pushes and pops, tracks the depth."""

    def __init__(self) -> None:
        self.events: List[Tuple[str, str, int]] = []
        self.depth = 0
        self.step, self.fetch = Attr("step"), Attr("fetch")

    def push(self, attr: Attr) -> None:
        self.events.append(("PUSH", attr.message, attr.payload))
        self.depth += 1

    def pop(self) -> None:
        self.events.append(("POP", "", 0))
        self.depth -= 1

    def trial(self, spec: TrialSpec) -> Attr:
        return Attr(spec.label)


def loader(t: FakeClock, batches: int, batch_size: int, fetch: float, last: int = 0):
    """A re-iterable loader: each batch costs ``fetch`` seconds; optional short last batch."""

    class L:
        passes = 0
        fetched = 0

        def __iter__(self) -> Iterator[List[int]]:
            L.passes += 1
            for k in range(batches):
                t.now += fetch
                L.fetched += 1
                yield [0] * (last if (last and k == batches - 1) else batch_size)

    return L()


def noop() -> None:
    return None


class Script:
    """A machine that hands out ``plan`` in order: ``("PLAIN", n)``, ``("CACHED", n)``, or a window
    stretch ``("SYNTHETIC" | "FULL", n, window)``; then END. It settles each window stretch at the next
    boundary, as the session does, and records closes and failures."""

    def __init__(self, plan: List[Tuple[Any, ...]], cached: Any = None) -> None:
        self.plan = list(plan)
        self.cached = cached
        self.closed_at: List[Tuple[int, int]] = []  # (epoch's hand-outs, the running plain segment's)
        self.failures: List[str] = []
        self.finished: List[WindowRun] = []

    def _settle(self, ep: EpochState) -> None:
        w = ep.window
        if w is not None:
            ep.window = None
            ep.handed += 0  # the loop counts a finished stretch itself
            if w.close_segment():
                self.finished.append(w)

    def segment(self, ep: EpochState) -> Segment:
        self._settle(ep)
        if not self.plan or ep.exhausted:
            return Segment(END)
        step = self.plan.pop(0)
        kind = step[0]
        if kind == "PLAIN":
            return Segment(PLAIN, step[1])
        if kind == "CACHED":
            return Segment(CACHED, step[1], batch=self.cached)
        w: WindowRun = step[2]
        quota = w.quota(ep.handed)
        steps = min(step[1], quota)
        resume = w.started
        w.started = True
        w.open_segment(1, ep.handed, steps)
        ep.window = w
        return Segment(
            SYNTHETIC if kind == "SYNTHETIC" else FULL,
            steps,
            w,
            self.cached if kind == "SYNTHETIC" else None,
            finishes=steps == quota,
            resume=resume,
        )

    def closed(self, ep: EpochState, seg: Optional[Segment], count: int) -> None:
        w = ep.window
        if w is not None:
            ep.window = None
            w.close_segment()
        self.closed_at.append((ep.handed, count))

    def failed(self, ep: EpochState, seg: Segment, error: BaseException) -> None:
        self.failures.append(f"{type(error).__name__}: {error}")


class Loops:
    """Runs the loops with NVTX ranges attached (``nvtx-on``) or not."""

    def __init__(self, variant: str, t: FakeClock) -> None:
        self.variant, self.t = variant, t
        self.ranges = RecordingRanges()
        self.calls = 0  # counter calls

    @property
    def nvtx(self) -> Optional[RecordingRanges]:
        return self.ranges if self.variant == "nvtx-on" else None

    def counter(self) -> Any:
        """The fake batches' counter, its calls counted."""
        general = make_counter([0])

        def count(batch: Any) -> int:
            self.calls += 1
            return general(batch)

        return count

    def window(
        self,
        mode: Mode,
        n: int,
        *,
        constant: Optional[int] = None,
        report: Any = None,
        freq: int = 0,
        index: int = 1,
        cycle: int = 1,
    ) -> WindowRun:
        spec = TrialSpec(mode, index, False, n, cycle=cycle)
        args = WindowArgs(spec, self.counter(), constant, self.t.clock, noop, noop, report, freq, self.nvtx)
        return WindowRun(args)

    def epoch(self, data: Any, script: Script, limit: int = -1) -> Iterator[Any]:
        ep = EpochState(iter(data), limit, self.t.now)
        return epoch_loop(EpochArgs(ep, script, self.t.clock))

    def io(self, spec: TrialSpec, src: BatchSource, constant: Optional[int] = None, report: Any = None, freq: int = 0) -> Any:
        return io_trial(IOArgs(spec, src, self.counter(), self.t.clock, noop, report, freq, constant=constant, ranges=self.nvtx))

    def balanced(self) -> bool:
        return self.ranges.depth == 0


def drive(gen: Iterator[Any], t: FakeClock, step: float) -> int:
    count = 0
    for _ in gen:
        t.now += step
        count += 1
    return count


@pytest.fixture(params=VARIANTS)
def variant(request) -> str:
    return request.param


@pytest.fixture(params=["chunk-4096", "chunk-3"], autouse=True)
def chunk(request, monkeypatch) -> None:
    """Every test also with chunks of 3: the loops move their lists into arrays every 3 values,
    so windows cross chunk boundaries, end on one, and are left inside one."""
    if request.param == "chunk-3":
        monkeypatch.setattr("benchy.measure.stamps.CHUNK", 3)


def test_io_window_counts_n_fetches_exactly(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    r = loops.io(TrialSpec(Mode.IO, 1, False, 10), src)
    assert r.samples == 80 and r.seconds == pytest.approx(0.1)
    assert r.throughput == pytest.approx(800.0)
    assert r.step_seconds == pytest.approx((0.01,) * 10)
    assert loops.balanced()


def test_io_starts_new_passes_of_a_short_loader_and_counts_partial_batches(variant: str) -> None:
    t = FakeClock()
    data = loader(t, 3, 8, fetch=0.01, last=5)  # a pass: 8, 8, 5 samples
    r = Loops(variant, t).io(TrialSpec(Mode.IO, 1, False, 7), BatchSource(lambda: iter(data)))
    # Received: 8, 5 | 8, 8, 5 | 8, 8: each new pass's first batch comes in a period that holds the pass's start-up,
    # left out (the loader's start-up is measured on its own).
    assert list(r.step_samples) == [8, 5, 8, 5, 8] and type(data).passes == 3


def test_empty_loader_is_a_clear_error() -> None:
    src = BatchSource(lambda: iter([]))
    with pytest.raises(EmptyLoaderError, match="yielded no batch on a fresh pass"):
        src.fetch()


def test_full_window_holds_n_steps_and_n_fetches_and_its_next_batch_is_the_epoch_s_next(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    data = loader(t, 100, 8, fetch=0.03)
    w = loops.window(Mode.FULL, 20)
    script = Script([("PLAIN", 1), ("FULL", 20, w), ("PLAIN", 3)])  # the window begins at the epoch's step 1
    gen = loops.epoch(data, script)
    seen = []
    for b in gen:
        seen.append(b)
        t.now += 0.02
    assert len(seen) == 24 and script.finished == [w] and w.done
    r = w.result()
    assert r.samples == 160 and r.seconds == pytest.approx(20 * 0.05)
    assert r.throughput == pytest.approx(8 / 0.05)  # no 1/n bias from a missing fetch
    # The batch fetched to close the window is handed out next: 24 hand-outs, 24 fetches.
    assert type(data).fetched == 24 and loops.balanced()


def test_synthetic_hands_out_one_cached_object_and_asks_the_loader_for_nothing(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    data = loader(t, 100, 4, fetch=1.0)
    cached = [0] * 4
    w = loops.window(Mode.SYNTHETIC, 5, constant=4)
    script = Script([("PLAIN", 1), ("SYNTHETIC", 5, w)], cached=cached)
    seen = []
    for b in loops.epoch(data, script):
        seen.append(b)
        t.now += 0.5
    assert len(seen) == 6 and all(b is cached for b in seen[1:]) and type(data).fetched == 1
    r = w.result()
    assert r.samples == 20 and r.seconds == pytest.approx(2.5) and r.throughput == pytest.approx(8.0)
    assert loops.balanced()


def test_a_window_spans_epochs_leaving_out_the_period_that_crosses_each_end(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    data = loader(t, 4, 8, fetch=0.03)  # epochs of 4 batches
    w = loops.window(Mode.FULL, 7)
    handed = []
    for _ in range(4):
        script = Script([("FULL", 99, w)])
        n = 0
        for _ in loops.epoch(data, script):
            t.now += 0.02
            n += 1
        t.now += 10.0  # the loop's own work between epochs: in no period
        handed.append(n)
        if w.done:
            break
    # Each epoch's first period (it may hold no step) and last (it ends with the pass, in the next
    # epoch) are left out: 2 + 2 + 2 measured, and the fourth epoch's second finishes the window.
    assert handed == [4, 4, 4, 2] and w.done
    r = w.result()
    assert len(r.step_seconds) == 7 and r.samples == 56
    assert r.step_seconds == pytest.approx((0.05,) * 7) and r.seconds == pytest.approx(7 * 0.05)
    assert [tuple(p) for p in w.placed] == [(1, 0, 4), (1, 0, 4), (1, 0, 4), (1, 0, 2)]
    assert w.span() == WindowSpan(start_epoch=1, start_step=0, end_epoch=1, end_step=1, segments=4, left_out=7)
    assert sorted(w.left_out) == [0, 3, 4, 7, 8, 11, 12] and loops.balanced()


def test_a_loop_that_breaks_is_heard_and_the_window_leaves_that_period_out(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    data = loader(t, 100, 8, fetch=0.01)
    w = loops.window(Mode.FULL, 10)
    script = Script([("PLAIN", 1), ("FULL", 10, w)])
    gen = loops.epoch(data, script)
    for k, _ in enumerate(gen):
        t.now += 0.02
        if k == 4:
            break
    gen.close()
    assert script.closed_at and not w.done and w.handed == 4 and w.measured == 3 and w.left_out == [3]
    assert loops.balanced()


def test_a_dropped_epoch_is_heard_too(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    script = Script([("PLAIN", 10)])
    gen = loops.epoch(loader(t, 100, 8, fetch=0.0), script)
    next(gen)
    next(gen)
    del gen
    gc.collect()
    assert script.closed_at == [(2, 2)]


def test_report_time_is_taken_out_of_the_window(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    calls = []

    def report(w: WindowRun, i: int) -> None:
        calls.append(i)
        t.now += 5.0  # a very slow print
        w.pauses.append((i, t.clock() - w.stamps.get(i)))

    w = loops.window(Mode.FULL, 10, report=report, freq=3)
    drive(loops.epoch(loader(t, 100, 8, fetch=0.0), Script([("PLAIN", 1), ("FULL", 10, w)])), t, step=0.1)
    assert calls == [3, 6, 9]
    r = w.result()
    assert r.seconds == pytest.approx(1.0) and sum(r.step_seconds) == pytest.approx(1.0)


def test_loader_error_inside_a_window_propagates_and_is_heard(variant: str) -> None:
    def bad():
        yield [0] * 4
        raise OSError("disk gone")

    t = FakeClock()
    loops = Loops(variant, t)
    script = Script([("FULL", 5, loops.window(Mode.FULL, 5))])
    with pytest.raises(OSError, match="disk gone"):
        list(loops.epoch(bad(), script))
    assert script.failures == ["OSError: disk gone"] and loops.balanced()


def test_full_splits_each_period_into_step_and_wait_for_data(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    calls = []

    def report(w: WindowRun, i: int) -> None:
        calls.append(i)
        t.now += 5.0  # a slow print inside the step part: taken out of the step, not the wait
        w.pauses.append((i, t.clock() - w.stamps.get(i)))

    w = loops.window(Mode.FULL, 20, report=report, freq=6)
    drive(loops.epoch(loader(t, 100, 8, fetch=0.03), Script([("PLAIN", 1), ("FULL", 20, w)])), t, step=0.01)
    r = w.result()
    assert calls == [6, 12, 18]
    assert r.seconds == pytest.approx(20 * 0.04)
    assert r.wait_seconds == pytest.approx(20 * 0.03) and r.data_wait == pytest.approx(0.75)
    assert r.wait_median == pytest.approx(0.03) and r.work_median == pytest.approx(0.01)
    # SYNTHETIC has no loader to wait for.
    s = loops.window(Mode.SYNTHETIC, 5, constant=8)
    drive(loops.epoch(loader(t, 100, 8, fetch=0.03), Script([("PLAIN", 1), ("SYNTHETIC", 5, s)], cached=[0] * 8)), t, step=0.01)
    assert s.result().data_wait is None


def test_a_window_s_left_out_periods_leave_its_wait_split_whole(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    w = loops.window(Mode.FULL, 6)
    data = loader(t, 4, 8, fetch=0.01)
    for _ in range(3):
        drive(loops.epoch(data, Script([("FULL", 99, w)])), t, step=0.03)
        if w.done:
            break
    r = w.result()
    assert len(r.step_seconds) == 6 and r.data_wait == pytest.approx(0.25)
    assert r.step_waits is not None and len(r.step_waits) == 6


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 8, 13, 20])
def test_a_constant_batch_size_counts_only_the_last_batch_of_each_pass_and_agrees(variant: str, n: int) -> None:
    """Passes of 7 batches, the last of 3 samples: counting only pass ends gives the same samples."""

    def run(constant: Any) -> List[Tuple[int, Tuple[int, ...]]]:
        t = FakeClock()
        loops = Loops(variant, t)
        data = loader(t, 7, 8, fetch=0.01, last=3)
        out = []
        w = loops.window(Mode.FULL, n, constant=constant)
        while not w.done:  # the window spans the loader's passes, each an epoch of the loop
            drive(loops.epoch(data, Script([("FULL", 99, w)])), t, 0.0)
        r = w.result()
        out.append((r.samples, tuple(r.step_samples)))
        src = BatchSource(lambda: iter(data))
        for k in range(2):  # IO trials continue where the previous one stopped
            r = loops.io(TrialSpec(Mode.IO, k + 1, False, n), src, constant)
            out.append((r.samples, tuple(r.step_samples)))
        assert loops.balanced()
        return out

    assert run(8) == run(None)


def test_plain_segments_hand_out_the_pass_as_it_is_and_cached_ones_the_cached_batch(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    cached = ["cached"]
    data = [[k] for k in range(8)]
    script = Script([("PLAIN", 2), ("CACHED", 2), ("PLAIN", -1)], cached=cached)
    assert list(loops.epoch(data, script)) == [[0], [1], cached, cached, [2], [3], [4], [5], [6], [7]]


def test_ranges_name_the_trial_each_fetch_and_each_step_with_its_index_and_none_without_a_tool(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    loops.io(TrialSpec(Mode.IO, 1, False, 3), BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01))))
    io = loops.ranges.events[:]
    loops.ranges.events.clear()
    s, f = loops.window(Mode.SYNTHETIC, 2, constant=8), loops.window(Mode.FULL, 2)
    script = Script([("PLAIN", 1), ("SYNTHETIC", 2, s), ("FULL", 2, f), ("PLAIN", 1)], cached=[0] * 8)
    assert drive(loops.epoch(loader(t, 100, 8, fetch=0.01), script), t, 0.01) == 6
    if variant == "nvtx-off":
        assert io == [] and loops.ranges.events == []
        return

    def one(message: str, payload: int) -> List[Tuple[str, str, int]]:
        return [("PUSH", message, payload), ("POP", "", 0)]

    trial = ("PUSH", "IO_1", 0)
    assert io == [trial] + one("fetch", 0) + one("fetch", 1) + one("fetch", 2) + one("fetch", 3) + [("POP", "", 0)]
    synthetic = [("PUSH", "SYNTHETIC_1", 0)] + one("step", 0) + one("step", 1) + [("POP", "", 0)]
    # FULL: the first batch fetched before the clock, then each step and the fetch after it.
    full = [("PUSH", "FULL_1", 0)] + one("fetch", 0) + one("step", 0) + one("fetch", 1) + one("step", 1) + one("fetch", 2)
    assert loops.ranges.events == synthetic + full + [("POP", "", 0)]


def test_a_window_pushes_its_own_ranges_whatever_the_epoch_s_other_windows_do() -> None:
    """A window with ranges (a profiled warm-up) beside windows without: only its own are pushed."""
    t = FakeClock()
    on, off = Loops("nvtx-on", t), Loops("nvtx-off", t)
    first, second = off.window(Mode.FULL, 2), on.window(Mode.FULL, 3, index=2)
    script = Script([("PLAIN", 1), ("FULL", 2, first), ("FULL", 3, second), ("FULL", 9, off.window(Mode.FULL, 2, index=3))])
    assert drive(on.epoch(loader(t, 100, 8, fetch=0.0), script), t, 0.01) == 8
    pushed = [e[1] for e in on.ranges.events if e[0] == "PUSH"]
    assert pushed == ["FULL_2", "step", "fetch", "step", "fetch", "step", "fetch"] and on.balanced()
    assert [e[2] for e in on.ranges.events if e[1] == "step"] == [0, 1, 2]


def test_a_loader_error_in_an_io_trial_closes_every_range(variant: str) -> None:
    def bad() -> Iterator[List[int]]:
        yield [0] * 4
        yield [0] * 4
        raise OSError("disk gone")

    t = FakeClock()
    loops = Loops(variant, t)
    with pytest.raises(OSError, match="disk gone"):
        loops.io(TrialSpec(Mode.IO, 1, False, 5), BatchSource(bad))
    assert loops.balanced() and (variant == "nvtx-off") == (loops.ranges.events == [])


def test_a_break_in_a_step_closes_the_step_and_the_trial_range(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    w = loops.window(Mode.SYNTHETIC, 10, constant=8)
    gen = loops.epoch(loader(t, 100, 8, fetch=0.0), Script([("SYNTHETIC", 10, w)], cached=[0] * 8))
    next(gen)
    next(gen)
    assert loops.ranges.depth == (2 if variant == "nvtx-on" else 0)  # the trial's range and the held step's
    gen.close()
    assert loops.balanced()


def test_every_batch_is_counted_once_or_only_a_pass_s_last_with_a_constant_batch_size(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    data = loader(t, 7, 4, fetch=0.01, last=3)  # passes of 7 batches, 4 samples but the last (3)
    src = BatchSource(lambda: iter(data))
    r = loops.io(TrialSpec(Mode.IO, 1, False, 50), src)
    assert loops.calls == 50 and r.samples == sum(r.step_samples)
    loops.calls = 0
    loops.io(TrialSpec(Mode.IO, 2, False, 13), BatchSource(lambda: iter(data)), constant=4)
    assert loops.calls == 2  # batch 6, which ended its pass (fetch 7 found the end), and the trial's last
    loops.calls = 0
    w = loops.window(Mode.FULL, 50)
    assert drive(loops.epoch(loader(t, 1000, 4, fetch=0.01), Script([("FULL", 51, w)])), t, 0.02) == 51
    assert loops.calls == 51 and w.result().samples == 200  # from step 0: its first period is left out
    loops.calls = 0
    s = loops.window(Mode.SYNTHETIC, 20, constant=4)
    drive(loops.epoch(loader(t, 1000, 4, fetch=0.01), Script([("PLAIN", 1), ("SYNTHETIC", 20, s)], cached=[0] * 4)), t, 0.02)
    assert loops.calls == 0 and s.result().samples == 80  # the cached batch, counted once by the session


@pytest.mark.parametrize("freq", [0, 3, 9, 10, 25])
def test_the_periodic_line_comes_every_freq_steps_before_the_trial_s_end(variant: str, freq: int) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    expected = list(range(freq, 10, freq)) if freq else []
    io_calls: List[int] = []
    report = None if freq == 25 else lambda spec, i, stamps, sizes, pauses: io_calls.append(i)
    loops.io(TrialSpec(Mode.IO, 1, False, 10), BatchSource(lambda: iter(loader(t, 100, 8, 0.01))), report=report, freq=freq)
    assert io_calls == ([] if freq == 25 else expected)
    for mode in (Mode.SYNTHETIC, Mode.FULL):
        calls: List[int] = []
        w = loops.window(mode, 10, constant=8, report=lambda w, i, seen=calls: seen.append(i), freq=freq)
        cut = [(mode.value, 4, w), (mode.value, 99, w)]  # the window in two stretches: the count goes on across them
        drive(loops.epoch(loader(t, 100, 8, fetch=0.01), Script([("PLAIN", 1)] + cut, cached=[0] * 8)), t, 0.01)
        assert w.done and calls == expected, mode


def test_counters_count_their_first_batch_s_structure_and_fall_back_to_the_general_walk() -> None:
    import torch

    @dataclasses.dataclass
    class Batch:
        x: Any

    cases = [
        torch.zeros(3, 2),
        (torch.zeros(3, 2), torch.zeros(3)),
        {"image": torch.zeros(3, 2)},
        Batch(torch.zeros(3)),
        ({"ids": torch.zeros(3, 1)}, {"y": torch.zeros(3)}),
        {1.5: torch.zeros(3)},
        [{"a": 1}, {"a": 2}, {"a": 3}],
    ]
    for batch in cases:
        assert make_counter(batch)(batch) == 3, batch
    # A FULL window counting tuples, fed a dict and a bare tensor later on: the general walk counts them.
    t = FakeClock()
    counter = make_counter((torch.zeros(4, 2), torch.zeros(4)))
    batches = [(torch.zeros(4, 2), torch.zeros(4)), {"x": torch.zeros(2)}, [1, 2, 3, 4, 5], (torch.zeros(3),)]
    w = WindowRun(WindowArgs(TrialSpec(Mode.FULL, 1, False, 8), counter, None, t.clock, noop, noop, None, 0, None))
    ep = EpochState(iter(batches * 3), -1, 0.0)
    assert drive(epoch_loop(EpochArgs(ep, Script([("FULL", 9, w)]), t.clock)), t, 0.02) == 9
    assert list(w.result().step_samples) == [2, 5, 3, 4] * 2  # from step 0: its first period is left out


@pytest.mark.parametrize("drop", [[], [0], [3], [3, 4], [0, 9], [2, 5, 6, 9], list(range(10))])
@pytest.mark.parametrize("full", [False, True])
def test_a_result_drops_its_left_out_periods_in_place_as_a_mask_would(drop: List[int], full: bool) -> None:
    """The periods left out are moved out of the result's own arrays (no copy per step): every figure as
    the kept periods alone give it, the arrays exactly as long as what is kept."""
    import numpy as np

    from benchy.measure.stamps import Series, Stamps, build_result

    n = 10
    rng = np.random.default_rng(len(drop) + 7 * full)
    times = np.cumsum(rng.uniform(0.01, 0.05, n + 1)) + 1.7e9  # Unix-scale times: the periods kept in 4 bytes
    stamps, sizes = Stamps(n, split=full), Series(n)
    counts = rng.integers(1, 300, n)
    step_part = rng.uniform(0.2, 0.8, n) * np.diff(times)
    for low in range(0, n, 3):  # as a loop fills them, a chunk of 3 at a time
        high = min(n, low + 3)
        for k in range(high - low):
            stamps.buf[k] = float(times[low + k])
            sizes.buf[k] = int(counts[low + k])
            if full:
                stamps.asks[k] = float(times[low + k] + step_part[low + k])
        stamps.flush(high - low)
        sizes.flush(high - low)
    stamps.stop(n, float(times[n]))
    pauses, gaps = [(2, 0.001), (9, 0.002)], [(5, 0.0005)] if full else []
    spec = TrialSpec(Mode.FULL if full else Mode.SYNTHETIC, 1, False, n)
    r = build_result(spec, stamps, sizes, pauses, periods=n, fetched=None, gaps=gaps, drop=drop)

    periods = np.diff(times)
    waits = times[1:] - (times[:-1] + step_part)
    for k, d in pauses:
        periods[k] -= d
    for k, d in gaps:
        periods[k] -= d
        waits[k] -= d
    keep = np.ones(n, dtype=bool)
    keep[drop] = False
    assert list(r.step_seconds) == pytest.approx(list(periods[keep]))
    assert list(r.step_samples) == list(counts[keep]) and r.samples == int(counts[keep].sum())
    assert r.seconds == pytest.approx(float(periods[keep].sum()))
    first = int(np.argmax(keep)) if keep.any() else n
    assert r.started == pytest.approx(float(times[0] + periods[:first].sum()), rel=0, abs=1e-6)
    assert len(r.step_seconds) == len(r.step_samples) == int(keep.sum())
    if full and keep.any():
        assert r.step_waits is not None and list(r.step_waits) == pytest.approx(list(waits[keep]), rel=1e-6)
        assert r.wait_seconds == pytest.approx(float(waits[keep].sum()))
        assert r.wait_median == pytest.approx(float(np.median(waits[keep])))
        assert r.work_median == pytest.approx(float(np.median(periods[keep] - waits[keep])))


# --- a loader whose workers hand out their batches in rounds ------------------------------------------------------


def full_rate(variant: str, lead: int, n: int, cycle: int, step: float, workers: int = 8, make: float = 0.08) -> float:
    """A FULL window of ``n`` periods in rounds of ``cycle`` after ``lead`` plain steps of an epoch, its throughput."""
    t = FakeClock()
    loops = Loops(variant, t)
    w = loops.window(Mode.FULL, n, cycle=cycle)
    script = Script([("PLAIN", lead), ("FULL", n + 1, w)] if lead else [("FULL", n + 1, w)])
    drive(loops.epoch(workers_loader(t, 400, workers, make), script), t, step)
    assert w.done
    return float(w.result().throughput)


@pytest.mark.parametrize("step", [0.002, 0.02])  # the loader limits (8 batches each 80 ms, 10 ms a batch), the step does
def test_a_full_window_in_whole_rounds_reads_the_same_wherever_it_starts_in_the_workers_rhythm(variant: str, step: float) -> None:
    steady = 8 * min(8 / 0.08, 1 / step)  # samples/s: the slower of the loader (8 batches each 80 ms) and the step
    rates = [full_rate(variant, lead, 24, 8, step) for lead in range(24, 40)]
    assert rates == pytest.approx([steady] * len(rates), rel=1e-6)
    # The same windows counted in single periods (no round) depend on where they start, by up to a round's wait.
    parts = [full_rate(variant, lead, 20, 1, step) for lead in range(24, 40)]
    if step < 0.01:
        assert max(parts) / min(parts) > 1.3


def test_a_window_cut_by_its_epoch_keeps_whole_rounds_and_leaves_out_the_rest(variant: str) -> None:
    t = FakeClock()
    loops = Loops(variant, t)
    w = loops.window(Mode.FULL, 24, cycle=8)
    script = Script([("PLAIN", 5), ("FULL", 100, w)])  # from step 5 to the end of an epoch of 20 batches
    drive(loops.epoch(workers_loader(t, 20, 8, 0.08), script), t, 0.002)
    # 15 hand-outs: period 14 holds the epoch's end; of the 14 before it, one whole round is kept and 6 left out.
    assert sorted(w.left_out) == list(range(8, 15)) and w.measured == 8 and not w.done
    assert w.quota(0) == 24 - 8 + 1  # the next epoch's stretch: two more rounds, and its first period left out


def test_an_io_trial_in_whole_rounds_leaves_out_a_new_pass_s_start_up_and_the_part_rounds(variant: str) -> None:
    t = FakeClock()
    data = workers_loader(t, 60, 8, 0.08, startup=0.5)  # passes of 60 batches (7.5 rounds), 0.5 s to start each
    src = BatchSource(lambda: iter(data))
    r = Loops(variant, t).io(TrialSpec(Mode.IO, 1, False, 96, cycle=8), src)
    assert type(data).passes == 2
    assert r.throughput == pytest.approx(8 * 8 / 0.08, rel=1e-6)  # the workers' rate: no start-up, no part round
    assert len(r.step_seconds) % 8 == 0 and len(r.step_seconds) < 96
    t2 = FakeClock()
    again = workers_loader(t2, 60, 8, 0.08, startup=0.5)
    r2 = Loops(variant, t2).io(TrialSpec(Mode.IO, 1, False, 96), BatchSource(lambda: iter(again)))
    assert r2.throughput > 1.05 * r.throughput  # counted period by period: the part rounds' batches come free


# --- the watched pass (after the schedule) ---------------------------------------------------------------------------


def _watched_epoch(length, taken, ask_past: bool):
    """A pass of 6 batches, each 10 ms in the loader and 30 ms of step, taken ``taken`` batches at a time by a loop
    that knows the pass's ``length`` (or not: None), asking once more for the end where ``ask_past``; what the
    watch was told."""
    from helpers import FakeClock

    from benchy.measure.trial import watched_pass

    clock = FakeClock()

    def loader():
        for k in range(6):
            clock.now += 0.010
            yield k

    told = []
    it = watched_pass(loader(), clock, lambda *sums: told.append(sums), length)
    for _ in range(taken):
        next(it)
        clock.now += 0.030
    if ask_past:
        assert next(it, None) is None
    it.close()
    return told


def test_a_watched_pass_counts_a_loop_that_stops_at_its_length() -> None:
    # The first batch is the start-up; batches 2 to 5, each 10 ms of wait and 30 of step, up to the ask for the last.
    counted = [(4, pytest.approx(0.160), pytest.approx(0.040))]
    assert _watched_epoch(6, 6, ask_past=False) == counted  # a loop that counts its steps (Lightning's)
    assert _watched_epoch(6, 6, ask_past=True) == counted  # a for loop: told once, the same
    # Without a known length, the pass's end: batches 2 to 6, each step with it.
    assert _watched_epoch(None, 6, ask_past=True) == [(5, pytest.approx(0.200), pytest.approx(0.050))]
    assert _watched_epoch(None, 6, ask_past=False) == []  # it never saw the end
    # A loop that leaves part-way is no epoch; a len() larger than the pass is the pass's end.
    assert _watched_epoch(6, 4, ask_past=False) == [] and _watched_epoch(None, 4, ask_past=False) == []
    assert _watched_epoch(8, 6, ask_past=True) == [(5, pytest.approx(0.200), pytest.approx(0.050))]
