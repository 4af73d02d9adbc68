"""The loader pipeline's simulation (core.queues), on hand-made times whose steady pace can be worked out by hand."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from benchy.core.queues import QUANTILES, Shapes, _play, _play_shared, periods, shape_of

SPREAD = Shapes(*(tuple(np.linspace(0.5, 1.5, QUANTILES)),) * 3)  # each time from half to one and a half its mean


def period(workers: int, depth: int, worker: float, main: float, step: float, **kw: object) -> float:
    return float(periods(workers, depth, np.array(worker), np.array(main), np.array(step), **kw))  # type: ignore[arg-type]


def test_with_constant_times_the_slower_pace_sets_the_period() -> None:
    # 2 workers of 9 ms a batch: the pool gives a batch every 4.5 ms; the main process 1 ms and the step
    assert period(2, 4, 0.009, 0.001, 0.003) == pytest.approx(0.0045)  # the loader limits
    assert period(2, 4, 0.009, 0.001, 0.004) == pytest.approx(0.005)  # the step and the receive limit
    assert period(2, 4, 0.009, 0.001, 0.0) == pytest.approx(0.0045)  # IO: nothing between the asks
    assert period(2, 4, 0.009, 0.006, 0.0) == pytest.approx(0.006)  # ... unless receiving takes longer


def test_a_worker_handed_its_next_index_only_at_the_receive_cannot_work_ahead() -> None:
    # one worker, one index ahead: it starts a batch when the main process received the one before, so the
    # worker's and the step's times add up (less nothing); with two ahead it works during the step
    assert period(1, 1, 0.004, 0.001, 0.003) == pytest.approx(0.004 + 0.001)
    assert period(1, 2, 0.004, 0.001, 0.003) == pytest.approx(0.004)


def test_in_order_delivery_waits_for_the_slowest_worker() -> None:
    # the slowest of 2 workers 1.5x the mean: the other 0.5x; in order, the pair delivers 2 batches a slowest batch
    assert period(2, 4, 0.008, 0.0, 0.0, slow=1.5) == pytest.approx(1.5 * 0.008 / 2)


def test_where_the_paces_meet_varying_times_cost_throughput_that_the_means_do_not_show() -> None:
    steady = max(0.009 / 2, 0.0035 + 0.001)
    queued = period(2, 4, 0.009, 0.001, 0.0035, shapes=SPREAD)
    assert queued > 1.02 * steady
    # far from the knee the queue absorbs the variation: the slower pace, within a few per cent
    assert period(2, 4, 0.009, 0.001, 0.010, shapes=SPREAD) == pytest.approx(0.011, rel=0.03)
    # a deeper queue absorbs more of it
    assert period(2, 16, 0.009, 0.001, 0.0035, shapes=SPREAD) < queued


def test_columns_are_worked_out_from_the_same_draws_and_again_the_same() -> None:
    worker, main, step = np.array([0.009, 0.009, 0.009]), np.array([0.001] * 3), np.array([0.003, 0.0035, 0.004])
    first = periods(2, 4, worker, main, step, shapes=SPREAD)
    assert first.shape == (3,) and np.all(np.diff(first) > 0)  # a longer step: a longer period, draw for draw
    assert np.array_equal(first, periods(2, 4, worker, main, step, shapes=SPREAD))


ALL_CPU = (1.0, 1.0, 1.0)  # a worker's, the receive's and the step's time all on the CPU, the step on one core


def test_a_memo_plays_each_column_once_and_gives_its_figure_again(monkeypatch: pytest.MonkeyPatch) -> None:
    import benchy.core.queues as queues

    played: list = []
    monkeypatch.setattr(queues, "_play", lambda *a: played.append("plain") or _play(*a))
    monkeypatch.setattr(queues, "_play_shared", lambda *a: played.append("shared") or _play_shared(*a))
    shapes = Shapes(worker=tuple(np.linspace(0.5, 1.5, QUANTILES)), step=tuple(np.linspace(0.8, 1.2, QUANTILES)))
    args = dict(slow=1.1, shapes=shapes, shares=(1.0, 1.0, 1.0), cores=2.0)
    worker, main = np.array([0.02, 0.02, 0.03]), np.array([0.001] * 3)
    step = np.array([0.01, 0.0, 0.01])  # three columns (the second an IO one: no step)
    plain = periods(2, 4, worker, main, step, **args)
    assert len(played) == 3
    memo: dict = {}
    first = periods(2, 4, worker, main, step, memo=memo, **args)
    again = periods(2, 4, worker[::-1], main, step[::-1], memo=memo, **args)  # the same columns, the other way round
    assert first.tolist() == plain.tolist() and again.tolist() == plain[::-1].tolist()
    assert len(played) == 6 and len(memo) == 3  # the second call played nothing
    other = periods(3, 6, worker, main, step, memo=memo, **args)  # other workers: other columns
    assert len(played) == 9 and len(memo) == 6 and other.tolist() != plain.tolist()


def test_threads_that_ask_for_more_cores_than_there_are_share_them() -> None:
    # One worker of 10 ms CPU work a batch and a step of 10 ms: on one core they take turns, 20 ms a batch; on
    # two each has its own, and the pipeline overlaps them as before.
    assert period(1, 8, 0.010, 0.0, 0.010, shares=ALL_CPU, cores=1.0) == pytest.approx(0.020, rel=1e-3)
    assert period(1, 8, 0.010, 0.0, 0.010, shares=ALL_CPU, cores=2.0) == pytest.approx(0.010)
    assert period(1, 8, 0.010, 0.0, 0.010) == pytest.approx(0.010)
    # Workers that wait (storage, sleeps: none of their time on the CPU) take no core from the step.
    assert period(2, 4, 0.012, 0.0, 0.008, shares=(0.0, 0.0, 1.0), cores=1.0) == pytest.approx(0.008)
    # Two workers of 12 ms CPU work and an 8 ms step on two cores: the step beside them takes longer; the batch
    # takes what the cores give (20 ms of work on 2 cores), not the 8 ms of the step alone.
    assert period(2, 4, 0.012, 0.0, 0.008, shares=ALL_CPU, cores=2.0) == pytest.approx(0.010, rel=1e-3)
    # A worker half on the CPU (10 ms a batch, 5 of them waiting) beside a 10 ms step on one core: while both run
    # each CPU part gets 2/3 of the core (the worker then takes 12.5 ms a batch); the step then runs alone for
    # the rest of the period P: 2/3 x 12.5 + (P - 12.5) = 10 ms of step work, P = 14.17 ms.
    assert period(1, 8, 0.010, 0.0, 0.010, shares=(0.5, 1.0, 1.0), cores=1.0) == pytest.approx(
        0.0125 + 0.010 - 0.0125 * 2 / 3, rel=3e-3
    )


def test_the_shared_play_with_cores_to_spare_is_the_plain_play() -> None:
    rng = np.random.default_rng(3)
    ws, ms, ss = (list(mean * rng.uniform(0.5, 1.5, 1200)) for mean in (0.009, 0.001, 0.0035))
    for workers, depth in ((1, 2), (2, 4), (3, 12)):
        assert _play_shared(workers, depth, ws, ms, ss, ALL_CPU, float("inf")) == pytest.approx(_play(workers, depth, ws, ms, ss))


def test_no_workers_is_not_a_pipeline() -> None:
    with pytest.raises(ValueError, match="workers must be 1 or more, got 0"):
        periods(0, 0, np.array(0.01), np.array(0.0), np.array(0.01))
    with pytest.raises(ValueError, match="batches must be more than the 200 left out while the queues fill, got 50"):
        periods(1, 2, np.array(0.01), np.array(0.0), np.array(0.01), batches=50)
    with pytest.raises(
        ValueError, match=r"cores must be more than 0 and the CPU shares 0 or more, got 0.0 and \(1.0, 1.0, 1.0\)"
    ):
        periods(1, 2, np.array(0.01), np.array(0.0), np.array(0.01), shares=ALL_CPU, cores=0.0)
    with pytest.raises(ValueError, match=r"got 2.0 and \(-0.5, 1.0, 1.0\)"):
        periods(1, 2, np.array(0.01), np.array(0.0), np.array(0.01), shares=(-0.5, 1.0, 1.0), cores=2.0)


def test_a_shape_is_the_distribution_over_its_mean() -> None:
    rng = np.random.default_rng(1)
    values = rng.gamma(4.0, 0.002, 500)
    shape = shape_of(values)
    assert len(shape) == QUANTILES and list(shape) == sorted(shape)
    assert np.mean(shape) == pytest.approx(1.0)
    assert shape[-1] / shape[0] == pytest.approx(np.quantile(values, 0.99) / np.quantile(values, 0.01))
    assert shape_of([0.001] * 7) == ()  # too few to say
    assert shape_of([0.0] * 20) == ()
    assert shape_of([0.002] * 20 + [float("nan")]) == tuple([1.0] * QUANTILES)
    # In pieces (a run's trials, single-precision arrays among them) as pooled, and the pieces left as they were.
    first, second = array("f", values[:200]), values[200:].copy()
    assert shape_of(first, second) == pytest.approx(shape, rel=1e-6)
    assert list(first) == list(array("f", values[:200])) and np.array_equal(second, values[200:])
