"""The stage analysis on made-up records (pure): shares, workers, order, advice, first pass."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pytest

from benchy.core.stages import FirstPass, Fix, FixKind, Stage, StageKind, StageTrial, analyse, stage_fix
from benchy.results.text import reports


def fix_text(report: object) -> str:
    """The stage trials' advice in words (empty: none)."""
    advice = getattr(report, "advice", None)
    return "" if advice is None else advice.words()


def trial(
    ends: Sequence[float],
    workers: Sequence[int],
    *,
    work: Optional[Sequence[Sequence[float]]] = None,
    asked: Optional[Sequence[float]] = None,
    got: Optional[Sequence[float]] = None,
    starts=None,
    n_workers: int = 2,
    seconds: Optional[float] = None,
    warmup: bool = False,
    names=("transform Crop",),
    cpu: Optional[Sequence[float]] = None,
) -> StageTrial:
    n = len(ends)
    end = np.asarray(ends, dtype=float)
    start = np.asarray(starts, dtype=float) if starts is not None else end - 0.01
    got_ = np.asarray(got, dtype=float) if got is not None else end + 0.001
    asked_ = np.asarray(asked, dtype=float) if asked is not None else got_ - 0.002
    w = np.asarray(work if work is not None else [[0.006, 0.002, 0.002]] * n, dtype=float)
    return StageTrial(
        label="STAGES_1",
        warmup=warmup,
        seconds=seconds if seconds is not None else float(n) * 0.005,
        samples=4 * n,
        names=tuple(names),
        asked=asked_,
        got=got_,
        worker=np.asarray(workers),
        start=start,
        end=end,
        work=w,
        dataset_cpu=np.asarray(cpu if cpu is not None else w[:, 0]),
        received=np.full((n, 2), np.nan),
        pinned=np.full((n, 2), np.nan),
        items=np.full(n, 4),
        sampler_seconds=0.0,
        workers=n_workers,
        pin_memory=False,
    )


def test_worker_stages_are_shares_of_the_workers_time() -> None:
    # 10 batches in 0.05 s (a 5 ms period), 2 workers; per batch __getitem__ 6 ms of which the
    # transform 2 ms, collate 2 ms: dataset 4 / (2 x 5) = 40 %, transform 20 %, collate 20 %.
    ends = [0.005 * (k + 1) for k in range(10)]
    report = analyse([trial(ends, [k % 2 for k in range(10)])])
    assert report is not None
    shares = {s.name: s.share for s in report.stages}
    assert shares["dataset"] == pytest.approx(0.4)
    assert shares["transform Crop"] == pytest.approx(0.2)
    assert shares["collate_fn"] == pytest.approx(0.2)
    assert report.worker_busy == pytest.approx(0.8)
    assert report.unexplained == pytest.approx(0.2)
    assert report.largest is not None and report.largest.name == "dataset"


def test_without_workers_the_stages_and_the_rest_make_the_period() -> None:
    ends = [0.01 * (k + 1) for k in range(4)]
    found = trial(ends, [-1] * 4, n_workers=0, seconds=0.04, work=[[0.006, 0.002, 0.002]] * 4)
    report = analyse([found])
    assert report is not None and report.worker_busy is None and report.per_worker == []
    shares = {s.name: s.share for s in report.stages}
    assert shares["dataset"] == pytest.approx(0.4) and shares["collate_fn"] == pytest.approx(0.2)
    assert report.unexplained == pytest.approx(1 - 0.4 - 0.2 - 0.2)
    assert {s.where for s in report.stages} == {"main"}


def test_a_worker_twice_as_slow_a_batch_is_named() -> None:
    ends = [0.01 * (k + 1) for k in range(8)]
    starts = [e - (0.004 if k % 2 == 0 else 0.010) for k, e in enumerate(ends)]
    report = analyse([trial(ends, [k % 2 for k in range(8)], starts=starts)])
    slow = report.straggler if report is not None else None
    assert slow is not None and slow.worker == 1 and slow.ratio == pytest.approx(2.5)
    assert slow.seconds == pytest.approx(0.010) and slow.typical == pytest.approx(0.004)
    assert [w.batches for w in report.per_worker] == [4, 4]
    assert report.per_worker[1].per_batch == pytest.approx(0.010)


def test_a_later_batch_ready_first_is_out_of_order_and_the_wait_behind_it_is_head_of_line() -> None:
    # Batch 0 is ready at 30 ms, batch 1 at 10 ms; the loop asked for batch 0 at 5 ms: from 10 ms
    # to 30 ms it waited for batch 0 with batch 1 ready (20 ms of the trial's 100 ms).
    report = analyse(
        [
            trial(
                [0.030, 0.010, 0.040, 0.050],
                [0, 1, 0, 1],
                asked=[0.005, 0.031, 0.032, 0.041],
                got=[0.031, 0.032, 0.041, 0.051],
                starts=[0.0, 0.0, 0.031, 0.040],
                seconds=0.1,
            )
        ]
    )
    assert report is not None
    assert report.out_of_order == 1
    assert report.hol_share == pytest.approx(0.2)


def test_advice_more_workers_only_when_they_are_busy_and_cores_are_free() -> None:
    ends = [0.005 * (k + 1) for k in range(10)]
    busy = [[0.008, 0.001, 0.001]] * 10  # 10 ms a batch over 2 workers x 5 ms: busy 100 %
    found = analyse([trial(ends, [k % 2 for k in range(10)], work=busy)], free_cores=2.0)
    assert found is not None and found.advice is not None and found.advice.kind is FixKind.MORE_WORKERS
    assert fix_text(found).startswith("more loader workers: the 2 workers are busy 90 % of the time and 2.0 cores are free")
    none_free = analyse([trial(ends, [k % 2 for k in range(10)], work=busy)], free_cores=0.2)
    assert none_free is not None and none_free.advice == stage_fix(none_free.largest)


def test_advice_in_order_false_for_head_of_line_waits_where_torch_has_it() -> None:
    args = dict(
        asked=[0.005, 0.031, 0.032, 0.041], got=[0.031, 0.032, 0.041, 0.051], starts=[0.0, 0.0, 0.031, 0.040], seconds=0.1
    )
    with_it = analyse([trial([0.030, 0.010, 0.040, 0.050], [0, 1, 0, 1], **args)], in_order=True)
    without = analyse([trial([0.030, 0.010, 0.040, 0.050], [0, 1, 0, 1], **args)], in_order=False)
    assert with_it is not None and with_it.advice is not None and with_it.advice.kind is FixKind.OUT_OF_ORDER
    assert "in_order=False" in fix_text(with_it)
    assert without is not None and "in_order" not in fix_text(without)


@pytest.mark.parametrize(
    "stage, fix, words",
    [
        (
            Stage(StageKind.TRANSFORM, "workers", 0.01, 0.5, step="transform RandomResizedCrop"),
            FixKind.TRANSFORM,
            "a cheaper RandomResizedCrop",
        ),
        (Stage(StageKind.COLLATE, "workers", 0.01, 0.5), FixKind.COLLATE, "vectorised collate_fn"),
        (Stage(StageKind.RECEIVE, "main", 0.01, 0.5), FixKind.RECEIVE_CPU, "uint8 instead of float"),
        (Stage(StageKind.RECEIVE, "main", 0.01, 0.5, off_cpu=0.8), FixKind.RECEIVE, "let go of the GIL"),
        (Stage(StageKind.PIN, "main", 0.01, 0.5), FixKind.PIN, "pin_memory=False"),
        (Stage(StageKind.SAMPLER, "main", 0.01, 0.5), FixKind.SAMPLER, "cheaper sampler"),
    ],
)
def test_each_stage_points_to_its_fix(stage: Stage, fix: FixKind, words: str) -> None:
    found = stage_fix(stage)
    assert found.kind is fix and words in found.words()


def test_the_dataset_stage_fix_depends_on_whether_it_waits() -> None:
    assert stage_fix(Stage(StageKind.DATASET, "workers", 0.01, 0.5, off_cpu=0.1)) == Fix(FixKind.DATASET)
    assert "decoding on the accelerator" in Fix(FixKind.DATASET).words()
    assert stage_fix(Stage(StageKind.DATASET, "workers", 0.01, 0.5, off_cpu=0.9)) == Fix(FixKind.WAITS)
    assert "storage" in Fix(FixKind.WAITS).words()
    ends = [0.005 * (k + 1) for k in range(4)]
    report = analyse([trial(ends, [0, 1, 0, 1], cpu=[0.001] * 4)])  # 6 ms __getitem__, 1 ms on the CPU
    assert report is not None and report.stages[0].off_cpu == pytest.approx(5 / 6)


def test_warm_ups_are_left_out_and_their_throughput_kept_as_the_first_pass() -> None:
    ends = [0.005 * (k + 1) for k in range(4)]
    first = trial(ends, [0, 1, 0, 1], seconds=0.2, warmup=True)
    report = analyse([first, trial(ends, [0, 1, 0, 1])])
    assert report is not None and report.batches == 4 and report.first_throughput == pytest.approx(16 / 0.2)
    assert analyse([first]) is None


def test_a_warm_page_cache_is_told_when_the_loader_read_files_but_not_storage() -> None:
    warm = FirstPass(first=100.0, steady=400.0, files_read=50e6, storage_read=0.0)
    text = "; ".join(reports.first_pass(warm))
    assert warm.warm_cache and "warm page cache" in text and "drop_caches" in text
    assert warm.ratio == pytest.approx(0.25)
    assert not FirstPass(first=100.0, steady=400.0, files_read=50e6, storage_read=40e6).warm_cache
    assert not FirstPass(first=100.0, steady=400.0, files_read=1e3, storage_read=0.0).warm_cache  # it reads no files
    assert not FirstPass(first=100.0, steady=400.0, files_read=None, storage_read=None).warm_cache


def test_the_timers_share_of_the_period_is_said() -> None:
    ends = [0.005 * (k + 1) for k in range(10)]
    report = analyse([trial(ends, [k % 2 for k in range(10)])])  # 4 samples a batch, 5 ms period, 2 workers
    assert report is not None and report.timer_share is None
    report.instrumentation = 2e-6
    assert report.timer_share == pytest.approx(4 * 2e-6 / (2 * 0.005))
    from benchy.core.results import RunResults
    from benchy.results.schema import stages_block

    block = stages_block(RunResults(stages=report))
    assert block is not None and block.instrumentation_share == pytest.approx(0.0008)


def test_the_copy_to_the_device_joins_the_stages_line_where_io_h2d_ran() -> None:
    from helpers import trial_result

    from benchy.core.results import RunResults
    from benchy.core.schedule import Mode
    from benchy.results.summary import copy_text

    ends = [0.005 * (k + 1) for k in range(10)]
    report = analyse([trial(ends, [k % 2 for k in range(10)])])  # 4 samples a batch, a 5 ms period
    assert report is not None
    results = RunResults([trial_result(Mode.IO, k, 800, 1.0) for k in (1, 2)])  # 800 samples/s: 5 ms a batch of 4
    assert copy_text(results, report) == []
    results = results.changed(
        h2d=tuple(trial_result(Mode.IO, k, 400, 1.0, variant="H2D") for k in (1, 2)), h2d_device="cuda:0"
    )  # 10 ms a batch
    assert copy_text(results, report) == ["the copy to cuda:0 adds 5.000 ms a batch (100 % of the period; IO_H2D against IO)"]


def test_the_first_pass_is_io_1_against_the_later_trials_without_io_warm_ups() -> None:
    from helpers import trial_result

    from benchy.core.results import RunResults
    from benchy.core.schedule import Mode
    from benchy.core.verdict import first_pass

    results = RunResults(
        [trial_result(Mode.IO, 1, 100, 1.0), trial_result(Mode.IO, 2, 400, 1.0), trial_result(Mode.IO, 3, 500, 1.0)]
    )
    found = first_pass(results)
    assert found is not None and found.label == "IO_1" and found.first == 100 and found.steady == 450
    assert "(IO_1: start-up" in reports.first_pass(found)[0]
    results = RunResults((trial_result(Mode.IO, 1, 50, 1.0, warmup=True), *results.trials))
    found = first_pass(results)
    assert found is not None and found.label == "IO_WARMUP_1" and found.steady == pytest.approx(1000 / 3)
    results = RunResults(results.trials[:2])
    assert first_pass(results).label == "IO_WARMUP_1"  # type: ignore[union-attr]
    results = RunResults([trial_result(Mode.IO, 1, 100, 1.0)])
    assert first_pass(results) is None


def test_advice_workers_at_all_when_the_loading_runs_on_the_training_thread_beside_free_cores() -> None:
    ends = [0.01 * (k + 1) for k in range(4)]
    found = trial(ends, [-1] * 4, n_workers=0, seconds=0.04)
    assert "loader workers (num_workers > 0" in fix_text(analyse([found], free_cores=1.8))
    report = analyse([found], free_cores=0.1)  # no core to spare: the largest stage's fix
    assert report is not None and report.advice == stage_fix(report.largest)
