"""The trial loops against a fake clock: exact windows, samples, passes and report pauses.

Every window is written once, annotated with NVTX ranges; its plain variant (no tool attached) is
derived from the same source. Each test here runs over both variants through ``Trials``.
"""

from __future__ import annotations

import dataclasses
import gc
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pytest
from helpers import FakeClock

from benchy import EmptyLoaderError, Mode, TrialSpec
from benchy.core.results import Counted, Interruption
from benchy.measure.counting import make_counter
from benchy.measure.source import BatchSource
from benchy.measure.stamps import handed_out, stamp_buffer
from benchy.measure.trial import STOPPED, TOO_SHORT, full_trial, io_trial, synthetic_trial

VARIANTS = ["plain", "annotated", "plain-inline", "annotated-inline"]  # -inline: the count compiled in place


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

        def __iter__(self) -> Iterator[List[int]]:
            L.passes += 1
            for k in range(batches):
                t.now += fetch
                yield [0] * (last if (last and k == batches - 1) else batch_size)

    return L()


class Trials:
    """Runs trials of one variant and keeps what the callbacks received."""

    def __init__(self, variant: str, t: FakeClock) -> None:
        self.variant, self.t = variant, t
        self.done: List[Tuple[Any, bool]] = []
        self.aborted: List[Tuple[str, int, str]] = []
        self.ranges = RecordingRanges()
        self.calls = 0  # counter calls (the -inline variants compute the per-step count in place)

    def settle(self, outcome: Any) -> None:
        if isinstance(outcome, Counted):
            self.done.append((outcome.result, outcome.closed_early))
        else:
            assert isinstance(outcome, Interruption)
            self.aborted.append((outcome.spec.label, outcome.batches_done, outcome.reason))

    def epoch(self, spec: TrialSpec, src: BatchSource, get_batch: Optional[Callable[[], Any]] = None,
              report: Any = None, freq: int = 0, stamps: Optional[List[float]] = None):
        count = self.counter()
        if get_batch is None:
            get_batch = src.fetch
        ranges = self.ranges if self.variant.startswith("annotated") else None
        if spec.mode is Mode.SYNTHETIC:
            return synthetic_trial(spec, get_batch, count, self.t.clock, noop, self.settle, report, freq,
                                   stamps=stamps, ranges=ranges)
        return full_trial(spec, src, count, self.t.clock, noop, self.settle, report, freq, stamps=stamps,
                          ranges=ranges)

    def io(self, spec: TrialSpec, src: BatchSource):
        count = self.counter()
        ranges = self.ranges if self.variant.startswith("annotated") else None
        return io_trial(spec, src, count, self.t.clock, noop, ranges=ranges)

    def counter(self) -> Any:
        """The fake batches' counter; for the -inline variants one with an inline expression."""
        if not self.variant.endswith("-inline"):
            return make_counter([0])

        def count(batch: Any) -> int:
            self.calls += 1
            return len(batch)
        count.inline = "len(batch)"  # type: ignore[attr-defined]
        return count

    def balanced(self) -> bool:
        return self.ranges.depth == 0


def drive(gen, t: FakeClock, step: float) -> int:
    count = 0
    for _ in gen:
        t.now += step
        count += 1
    return count


def noop() -> None:
    return None


@pytest.fixture(params=VARIANTS)
def variant(request) -> str:
    return request.param


@pytest.fixture(params=["chunk-4096", "chunk-3"], autouse=True)
def chunk(request, monkeypatch) -> None:
    """Every test also with chunks of 3: the loops move their lists into arrays every 3 values,
    so trials cross chunk boundaries, end on one, and are dropped inside one."""
    if request.param == "chunk-3":
        monkeypatch.setattr("benchy.measure.stamps.CHUNK", 3)


def test_io_window_counts_n_fetches_exactly(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    r = runs.io(TrialSpec(Mode.IO, 1, False, 10), src)
    assert r.samples == 80 and r.seconds == pytest.approx(0.1)
    assert r.throughput == pytest.approx(800.0)
    assert r.step_seconds == pytest.approx((0.01,) * 10)
    assert runs.balanced()


def test_full_window_holds_n_steps_and_n_fetches_and_keeps_the_extra_batch(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.03)))
    spec = TrialSpec(Mode.FULL, 1, False, 20)
    assert drive(runs.epoch(spec, src), t, step=0.02) == 20
    ((r, early),) = runs.done
    assert not early
    assert r.samples == 160 and r.seconds == pytest.approx(20 * 0.05)
    assert r.throughput == pytest.approx(8 / 0.05)  # no 1/n bias from a missing fetch
    # The batch fetched to close the window opens the next trial without a new fetch.
    before = t.now
    drive(runs.epoch(TrialSpec(Mode.FULL, 2, False, 1), src), t, 0.0)
    assert t.now - before == pytest.approx(0.03)  # only the closing fetch of trial 2
    assert not runs.aborted and runs.balanced()


def test_synthetic_yields_one_cached_object_in_every_trial_and_times_steps_only(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 4, fetch=1.0)))
    cached = src.fetch()
    seen = []
    for k in (1, 2):
        for b in runs.epoch(TrialSpec(Mode.SYNTHETIC, k, False, 5), src, get_batch=lambda: cached):
            seen.append(b)
            t.now += 0.5
    assert len(seen) == 10 and all(b is cached for b in seen)
    for r, early in runs.done:
        assert r.samples == 20 and r.seconds == pytest.approx(2.5) and r.throughput == pytest.approx(8.0)
    assert runs.balanced()


def test_short_loader_starts_new_passes_inside_a_trial_and_counts_partial_batches(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    data = loader(t, 3, 8, fetch=0.01, last=5)  # a pass: 8, 8, 5 samples
    src = BatchSource(lambda: iter(data))
    sizes = [len(b) for b in runs.epoch(TrialSpec(Mode.FULL, 1, False, 7), src)]
    assert sizes == [8, 8, 5, 8, 8, 5, 8]
    assert runs.done[0][0].samples == sum(sizes)
    assert type(data).passes == 3


def test_empty_loader_is_a_clear_error() -> None:
    src = BatchSource(lambda: iter([]))
    with pytest.raises(EmptyLoaderError, match="yielded no batch on a fresh pass"):
        src.fetch()


@pytest.mark.parametrize("mode", [Mode.SYNTHETIC, Mode.FULL])
def test_break_records_how_many_batches_the_loop_received(variant: str, mode: Mode) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    gen = runs.epoch(TrialSpec(mode, 1, False, 10), src)
    for k, _ in enumerate(gen):
        if k == 3:
            break
    gen.close()
    assert not runs.done
    assert runs.aborted == [(f"{mode.value}_1", 4, STOPPED.format(k=4, n=10))]
    assert runs.balanced()


@pytest.mark.parametrize("mode", [Mode.SYNTHETIC, Mode.FULL])
@pytest.mark.parametrize("how", ["close", "drop"])
def test_a_loop_sized_by_len_counts_over_the_first_n_minus_1_periods(variant: str, mode: Mode, how: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.03)))
    n = 10
    stamps = stamp_buffer(n)
    gen = runs.epoch(TrialSpec(mode, 1, False, n), src, stamps=stamps)
    assert handed_out(stamps, n) == 0
    it = iter(gen)
    for k in range(n):  # for _ in range(len(loader)): next(it) -- never asks for batch n + 1
        next(it)
        assert handed_out(stamps, n) == k + 1
        t.now += 0.02
    assert not runs.done
    if how == "close":
        gen.close()
    else:
        del gen, it
        gc.collect()
    ((r, early),) = runs.done
    period = 0.02 + (0.03 if mode is Mode.FULL else 0.0)
    assert early and r.samples == 8 * (n - 1) and len(r.step_seconds) == n - 1
    assert r.seconds == pytest.approx((n - 1) * period) and r.throughput == pytest.approx(8 / period)
    assert not runs.aborted and runs.balanced()


def test_one_batch_trial_closed_before_a_second_request_is_not_counted(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.0)))
    gen = runs.epoch(TrialSpec(Mode.FULL, 1, False, 1), src)
    next(gen)
    gen.close()
    assert runs.aborted == [("FULL_1", 1, TOO_SHORT)] and not runs.done and runs.balanced()


def test_report_time_is_taken_out_of_the_trial(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.0)))
    calls = []

    def report(spec, i, stamps, sizes, pauses) -> None:
        calls.append(i)
        t.now += 5.0  # a very slow print
        pauses.append((i, t.clock() - stamps[i]))

    drive(runs.epoch(TrialSpec(Mode.FULL, 1, False, 10), src, report=report, freq=3), t, step=0.1)
    assert calls == [3, 6, 9]
    r = runs.done[0][0]
    assert r.seconds == pytest.approx(1.0) and sum(r.step_seconds) == pytest.approx(1.0)


def test_synthetic_batch_error_has_the_same_text_in_both_variants(variant: str) -> None:
    def broken() -> Any:
        raise OSError("no batch")

    runs = Trials(variant, FakeClock())
    src = BatchSource(lambda: iter([]))
    with pytest.raises(OSError, match="no batch"):
        list(runs.epoch(TrialSpec(Mode.SYNTHETIC, 1, False, 5), src, get_batch=broken))
    assert runs.aborted == [("SYNTHETIC_1", 0, "OSError raised: no batch")]
    assert runs.balanced()


def test_loader_error_inside_a_trial_propagates_and_is_recorded(variant: str) -> None:
    def bad():
        yield [0] * 4
        raise OSError("disk gone")

    runs = Trials(variant, FakeClock())
    src = BatchSource(bad)
    with pytest.raises(OSError, match="disk gone"):
        list(runs.epoch(TrialSpec(Mode.FULL, 1, False, 5), src))
    assert runs.aborted == [("FULL_1", 1, "the data loader raised OSError: disk gone")]
    assert runs.balanced()


def test_full_splits_each_period_into_step_and_wait_for_data(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 7, 8, fetch=0.03)))  # passes of 7: new passes inside
    calls = []

    def report(spec, i, stamps, sizes, pauses) -> None:
        calls.append(i)
        t.now += 5.0  # a slow print inside the step part: taken out of the step, not the wait
        pauses.append((i, t.clock() - stamps[i]))

    drive(runs.epoch(TrialSpec(Mode.FULL, 1, False, 20), src, report=report, freq=6), t, step=0.01)
    ((r, early),) = runs.done
    assert calls == [6, 12, 18] and not early
    assert r.seconds == pytest.approx(20 * 0.04)
    assert r.wait_seconds == pytest.approx(20 * 0.03) and r.data_wait == pytest.approx(0.75)
    assert r.wait_median == pytest.approx(0.03) and r.work_median == pytest.approx(0.01)
    # SYNTHETIC has no loader to wait for.
    drive(runs.epoch(TrialSpec(Mode.SYNTHETIC, 1, False, 5), src), t, step=0.01)
    assert runs.done[-1][0].data_wait is None


def test_a_len_sized_full_trial_splits_its_first_n_minus_1_periods(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    gen = runs.epoch(TrialSpec(Mode.FULL, 1, False, 6), src)
    it = iter(gen)
    for _ in range(6):
        next(it)
        t.now += 0.03
    gen.close()
    ((r, early),) = runs.done
    assert early and len(r.step_seconds) == 5 and r.data_wait == pytest.approx(0.25)


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 8, 13, 20])
def test_a_constant_batch_size_counts_only_the_last_batch_of_each_pass_and_agrees(variant: str, n: int) -> None:
    """Passes of 7 batches, the last of 3 samples: counting only pass ends gives the same samples
    (in both variants: the annotated loops once ignored ``constant``)."""
    def run(constant: Any) -> List[Tuple[int, Tuple[int, ...]]]:
        t = FakeClock()
        src = BatchSource(lambda: iter(loader(t, 7, 8, fetch=0.01, last=3)))
        ranges = RecordingRanges() if variant == "annotated" else None
        counted: List[Any] = []
        out = []
        for k in range(3):  # trials continue where the previous one stopped
            full = full_trial(TrialSpec(Mode.FULL, k + 1, False, n), src, make_counter([0]), t.clock, noop,
                              lambda outcome: counted.append(outcome.result), constant=constant, ranges=ranges)
            drive(full, t, 0.0)
            r = io_trial(TrialSpec(Mode.IO, k + 1, False, n), src, make_counter([0]), t.clock, noop, constant=constant,
                         ranges=ranges)
            counted.append(r)
        assert ranges is None or ranges.depth == 0
        for r in counted:
            out.append((r.samples, tuple(r.step_samples)))
        return out

    assert run(8) == run(None)


def test_the_plain_variant_is_the_annotated_one_without_its_annotations() -> None:
    """The plain loops are derived from the annotated source: no NVTX name is left in them."""
    import dis

    from benchy.measure.trial import WINDOWS

    for plain, annotated in WINDOWS.values():
        used = {i.argval for i in dis.get_instructions(plain) if isinstance(i.argval, str)}
        assert not used & {"push", "pop", "depth", "step_attr", "fetch_attr", "_close_ranges", "payload"}
        assert {"push", "pop"} <= {i.argval for i in dis.get_instructions(annotated) if isinstance(i.argval, str)}
        assert plain.__code__.co_firstlineno == annotated.__code__.co_firstlineno  # tracebacks name the real lines


@pytest.mark.parametrize("variant", ["plain-inline", "annotated-inline"])
def test_an_inline_count_replaces_the_per_step_call(variant: str) -> None:
    t = FakeClock()
    runs = Trials(variant, t)
    src = BatchSource(lambda: iter(loader(t, 1000, 4, fetch=0.01)))
    result = runs.io(TrialSpec(Mode.IO, 1, False, 50), src)
    assert result.samples == 200 and runs.calls == 0
    gen = runs.epoch(TrialSpec(Mode.FULL, 1, False, 50), src)
    assert drive(gen, t, 0.02) == 50 and runs.done[-1][0].samples == 200 and runs.calls == 0


def test_counters_carry_their_count_as_an_expression_that_falls_back_to_the_call() -> None:
    import torch

    from benchy.measure.trial import _full_annotated, _window

    @dataclasses.dataclass
    class Batch:
        x: Any

    cases = [(torch.zeros(3, 2), "batch.shape[0]"), ((torch.zeros(3, 2), torch.zeros(3)), "batch[0].shape[0]"),
             ({"image": torch.zeros(3, 2)}, "batch['image'].shape[0]"), (Batch(torch.zeros(3)), "batch.x.shape[0]"),
             (({"ids": torch.zeros(3, 1)}, {"y": torch.zeros(3)}), "batch[0]['ids'].shape[0]"),
             ({1.5: torch.zeros(3)}, None), ([{"a": 1}, {"a": 2}, {"a": 3}], None)]
    for batch, expected in cases:
        counter = make_counter(batch)
        assert getattr(counter, "inline", None) == expected, batch
        assert (eval(expected, {"batch": batch}) if expected else counter(batch)) == 3
    # A FULL window with the tuple's inline count, fed a dict and a bare tensor later on: the call counts them.
    t = FakeClock()
    runs = Trials("plain", t)
    counter = make_counter((torch.zeros(4, 2), torch.zeros(4)))
    batches = [(torch.zeros(4, 2), torch.zeros(4)), {"x": torch.zeros(2)}, [1, 2, 3, 4, 5], (torch.zeros(3),)]

    assert _window(_full_annotated, False, counter.inline).__name__ == "_full_plain_inline"
    gen = full_trial(TrialSpec(Mode.FULL, 1, False, 8), BatchSource(lambda: iter(batches * 3)), counter, t.clock, noop, runs.settle)
    assert drive(gen, t, 0.02) == 8
    assert list(runs.done[-1][0].step_samples) == [4, 2, 5, 3] * 2
