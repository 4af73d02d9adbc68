"""Schedule: hidden IO first, then one SYNTHETIC or FULL trial per epoch, warm-ups first."""

from __future__ import annotations

from benchy import Mode, Schedule, load_config


def labels(specs) -> list:
    return [s.label for s in specs]


def test_default_schedule() -> None:
    s = Schedule.from_config(load_config(environ={}))
    assert labels(s.hidden) == ["IO_WARMUP_1", "IO_1", "IO_2", "IO_3"]
    assert labels(s.per_epoch) == [
        "SYNTHETIC_WARMUP_1", "SYNTHETIC_1", "SYNTHETIC_2", "SYNTHETIC_3",
        "FULL_WARMUP_1", "FULL_1", "FULL_2", "FULL_3",
    ]
    assert s.epochs_needed == 8
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
