"""Schedule: hidden IO first, then one SYNTHETIC or FULL trial per epoch: warm-ups, then S F F S ..."""

from __future__ import annotations

from benchy import Mode, Schedule, load_config


def labels(specs) -> list:
    return [s.label for s in specs]


def test_default_schedule() -> None:
    s = Schedule.from_config(load_config(environ={}))
    assert labels(s.hidden) == ["IO_WARMUP_1", "IO_1", "IO_2", "IO_3"]
    assert labels(s.per_epoch) == [
        "SYNTHETIC_WARMUP_1", "FULL_WARMUP_1",
        "SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2", "SYNTHETIC_3", "FULL_3",
    ]
    assert s.epochs_needed == 8 and s.epochs_fewest == 8 and not s.adaptive
    assert s.decision_confidence == 0.95
    assert s.modes == (Mode.IO, Mode.SYNTHETIC, Mode.FULL)


def test_disabled_modes_are_skipped_and_counts_follow_config() -> None:
    cfg = load_config(overrides={"synthetic": {"run_benchmark": False}, "full": {"ntrials": 2, "nwarmup": 0, "nbatches": 7}},
                      environ={})
    s = Schedule.from_config(cfg)
    assert labels(s.per_epoch) == ["FULL_1", "FULL_2"]
    assert all(spec.nbatches == 7 for spec in s.per_epoch)
    assert s.epochs_needed == 2
    assert s.modes == (Mode.IO, Mode.FULL)


def test_io_only_needs_one_epoch() -> None:
    cfg = load_config(overrides={"synthetic": {"run_benchmark": False}, "full": {"run_benchmark": False}}, environ={})
    s = Schedule.from_config(cfg)
    assert s.per_epoch == () and s.epochs_needed == 1
    assert "before epoch 1" in s.describe()


def test_interleaving_cancels_a_linear_drift_over_each_block_of_four() -> None:
    cfg = load_config(overrides={"synthetic": {"ntrials": 4, "nwarmup": 0}, "full": {"ntrials": 4, "nwarmup": 0}},
                      environ={})
    order = labels(Schedule.from_config(cfg).per_epoch)
    assert order == ["SYNTHETIC_1", "FULL_1", "FULL_2", "SYNTHETIC_2", "SYNTHETIC_3", "FULL_3", "FULL_4", "SYNTHETIC_4"]
    # Mean epoch position of each mode is the same: a drift linear in epochs hits both alike.
    syn = [k for k, label in enumerate(order) if label.startswith("SYN")]
    full = [k for k, label in enumerate(order) if label.startswith("FULL")]
    assert sum(syn) == sum(full)


def test_unequal_counts_finish_with_the_longer_mode() -> None:
    cfg = load_config(overrides={"synthetic": {"ntrials": 1, "nwarmup": 0}, "full": {"ntrials": 3, "nwarmup": 0}},
                      environ={})
    assert labels(Schedule.from_config(cfg).per_epoch) == ["SYNTHETIC_1", "FULL_1", "FULL_2", "FULL_3"]


def test_auto_counts_state_their_bounds() -> None:
    cfg = load_config(overrides={"global": {"auto_max_trials": 6, "auto_max_warmup": 3},
                                 "IO": {"ntrials": "auto"}, "synthetic": {"ntrials": "auto", "nwarmup": "auto"},
                                 "full": {"ntrials": "auto", "nwarmup": "auto"}}, environ={})
    s = Schedule.from_config(cfg)
    assert s.adaptive and s.decision_confidence == 0.99
    assert s.epochs_needed == 2 * (3 + 6) and s.epochs_fewest == 2 * (1 + 2)
    assert "SYNTHETIC auto (1 to 3) warm-up + auto (2 to 6) x 50 batches" in s.describe()


def test_profiler_torch_adds_one_profiled_warmup_after_the_captured_kinds_warmups() -> None:
    cfg = load_config(overrides={"global": {"profiler": "torch", "profiler_capture": ["IO", "FULL"]}}, environ={})
    s = Schedule.from_config(cfg)
    assert labels(s.hidden) == ["IO_WARMUP_1", "IO_WARMUP_2", "IO_1", "IO_2", "IO_3"]
    assert [spec.profiled for spec in s.hidden] == [False, True, False, False, False]
    assert labels(s.per_epoch)[:3] == ["SYNTHETIC_WARMUP_1", "FULL_WARMUP_1", "FULL_WARMUP_2"]
    assert [spec.label for spec in s.per_epoch if spec.profiled] == ["FULL_WARMUP_2"]
    assert s.epochs_needed == 9  # one epoch more than the default schedule's 8
    assert "FULL 1 warm-up + 1 profiled warm-up + 3 x 50 batches" in s.describe()
    assert s.fingerprint()["FULL.profiled"] is True and s.fingerprint()["SYNTHETIC.profiled"] is False
    # No rank profiles (profiler_mode: none): no extra warm-up either.
    off = load_config(overrides={"global": {"profiler": "torch", "profiler_mode": "none"}}, environ={})
    assert Schedule.from_config(off).epochs_needed == 8
