"""The per-step distribution: percentiles, stalls and periodic stalls (pure, exact)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import trial_result

from benchy import Mode
from benchy.core.distribution import step_profile
from benchy.core.results import TrialResult
from benchy.results.summary import steps_text


def trial(periods, index: int = 1) -> TrialResult:
    return trial_result(Mode.FULL, index, 8 * len(periods), sum(periods), periods=periods)


def test_periodic_stalls_every_num_workers_steps_name_a_starved_worker_pool() -> None:
    periods = [0.034 if k % 4 == 0 else 0.002 for k in range(40)]  # 4 workers, a round every 40 ms
    profile = step_profile([trial(periods), trial(periods, 2)])
    assert profile is not None
    assert profile.steps == 80 and profile.stalls == 20 and profile.stall_period == 4
    assert profile.p50 == pytest.approx(0.002) and profile.p99 == pytest.approx(0.034)
    assert profile.stall_share == pytest.approx(10 * 0.034 / (10 * 0.034 + 30 * 0.002))
    assert steps_text(Mode.FULL, profile, workers=4) == (
        "FULL step time p50 2.000 ms, p90 34.000 ms, p99 34.000 ms over 80 steps; 20 stall(s) (steps over 3x the "
        "median) took 85.0 % of the time, every 4 steps with 4 loader workers: the sign of a "
        "starved worker pool (each worker takes longer than 4 steps to make a batch; more workers or cheaper "
        "batches help)"
    )
    assert steps_text(Mode.FULL, profile, workers=2).endswith(
        "took 85.0 % of the time, periodic: every 4 steps (the loader has 2 workers)"
    )


def test_scattered_stalls_are_counted_but_not_called_periodic() -> None:
    periods = [0.01] * 60
    for k in (3, 4, 11, 30, 52):
        periods[k] = 0.06
    profile = step_profile([trial(periods)])
    assert profile is not None and profile.stalls == 5 and profile.stall_period is None
    assert steps_text(Mode.FULL, profile).endswith("5 stall(s) (steps over 3x the median) took 35.3 % of the time")  # 0.3 / 0.85


def test_steady_steps_have_no_stalls_and_no_trials_no_profile() -> None:
    profile = step_profile([trial([0.01, 0.011, 0.012, 0.029] * 5)])
    assert profile is not None and profile.stalls == 0 and profile.stall_share == 0.0
    assert steps_text(Mode.FULL, profile).endswith("; no stalls (steps over 3x the median)")
    assert step_profile([]) is None


@pytest.mark.parametrize("cycle", [[2, 2, 12, 22], [3, 3, 3, 31], [2, 15, 22, 2, 2, 2, 2, 2]])
def test_a_round_of_workers_finishing_apart_is_still_periodic(cycle) -> None:
    # Measured with 4 sleeping workers on the 2-core VM: the round arrives as one or two long waits.
    periods = [ms / 1000 for ms in cycle * 6]
    profile = step_profile([trial(periods), trial(periods[1:] + periods[:1], 2)])
    assert profile is not None and profile.stall_period == len(cycle) and profile.stalls >= 2 * 6


def test_a_slow_stretch_is_not_periodic() -> None:
    periods = [0.01] * 20 + [0.05] * 10 + [0.01] * 30
    profile = step_profile([trial(periods)])
    assert profile is not None and profile.stalls == 10 and profile.stall_period is None


def test_the_slowest_rank_is_one_definition_for_listed_and_reduced_ranks() -> None:
    from helpers import trial_result

    from benchy.core.results import RankSummary, RunResults
    from benchy.core.schedule import Mode

    # Listed ranks: against the median rank (a real rank: the faster of the two middle ones with an even count).
    listed = RunResults([trial_result(Mode.FULL, k, rank_seconds=(1.0, 1.3, 1.0, 1.05)) for k in (1, 2)])
    found = listed.straggler(Mode.FULL)
    assert found is not None and found.rank == 1 and not found.summarised
    assert found.basis == pytest.approx(1.0) and found.slower == pytest.approx(0.3)
    assert RunResults([trial_result(Mode.FULL, 1, rank_seconds=(1.0, 1.05))]).straggler(Mode.FULL) is None

    # Reduced ranks (past dist_rank_lists): the rank slowest in most trials, against the ranks' mean there.
    def reduced(slowest: int, slow: float) -> RankSummary:
        return RankSummary(
            ranks=100,
            slowest=slowest,
            slowest_seconds=slow,
            fastest=0,
            fastest_seconds=0.9,
            mean_seconds=1.0,
            own_samples=8,
            own_seconds=1.0,
        )

    summaries = [reduced(7, 1.4), reduced(7, 1.2), reduced(3, 1.5)]
    results = RunResults([trial_result(Mode.IO, k, rank_summary=s) for k, s in enumerate(summaries, 1)])
    found = results.straggler(Mode.IO)
    assert found is not None and found.rank == 7 and found.summarised and (found.slowest_in, found.trials) == (2, 3)
    assert found.slower == pytest.approx(0.3) and found.ranks == 100


@pytest.mark.parametrize("seed", range(6))
def test_percentiles_of_pooled_trials_are_numpy_s_without_pooling(seed: int) -> None:
    from benchy.core.distribution import percentiles

    rng = np.random.default_rng(seed)
    arrays = [rng.gamma(2.0, 0.01, int(rng.integers(1, 400))).astype(np.float32) for _ in range(int(rng.integers(1, 4)))]
    if seed == 1:
        arrays.append(np.array([0.0, -0.0, -1e-6, 0.0], dtype=np.float32))  # zeros of both signs, a negative period
    if seed == 2:
        arrays = [np.full(50, 0.02, dtype=np.float32), np.full(3, 0.5, dtype=np.float32)]  # ties
    if seed == 3:
        arrays[0][::7] = np.nan  # left out, as numpy's nanpercentile does
    levels = (0, 1, 50, 90, 99, 100)
    pooled = np.concatenate(arrays)  # a copy: the arrays below are the ones read
    assert percentiles(arrays, levels) == pytest.approx(list(np.nanpercentile(pooled.astype(np.float64), levels)), rel=1e-6)
    assert np.array_equal(np.concatenate(arrays), pooled, equal_nan=True)  # nothing reordered: views of a run's series
