"""A trial's series (measure.stamps): stamps kept as the periods between them, and the per-batch counts."""

from __future__ import annotations

import numpy as np
import pytest

from benchy.measure.stamps import UNSET, Constant, Series, Stamps


def filled(times: np.ndarray, chunk: int, asks: np.ndarray | None = None) -> Stamps:
    """``times`` stamped as a loop stamps them, ``chunk`` at a time, then moved (and ``asks`` beside them)."""
    stamps = Stamps(len(times) - 1, split=asks is not None)
    for low in range(0, len(times), chunk):
        high = min(len(times), low + chunk)
        for k in range(high - low):
            stamps.buf[k] = float(times[low + k])
            if asks is not None and stamps.asks is not None and low + k < len(asks):
                stamps.asks[k] = float(asks[low + k])
        stamps.flush(high - low)
    return stamps


@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_stamps_keep_four_bytes_a_period_and_give_back_every_time(chunk: int) -> None:
    rng = np.random.default_rng(chunk)
    times = 1.7e9 + np.cumsum(rng.uniform(1e-5, 0.05, 50))  # Unix-scale times, tens of microseconds apart
    stamps = filled(times, chunk)
    assert stamps.periods.itemsize == 4 and stamps.done == 50 and stamps.written() == 50
    assert np.frombuffer(stamps.periods, np.float32)[:49] == pytest.approx(np.diff(times), rel=1e-6, abs=1e-9)
    for i in (0, 1, 17, 48, 49):
        assert stamps.get(i) == pytest.approx(times[i], rel=0, abs=1e-6)  # within a microsecond of the time itself
        if i < 49:
            assert stamps.period(i) == pytest.approx(times[i + 1] - times[i], rel=1e-6)
    assert stamps.first == times[0] and stamps.last == times[-1]


def test_a_stop_is_the_stamp_after_the_last_or_takes_its_place() -> None:
    times = np.array([10.0, 10.5, 11.0, 12.0])
    after = filled(times, 2)
    after.grow(5)
    after.stop(4, 12.25)  # a window's stop: one more stamp
    assert list(after.periods[:4]) == [0.5, 0.5, 1.0, 0.25] and after.end == 12.25
    instead = filled(times, 2)
    instead.stop(3, 12.5)  # an IO trial's: its last hand-out's stamp taken again after the device sync
    assert list(instead.periods[:3]) == [0.5, 0.5, 1.5] and instead.last == 12.5
    with pytest.raises(ValueError, match=r"a trial's stop is stamp 3 or 4 .* not 2"):
        filled(times, 2).stop(2, 13.0)


def test_full_waits_are_worked_out_across_chunks_and_at_the_stop() -> None:
    times = np.array([1.0, 2.0, 3.5, 4.0, 6.0])
    asks = times + np.array([0.25, 1.0, 0.125, 1.5, 0.5])  # each step's end: the rest of the period is the wait
    stamps = filled(times, 2, asks)
    stamps.grow(6)
    stamps.stop(5, 6.75)  # the last period's wait ends at the stop
    assert stamps.waits is not None and list(stamps.waits[:5]) == [0.75, 0.5, 0.375, 0.5, 0.25]
    assert list(stamps.periods[:5]) == [1.0, 1.5, 0.5, 2.0, 0.75]


def test_an_untaken_stamp_is_found_and_nothing_else_is_written() -> None:
    stamps = Stamps(10)
    stamps.start(5.0)
    stamps.buf[0], stamps.buf[1] = 6.0, 7.0
    assert stamps.written() == 3 and stamps.get(2) == 7.0 and stamps.buf[2] is UNSET


def test_counts_of_every_batch_or_the_same_for_all_but_a_few() -> None:
    written = Series(6)
    written.buf[:4] = [3, 4, 5, 6]
    written.flush(4)
    written.buf[:2] = [7, 300]
    assert written.total(1, 6) == 4 + 5 + 6 + 7 + 300  # the moved ones and those still in the loop's list
    written.settle(6)
    assert written.values(6).tolist() == [3, 4, 5, 6, 7, 300]

    same = Constant(5, 64)
    same.set(4, 10)  # a pass's short last batch
    same.set(2, 64)
    assert same.total(0, 5) == 4 * 64 + 10 and same.total(4, 5) == 10 and same.buf == []
    values = same.values(5)
    assert values.tolist() == [64, 64, 64, 64, 10] and values.dtype == np.uint8  # the result's smallest type
    same.grow(8)
    assert len(same) == 8 and Constant(3, 1000).values(3).dtype == np.uint16
