"""The plan, as data: the modes and their counts or ``auto`` bounds, the windows' lengths, the extras enabled."""

from __future__ import annotations

from benchy import Mode, Schedule, load_config
from benchy.core.schedule import FIRST_ROUNDS, FIRST_WINDOW, GROWTH, Extra, ModePlan


def plan(**overrides) -> Schedule:
    return Schedule.from_config(load_config(overrides=overrides, environ={}))


def test_the_default_plan_is_anytime() -> None:
    s = plan()
    assert s.modes == (Mode.IO, Mode.SYNTHETIC, Mode.FULL)
    assert s.adaptive and s.stops_early and s.decision_confidence == 0.99
    for p in s.plans:
        assert (p.nwarmup, p.ntrials, p.nbatches, p.max_trials, p.max_warmup) == (None, None, 50, 8, 4)
        assert p.first == FIRST_WINDOW and p.growth == GROWTH
    assert s.extras == tuple(Extra)  # every extra enabled by default (each says itself when it cannot run)
    assert s.horizon is None


def test_auto_windows_are_short_first_and_grow_to_nbatches() -> None:
    p = plan().plan(Mode.SYNTHETIC)
    assert p is not None
    lengths = [p.length(k) for k in range(14)]
    assert lengths[0] == 8 and lengths == sorted(lengths) and lengths[-1] == 50
    assert all(b <= max(a + 1, round(a * GROWTH + 1)) for a, b in zip(lengths, lengths[1:]))  # growth at most 1.25x
    short = plan(synthetic={"nbatches": 5}).plan(Mode.SYNTHETIC)
    assert short is not None and [short.length(k) for k in range(4)] == [5, 5, 5, 5]


def test_io_trials_and_full_windows_are_whole_rounds_of_the_loader_s_workers() -> None:
    s = plan().with_cycle(8)
    synthetic, full, io = (s.plan(mode) for mode in (Mode.SYNTHETIC, Mode.FULL, Mode.IO))
    assert synthetic is not None and full is not None and io is not None
    assert synthetic.cycle == 1 and [synthetic.length(k) for k in range(3)] == [8, 10, 13]  # no loader in it
    for p in (full, io):
        lengths = [p.length(k) for k in range(10)]
        assert all(n % 8 == 0 for n in lengths) and lengths[0] == FIRST_ROUNDS * 8  # the shortest that can be right
        assert lengths == sorted(lengths) and lengths[-1] == 48  # nbatches 50 to the nearest whole rounds
    assert s.cycle == 8 and s.fingerprint()["FULL.cycle"] == 8
    # More workers than nbatches holds three rounds of: three rounds, past nbatches.
    assert {plan().with_cycle(32).plan(Mode.FULL).length(k) for k in range(5)} == {96}  # type: ignore[union-attr]
    # A fixed count: nbatches to the nearest whole rounds, at least FIRST_ROUNDS.
    fixed = plan(full={"ntrials": 3, "nwarmup": 1}).with_cycle(8).plan(Mode.FULL)
    assert fixed is not None and {fixed.length(k) for k in range(4)} == {48}
    assert plan().with_cycle(1) == plan() and plan().with_cycle(0).cycle == 1


def test_fixed_counts_keep_every_window_nbatches_long() -> None:
    s = plan(full={"ntrials": 2, "nwarmup": 0, "nbatches": 7})
    full = s.plan(Mode.FULL)
    assert full is not None and [full.length(k) for k in range(3)] == [7, 7, 7]
    assert (full.fewest_trials, full.most_trials, full.fewest_warmups, full.most_warmups) == (2, 2, 0, 0)
    assert not plan(**{m: {"ntrials": 3, "nwarmup": 1} for m in ("IO", "synthetic", "full")}).adaptive


def test_disabled_modes_and_extras_follow_the_config() -> None:
    s = plan(synthetic={"run_benchmark": False})
    assert s.modes == (Mode.IO, Mode.FULL)
    # PARTS, CONTENTION, the FLOPs' count and the emulated check need SYNTHETIC's cached batch and step.
    assert s.extras == (Extra.STAGES, Extra.H2D)
    off = plan(**{"global": {"whatif": False, "flops": False, "stages": False, "io_h2d": False}})
    assert off.extras == ()


def test_auto_counts_state_their_bounds() -> None:
    s = plan(**{"global": {"auto_max_trials": 6, "auto_max_warmup": 3}})
    assert s.windows_needed == 2 * (3 + 6) and s.windows_fewest == 2 * (1 + 2)


def test_profiler_torch_marks_the_captured_kinds() -> None:
    s = plan(**{"global": {"profiler": "torch", "profiler_capture": ["IO", "FULL"]}})
    assert [p.mode for p in s.plans if p.profiled] == [Mode.IO, Mode.FULL]
    assert s.fingerprint()["FULL.profiled"] is True and s.fingerprint()["SYNTHETIC.profiled"] is False
    assert not any(p.profiled for p in plan(**{"global": {"profiler": "torch", "profiler_mode": "none"}}).plans)


def test_loop_steps_sets_the_horizon_and_shorter_windows_keep_io() -> None:
    assert plan(**{"global": {"loop_steps": 300}}).horizon == 300
    shorter = plan().with_nbatches(8)
    assert [p.nbatches for p in shorter.plans] == [50, 8, 8]  # IO runs on benchy's own passes: as it was
    assert all(p.first <= p.nbatches for p in shorter.plans)
    assert ModePlan(Mode.FULL, 10, 1, 2, 4, 8, first=8, growth=1.25).length(5) == 10
