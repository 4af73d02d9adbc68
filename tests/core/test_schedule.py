"""Schedule: hidden IO first, then the SYNTHETIC and FULL windows back to back: warm-ups, then S F F S ..."""

from __future__ import annotations

from benchy import Mode, Schedule, load_config


def labels(specs) -> list:
    return [s.label for s in specs]


def test_default_schedule() -> None:
    s = Schedule.from_config(load_config(environ={}))
    assert labels(s.hidden) == ["IO_WARMUP_1", "IO_1", "IO_2", "IO_3"]
    assert labels(s.windows) == [
        "SYNTHETIC_WARMUP_1",
        "FULL_WARMUP_1",
        "SYNTHETIC_1",
        "FULL_1",
        "FULL_2",
        "SYNTHETIC_2",
        "SYNTHETIC_3",
        "FULL_3",
    ]
    assert s.windows_needed == 8 and s.windows_fewest == 8 and not s.adaptive
    assert s.decision_confidence == 0.95
    assert s.modes == (Mode.IO, Mode.SYNTHETIC, Mode.FULL)


def test_disabled_modes_are_skipped_and_counts_follow_config() -> None:
    cfg = load_config(
        overrides={"synthetic": {"run_benchmark": False}, "full": {"ntrials": 2, "nwarmup": 0, "nbatches": 7}}, environ={}
    )
    s = Schedule.from_config(cfg)
    assert labels(s.windows) == ["FULL_1", "FULL_2"]
    assert all(spec.nbatches == 7 for spec in s.windows)
    assert s.windows_needed == 2
    assert s.modes == (Mode.IO, Mode.FULL)


def test_io_only_needs_one_epoch() -> None:
    cfg = load_config(overrides={"synthetic": {"run_benchmark": False}, "full": {"run_benchmark": False}}, environ={})
    s = Schedule.from_config(cfg)
    assert s.windows == () and s.windows_needed == 0 and s.steps_needed() == 0
    assert "on a pass of its own" in s.describe()


def test_interleaving_cancels_a_linear_drift_over_each_block_of_four() -> None:
    cfg = load_config(overrides={"synthetic": {"ntrials": 4, "nwarmup": 0}, "full": {"ntrials": 4, "nwarmup": 0}}, environ={})
    order = labels(Schedule.from_config(cfg).windows)
    assert order == ["SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2", "SYNTHETIC_3", "FULL_3", "FULL_4", "SYNTHETIC_4"]
    # Mean epoch position of each mode is the same: a drift linear in epochs hits both alike.
    syn = [k for k, label in enumerate(order) if label.startswith("SYN")]
    full = [k for k, label in enumerate(order) if label.startswith("FULL")]
    assert sum(syn) == sum(full)


def test_unequal_counts_finish_with_the_longer_mode() -> None:
    cfg = load_config(overrides={"synthetic": {"ntrials": 1, "nwarmup": 0}, "full": {"ntrials": 3, "nwarmup": 0}}, environ={})
    assert labels(Schedule.from_config(cfg).windows) == ["SYNTHETIC_1", "FULL_1", "FULL_2", "FULL_3"]


def test_auto_counts_state_their_bounds() -> None:
    cfg = load_config(
        overrides={
            "global": {"auto_max_trials": 6, "auto_max_warmup": 3},
            "IO": {"ntrials": "auto"},
            "synthetic": {"ntrials": "auto", "nwarmup": "auto"},
            "full": {"ntrials": "auto", "nwarmup": "auto"},
        },
        environ={},
    )
    s = Schedule.from_config(cfg)
    assert s.adaptive and s.decision_confidence == 0.99
    assert s.windows_needed == 2 * (3 + 6) and s.windows_fewest == 2 * (1 + 2)
    assert "SYNTHETIC auto (1 to 3) warm-up + auto (2 to 6) x 50 batches" in s.describe()


def test_profiler_torch_adds_one_profiled_warmup_after_the_captured_kinds_warmups() -> None:
    cfg = load_config(overrides={"global": {"profiler": "torch", "profiler_capture": ["IO", "FULL"]}}, environ={})
    s = Schedule.from_config(cfg)
    assert labels(s.hidden) == ["IO_WARMUP_1", "IO_WARMUP_2", "IO_1", "IO_2", "IO_3"]
    assert [spec.profiled for spec in s.hidden] == [False, True, False, False, False]
    assert labels(s.windows)[:3] == ["SYNTHETIC_WARMUP_1", "FULL_WARMUP_1", "FULL_WARMUP_2"]
    assert [spec.label for spec in s.windows if spec.profiled] == ["FULL_WARMUP_2"]
    assert s.windows_needed == 9  # one window more than the default schedule's 8
    assert "FULL 1 warm-up + 1 profiled warm-up + 3 x 50 batches" in s.describe()
    assert s.fingerprint()["FULL.profiled"] is True and s.fingerprint()["SYNTHETIC.profiled"] is False
    # No rank profiles (profiler_mode: none): no extra warm-up either.
    off = load_config(overrides={"global": {"profiler": "torch", "profiler_mode": "none"}}, environ={})
    assert Schedule.from_config(off).windows_needed == 8


def test_steps_needed_covers_the_windows_their_lead_ins_and_the_epochs_they_span() -> None:
    s = Schedule.from_config(load_config(environ={}))
    # 8 windows of 50 steps, the 2 diagnostic windows of 25, the FLOPs' two untimed steps and the first
    # epoch's first period.
    assert s.diagnostics == ("CONTENTION", "PARTS") and s.diagnostic_steps == 25
    assert s.steps_needed() == 8 * 50 + 2 * 25 + 3
    off = Schedule.from_config(load_config(overrides={"global": {"whatif": False}}, environ={}))
    assert off.diagnostics == () and off.steps_needed() == 8 * 50 + 3
    # 2 workers x prefetch 2 = 4 ready batches taken before each of the 4 FULL windows.
    assert s.steps_needed(queue_depth=4) == 8 * 50 + 2 * 25 + 3 + 4 * 4
    # Epochs of 24 batches: 24 - 2 - 4 = 18 measurable a epoch; each epoch after the first costs 2 + 4 more.
    base = 8 * 50 + 2 * 25 + 3 + 16
    crossings = -(-base // 18) - 1
    steps = s.steps_needed(queue_depth=4, epoch_length=24)
    assert steps == base + crossings * 6
    assert Schedule.epochs_for(steps, 24) == -(-steps // 24) and Schedule.epochs_for(steps, None) is None
    # A longer epoch than the whole schedule: one epoch, whatever its length.
    assert Schedule.epochs_for(s.steps_needed(epoch_length=10_000), 10_000) == 1
    fewest = Schedule.from_config(
        load_config(overrides={"synthetic": {"ntrials": "auto"}, "full": {"ntrials": "auto"}}, environ={})
    )
    assert fewest.steps_needed(longest=False) < fewest.steps_needed()


def test_an_epoch_must_run_past_its_left_out_periods_and_ready_batches_to_hold_a_window() -> None:
    # Without workers an epoch's first period and the one its end cuts are left out: 3 steps measure one period.
    assert Schedule.min_epoch_steps(0) == 3
    # With 2 workers x prefetch_factor 2, the 4 ready batches and the one the epoch's first ask fetched go first.
    assert Schedule.min_epoch_steps(4) == 7


def test_the_windows_that_fit_a_run_are_the_longest_whose_steps_it_holds() -> None:
    schedule = Schedule.from_config(load_config(environ={}))  # windows of 50
    assert schedule.with_nbatches(50) == schedule
    shorter = schedule.with_nbatches(8)
    assert [p.nbatches for p in shorter.plans] == [50, 8, 8]  # IO runs on benchy's own passes: as it was
    for steps, epoch in ((120, 12), (300, 24), (300, None)):
        found = schedule.nbatches_to_fit(steps, 0, epoch)
        assert found is not None and 5 <= found < 50
        assert (
            schedule.with_nbatches(found).steps_needed(0, epoch)
            <= steps
            < schedule.with_nbatches(found + 1).steps_needed(0, epoch)
        )
    assert schedule.nbatches_to_fit(20, 0, 12) is None  # not even windows of 5 fit in 20 steps
    assert schedule.nbatches_to_fit(10**6, 0, 12) == 49  # shorter than its own, at the most
