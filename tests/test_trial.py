"""The trial loops against a fake clock: exact windows, samples, passes and report pauses."""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest

from benchy import Mode, TrialSpec
from benchy._batch import make_counter
from benchy._source import BatchSource, EmptyLoaderError
from benchy._trial import full_trial, io_trial, synthetic_trial


class FakeTime:
    """Virtual time: the loader and the 'training step' advance it by known amounts."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now


def loader(t: FakeTime, batches: int, batch_size: int, fetch: float, last: int = 0):
    """A re-iterable loader: each batch costs ``fetch`` seconds; optional short last batch."""

    class L:
        passes = 0

        def __iter__(self) -> Iterator[List[int]]:
            L.passes += 1
            for k in range(batches):
                t.now += fetch
                yield [0] * (last if (last and k == batches - 1) else batch_size)

    return L()


def drive(gen, t: FakeTime, step: float) -> int:
    count = 0
    for _ in gen:
        t.now += step
        count += 1
    return count


def counter() -> Any:
    return make_counter([0], None)


def noop() -> None:
    return None


def collect():
    done: list = []
    aborted: list = []
    return done, aborted, done.append, lambda spec, k, why: aborted.append((spec.label, k, why))


def test_io_window_counts_n_fetches_exactly() -> None:
    t = FakeTime()
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    r = io_trial(TrialSpec(Mode.IO, 1, False, 10), src, counter(), t.clock, noop)
    assert r.samples == 80 and r.seconds == pytest.approx(0.1)
    assert r.throughput == pytest.approx(800.0)
    assert r.step_seconds == pytest.approx((0.01,) * 10)


def test_full_window_holds_n_steps_and_n_fetches_and_keeps_the_extra_batch() -> None:
    t = FakeTime()
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.03)))
    done, aborted, on_done, on_abort = collect()
    spec = TrialSpec(Mode.FULL, 1, False, 20)
    assert drive(full_trial(spec, src, counter(), t.clock, noop, on_done, on_abort), t, step=0.02) == 20
    (r,) = done
    assert r.samples == 160 and r.seconds == pytest.approx(20 * 0.05)
    assert r.throughput == pytest.approx(8 / 0.05)  # no 1/n bias from a missing fetch
    # The batch fetched to close the window opens the next trial without a new fetch.
    before = t.now
    drive(full_trial(TrialSpec(Mode.FULL, 2, False, 1), src, counter(), t.clock, noop, on_done, on_abort), t, 0.0)
    assert t.now - before == pytest.approx(0.03)  # only the closing fetch of trial 2
    assert not aborted


def test_synthetic_yields_the_same_object_and_times_steps_only() -> None:
    t = FakeTime()
    src = BatchSource(lambda: iter(loader(t, 100, 4, fetch=1.0)))
    done, aborted, on_done, on_abort = collect()
    seen = []
    gen = synthetic_trial(TrialSpec(Mode.SYNTHETIC, 1, False, 5), src, counter(), t.clock, noop, on_done, on_abort)
    for b in gen:
        seen.append(id(b))
        t.now += 0.5
    assert len(set(seen)) == 1 and len(seen) == 5
    (r,) = done
    assert r.samples == 20 and r.seconds == pytest.approx(2.5) and r.throughput == pytest.approx(8.0)


def test_short_loader_starts_new_passes_inside_a_trial_and_counts_partial_batches() -> None:
    t = FakeTime()
    data = loader(t, 3, 8, fetch=0.01, last=5)  # a pass: 8, 8, 5 samples
    src = BatchSource(lambda: iter(data))
    done, _, on_done, on_abort = collect()
    sizes = []
    gen = full_trial(TrialSpec(Mode.FULL, 1, False, 7), src, counter(), t.clock, noop, on_done, on_abort)
    for b in gen:
        sizes.append(len(b))
    assert sizes == [8, 8, 5, 8, 8, 5, 8]
    assert done[0].samples == sum(sizes)
    assert type(data).passes == 3


def test_empty_loader_is_a_clear_error() -> None:
    src = BatchSource(lambda: iter([]))
    with pytest.raises(EmptyLoaderError, match="yielded no batch on a fresh pass"):
        src.fetch()


def test_break_out_of_the_loop_records_an_interruption() -> None:
    t = FakeTime()
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.01)))
    done, aborted, on_done, on_abort = collect()
    gen = full_trial(TrialSpec(Mode.FULL, 1, False, 10), src, counter(), t.clock, noop, on_done, on_abort)
    for k, _ in enumerate(gen):
        if k == 3:
            break
    gen.close()
    assert not done and aborted[0][:2] == ("FULL_1", 3)


def test_report_time_is_taken_out_of_the_trial() -> None:
    t = FakeTime()
    src = BatchSource(lambda: iter(loader(t, 100, 8, fetch=0.0)))
    done, _, on_done, on_abort = collect()
    calls = []

    def report(spec, i, stamps, sizes, pauses) -> None:
        calls.append(i)
        t.now += 5.0  # a very slow print
        pauses.append((i, t.clock() - stamps[i]))

    gen = full_trial(TrialSpec(Mode.FULL, 1, False, 10), src, counter(), t.clock, noop, on_done, on_abort, report, 3)
    drive(gen, t, step=0.1)
    assert calls == [3, 6, 9]
    assert done[0].seconds == pytest.approx(1.0)
    assert sum(done[0].step_seconds) == pytest.approx(1.0)


def test_loader_error_inside_a_trial_propagates_and_is_recorded() -> None:
    def bad():
        yield [0] * 4
        raise OSError("disk gone")

    src = BatchSource(bad)
    done, aborted, on_done, on_abort = collect()
    gen = full_trial(TrialSpec(Mode.FULL, 1, False, 5), src, counter(), FakeTime().clock, noop, on_done, on_abort)
    with pytest.raises(OSError, match="disk gone"):
        list(gen)
    assert aborted and "OSError: disk gone" in aborted[0][2]
