"""The what-if model's formulas, on hand-made inputs (pure: no clock, no process)."""

from __future__ import annotations

import math
from dataclasses import replace

import msgspec
import numpy as np
import pytest

from benchy.core.diagnostics import ContentionRun
from benchy.core.queues import Shapes
from benchy.core.runinputs import inputs_from
from benchy.core.stages import Stage, StageKind, StageReport, WorkerStat, slowest_worker
from benchy.core.stats import Estimate
from benchy.core.whatif import Basis, Change, Checked, Inputs, Limit, Loader, WhatIf, other_workers, predict, whatif
from benchy.results.schema import whatif_block
from benchy.results.text.reports import check as check_text
from benchy.results.text.reports import whatif as whatif_lines


def whatif_text(w: WhatIf) -> str:
    """The WHATIF lines' texts in one (each prediction is a line of its own)."""
    return "; ".join(whatif_lines(w))


BATCH = 8.0


def inputs(
    workers: int = 2,
    *,
    worker: float = 0.016,
    cpu: float = 0.0,
    main: float = 0.0006,
    plain: float = 0.0001,
    step: float = 0.010,
    step_cores: float = 0.0,
    cores: float = 2.0,
    stages: tuple = (),
    io: tuple = (1000.0, 1000.0, 1000.0),
    slow: float = 1.0,
) -> Inputs:
    return Inputs(
        batch=BATCH,
        workers=workers,
        cores=cores,
        other=0.0,
        io=io,
        step=(step, step, step),
        step_cores=step_cores,
        loader=Loader(worker, cpu, main, plain, 1.0, slow, stages),
        basis=Basis.STAGES,
    )


def test_without_workers_loading_and_the_step_add_up_where_the_naive_minimum_does_not() -> None:
    p = predict(inputs(0), Change(0, 2.0))
    assert p.io[1] == pytest.approx(BATCH / 0.0161)
    assert p.full[1] == pytest.approx(BATCH / (0.0161 + 0.010))
    assert p.limit == Limit.SERIAL.words == "the loading and the step one after the other"
    assert p.naive == pytest.approx(BATCH / 0.0161)  # min(IO, SYNTHETIC): 54 % too high here
    faster = predict(inputs(0), Change(0, 2.0, speedup=4.0))
    assert faster.full[1] == pytest.approx(BATCH / (0.0161 + 0.0025))


def test_with_workers_the_main_process_receives_and_steps_one_after_the_other() -> None:
    p = predict(inputs(2), Change(2, 2.0))
    assert p.io[1] == pytest.approx(BATCH / 0.008)  # the pool: 16 ms / 2 workers
    assert p.full[1] == pytest.approx(BATCH / 0.0106)  # step 10 ms + receive 0.6 ms
    assert p.limit == Limit.STEP.words
    k2 = predict(inputs(2), Change(2, 2.0, speedup=2.0))
    assert k2.full[1] == pytest.approx(BATCH / 0.008) and k2.limit == Limit.WORKERS.words
    four = predict(inputs(2), Change(4, 2.0, speedup=2.0))
    assert four.full[1] == pytest.approx(BATCH / 0.0056)


def test_cpu_work_is_bounded_by_the_cores_the_workers_and_the_step_share() -> None:
    inp = inputs(4, worker=0.012, cpu=1.0, main=0.0005, step=0.008, step_cores=1.0)
    p = predict(inp, Change(4, 2.0))
    assert p.full[1] == pytest.approx(BATCH / ((0.012 + 0.0005 + 0.008) / 2))
    assert p.limit == Limit.CORES.words
    wide = predict(inp, Change(4, 8.0))  # with cores to spare the step limits again
    assert wide.limit == Limit.STEP.words and wide.full[1] == pytest.approx(BATCH / 0.0085)


def test_without_workers_the_line_says_the_loading_runs_between_the_steps() -> None:
    # 4 ms of loading a batch on the training thread, a 10 ms step: loading takes longer than the step from 2.5x.
    w = whatif(inputs(0, worker=0.004, plain=0.0))
    assert w.flip is not None and 2.45 <= w.flip <= 2.6
    assert whatif_text(w).startswith(
        "without workers the loading runs between the steps; it takes longer than the step from a step 2.5x faster"
    )
    # Loading 0.5 ms a batch and half the step outside what a faster accelerator shortens: it never takes longer
    # than the step, yet it is 20 % of FULL's time; the line does not say that loading does not limit FULL.
    w = whatif(replace(inputs(0, worker=0.0005, plain=0.0), step_fixed=0.5, full_wait=0.2))
    said = whatif_text(w)
    assert w.flip is None and "does not limit" not in said
    assert said.startswith(
        "without workers the loading runs between the steps (20 % of FULL's time); it stays shorter than the step "
        "up to a step 20x faster"
    )


def test_the_flip_is_where_the_faster_step_meets_the_workers_pace() -> None:
    w = whatif(inputs(2))
    # 10 ms / k + 0.6 ms = 8 ms at k = 1.351
    assert w.flip is not None and 1.33 <= w.flip <= 1.39
    assert "loading starts to limit FULL at a step 1.4x faster" in whatif_text(w)
    two = next(n for n in w.needs if n.speedup == 2.0)
    # 5 ms + 0.6 ms a step: 16 ms / W within 5 % of that needs W = 3
    assert two.workers == 3 and two.cores == 2.0
    assert "a 2x faster step needs 3 workers" in whatif_text(w)


def test_a_stage_made_free_and_the_in_order_slow_worker() -> None:
    stages = (("dataset", "workers", 0.015), ("collate_fn", "workers", 0.001), ("receive", "main", 0.0006))
    inp = inputs(2, stages=stages, step=0.004)
    free = predict(inp, Change(2, 2.0, free="dataset"))
    assert free.io[1] == pytest.approx(BATCH / 0.0006)  # receive limits then
    slow = predict(inputs(2, slow=1.3, step=0.004), Change(2, 2.0))
    assert slow.io[1] == pytest.approx(BATCH / (1.3 * 0.008))
    assert predict(inputs(2, slow=1.3), Change(1, 2.0)).io[1] == pytest.approx(BATCH / 0.016)  # one worker: no order


def test_the_interval_comes_from_the_measured_ends() -> None:
    inp = Inputs(
        batch=BATCH,
        workers=2,
        cores=2.0,
        other=0.0,
        io=(900.0, 1000.0, 1100.0),
        step=(0.009, 0.010, 0.011),
        step_cores=0.0,
        loader=Loader(0.016, 0.0, 0.0006, 0.0001),
        basis=Basis.STAGES,
    )
    p = predict(inp, Change(2, 2.0))
    assert p.full[0] < p.full[1] < p.full[2]
    # The low end: the slow step and the loader's times 1000/900 as long; the high end the other way.
    assert p.full[0] == pytest.approx(BATCH / (0.011 + 0.0006 * 1000 / 900))
    assert p.full[2] == pytest.approx(BATCH / (0.009 + 0.0006 * 1000 / 1100))
    assert p.io[0] == pytest.approx(900.0 / 1000.0 * BATCH / 0.008) and p.io[2] == pytest.approx(1100.0 / 1000.0 * BATCH / 0.008)


def test_a_check_agrees_within_ten_percent_or_the_intervals() -> None:
    w = whatif(inputs(2), checks=[(Checked.EMULATED, 0, None, "FULL", Change(2, 2.0, 2.0), Estimate(900.0, 10.0, 3))])
    (check,) = w.checks
    assert check.predicted[1] == pytest.approx(1000.0)
    assert check.error == pytest.approx(-0.1) and check.agree is True
    w = whatif(inputs(2), checks=[(Checked.EMULATED, 0, None, "FULL", Change(2, 2.0, 2.0), Estimate(700.0, 10.0, 3))])
    assert w.checks[0].agree is False and "disagree" in check_text(w.checks[0])
    none = whatif(inputs(2), checks=[(Checked.EMULATED, 0, None, "FULL", Change(2, 2.0, 2.0), Estimate(None, None, 0))])
    assert none.checks[0].agree is None and "measured n/a" in check_text(none.checks[0])


def test_the_json_block_has_no_infinity() -> None:
    inp = inputs(2, worker=0.0, main=0.0, plain=0.0)
    text = msgspec.json.encode(whatif_block(whatif(inp)))  # non-finite numbers as null
    for p in msgspec.json.decode(text)["predictions"]:
        assert all(x is None or math.isfinite(x) for x in p["io"] + p["full"])


def test_a_slow_worker_is_named_by_the_throughput_it_costs() -> None:
    # Two workers, one 1.3x slower a batch (the other idle a fifth of the time): in-order delivery takes
    # the batches in turn, so the pool runs at the slow one's pace: a quarter of IO lost, not 3 %.
    report = StageReport(
        period=0.0065,
        throughput=1230,
        batches=100,
        samples=800,
        workers=2,
        stages=[Stage(StageKind.DATASET, "workers", 0.0115, 0.9), Stage(StageKind.RECEIVE, "main", 0.0002, 0.03)],
        unexplained=0.0,
        worker_busy=0.9,
        per_worker=[
            WorkerStat(worker=0, batches=50, busy=0.5, idle=0.13, per_batch=0.010),
            WorkerStat(worker=1, batches=50, busy=0.65, idle=0.0, per_batch=0.013),
        ],
        slowest=slowest_worker(
            [
                WorkerStat(worker=0, batches=50, busy=0.5, idle=0.13, per_batch=0.010),
                WorkerStat(worker=1, batches=50, busy=0.65, idle=0.0, per_batch=0.013),
            ],
            2,
            0.0002,
        ),
        out_of_order=0,
        hol_share=0.03,
        split="",
        in_order=True,
    )
    slow = report.slowest
    assert slow is not None and slow.worker == 1 and slow.ratio == pytest.approx(1.3)
    assert slow.cost == pytest.approx(1 - 1 / 1.3) and report.straggler is slow  # named by what it costs
    assert report.main_seconds == pytest.approx(0.0002)  # receive, the main process's own work a batch
    # The model takes the same worker against the workers' mean time a batch (its own worker time).
    loader = inputs_from(
        batch=8, workers=2, io=Estimate(1230.0, 10.0, 3), synthetic=Estimate(2000.0, 10.0, 3), systems={}, stages=report
    )
    assert loader is not None and loader.loader.slow == pytest.approx(0.013 / 0.0115)
    assert loader.loader.main == pytest.approx(report.main_seconds)


def test_the_time_the_stage_timers_do_not_see_is_added_to_the_workers_from_the_measured_io() -> None:
    from benchy.core.stats import Estimate as E

    report = StageReport(
        period=0.004,
        throughput=2000,
        batches=100,
        samples=800,
        workers=2,
        stages=[
            Stage(StageKind.DATASET, "workers", 0.006, 0.75, off_cpu=0.0),
            Stage(StageKind.RECEIVE, "main", 0.0003, 0.07, off_cpu=0.0),
        ],
        unexplained=0.0,
        worker_busy=0.75,
        per_worker=[],
        slowest=None,
        out_of_order=0,
        hol_share=0.0,
        split="",
        in_order=True,
    )
    systems = {"IO": {"cpu_cores": 4.0, "cpu_cores_busy": 1.2}, "SYNTHETIC": {"cpu_cores": 4.0, "cpu_cores_busy": 1.0}}
    # IO measured 8 / 0.004 = 2000 samples/s: the pool's 6 ms / 2 workers = 3 ms leaves 1 ms a batch unseen,
    # 2 ms in each worker's cycle (its sending of the batch).
    inp = inputs_from(batch=8.0, workers=2, io=E(2000.0, 0.0, 3), synthetic=E(1000.0, 0.0, 3), systems=systems, stages=report)
    assert inp is not None
    assert inp.loader.handover == pytest.approx(0.002) and inp.loader.worker == pytest.approx(0.008)
    assert predict(inp, Change(2, 4.0)).io[1] == pytest.approx(2000.0)
    assert predict(inp, Change(1, 4.0)).io[1] == pytest.approx(1000.0)


def _report(receive: float = 0.0003, **kw: object) -> StageReport:
    return StageReport(
        period=0.004,
        throughput=2000,
        batches=100,
        samples=800,
        workers=2,
        stages=[
            Stage(StageKind.DATASET, "workers", 0.008, 1.0, off_cpu=1.0),
            Stage(StageKind.RECEIVE, "main", receive, 0.07, off_cpu=0.0),
        ],
        unexplained=0.0,
        worker_busy=1.0,
        per_worker=[],
        slowest=None,
        out_of_order=0,
        hol_share=0.0,
        split="",
        in_order=True,
        **kw,  # type: ignore[arg-type]
    )


def test_the_main_process_work_a_batch_is_fulls_wait_where_the_loader_kept_ahead() -> None:
    # The pool: 8 ms / 2 workers = 4 ms a batch; FULL ran at 8 / 800 = 10 ms a batch: the loader kept ahead, so
    # FULL's median wait for a batch (1 ms) is all the main process's own work, of which the stages saw 0.3 ms.
    common = dict(batch=8.0, workers=2, io=Estimate(2000.0, 0.0, 3), synthetic=Estimate(889.0, 0.0, 3), systems={})
    inp = inputs_from(**common, stages=_report(), full=Estimate(800.0, 0.0, 3), full_wait_median=0.001)  # type: ignore[arg-type]
    assert inp is not None and inp.loader.main == pytest.approx(0.001)
    assert inp.loader.main_cpu == pytest.approx(1.0)  # what the stages did not see is taken as CPU work
    assert predict(inp, Change(2, 2.0)).full[1] == pytest.approx(8 / (8 / 889.0 + 0.001))
    # FULL at the loader's pace (8 / 1900: 4.2 ms a batch): its wait is the loader's, not the main process's
    slow = inputs_from(**common, stages=_report(), full=Estimate(1900.0, 0.0, 3), full_wait_median=0.002)  # type: ignore[arg-type]
    assert slow is not None and slow.loader.main == pytest.approx(0.0003)
    # a wait shorter than the receive the stages timed changes nothing
    short = inputs_from(**common, stages=_report(), full=Estimate(800.0, 0.0, 3), full_wait_median=0.0001)  # type: ignore[arg-type]
    assert short is not None and short.loader.main == pytest.approx(0.0003)


def test_the_queue_depth_and_the_measured_shapes_reach_the_model() -> None:
    spread = tuple(float(x) for x in np.linspace(0.5, 1.5, 41))
    common = dict(batch=8.0, workers=2, io=Estimate(2000.0, 0.0, 3), synthetic=Estimate(889.0, 0.0, 3), systems={})
    inp = inputs_from(**common, stages=_report(worker_shape=spread, receive_shape=spread), depth=6, step_shape=spread)  # type: ignore[arg-type]
    assert inp is not None and inp.depth == 6 and inp.prefetch == 3
    assert inp.shapes.worker == spread and inp.shapes.main == spread and inp.shapes.step == spread
    assert replace(inp, depth=0).prefetch == 2  # unknown: torch's default
    assert whatif_block(whatif(inp)).inputs.queue_depth == 6  # type: ignore[union-attr]


def test_where_the_paces_meet_the_queued_prediction_is_below_the_steady_one() -> None:
    spread = tuple(float(x) for x in np.linspace(0.5, 1.5, 41))
    # the pool: 16 ms / 2 = 8 ms a batch; a step 1.35x faster: 7.4 + 0.6 ms. The paces meet.
    inp = replace(inputs(2), shapes=Shapes(spread, spread, spread))
    knee = Change(2, 2.0, speedup=10 / 7.4)
    steady, queued = predict(inp, knee), predict(inp, knee, queued=True)
    assert queued.full[1] < 0.97 * steady.full[1]
    assert queued.limit == steady.limit  # which side limits: the steady model's
    assert all(lo <= mid <= hi for lo, mid, hi in [queued.full, queued.io])
    # with constant times, and far from the knee, the simulation says what the steady model says
    assert predict(inputs(2), knee, queued=True).full[1] == pytest.approx(steady.full[1], rel=1e-6)
    far = Change(2, 2.0)
    assert predict(inp, far, queued=True).full[1] == pytest.approx(predict(inp, far).full[1], rel=0.03)
    # without workers there is no pipeline: the loading and the step add up either way
    assert predict(inp, Change(0, 2.0), queued=True) == predict(inp, Change(0, 2.0))
    # what whatif() lists and checks is the queued prediction
    w = whatif(inp, checks=[(Checked.EMULATED, 0, None, "FULL", knee, Estimate(900.0, 10.0, 3))])
    assert w.checks[0].predicted == queued.full and w.own == predict(inp, Change(2, 2.0), queued=True)
    listed = next(p for p in w.predictions if p.change == Change(2, 2.0, speedup=2.0))
    assert listed == predict(inp, Change(2, 2.0, speedup=2.0), queued=True)


def test_cpu_bound_workers_and_step_that_ask_for_more_cores_than_there_are_share_them_in_the_queued_prediction() -> None:
    # The figures of a run of the what-if benchmark's `cpu` loop (benchmarks/whatif.py, 2 cores): a worker makes a
    # batch in 12.3 ms, all of it on the CPU; the receive 1.3 ms, 31 % of it; the step 8.05 ms alone on one core,
    # 20 % longer beside the loader in FULL (at 84.7 batches/s). Plain loops with 2 workers measured FULL 637.5
    # samples/s.
    inp = replace(
        inputs(2, worker=0.012264, cpu=1.0, main=0.0013386, step=0.0080493, step_cores=1.0117, io=(1145.9, 1215.1, 1284.4)),
        loader=Loader(0.012264, 1.0, 0.0013386, 2.6e-6, 0.30913, 1.0103),
        full_contention=0.19793,
        full_rate=84.691,
    )
    steady, queued = predict(inp, Change(2, 2.0)), predict(inp, Change(2, 2.0), queued=True)
    # The steady model: the step beside the loader and the receive, one after the other (the cores' average bound,
    # 768 samples/s, is above it).
    assert steady.full[1] == pytest.approx(BATCH / (0.0080493 * 1.19793 + 0.0013386), rel=1e-6)
    # The play shares the cores among the running threads: while the workers run, the step gets a share of a core,
    # and FULL is 6 % below the steady model's; the plain loop's 637.5 is 7 % below the play (constant times here).
    assert queued.full[1] == pytest.approx(685.1, rel=0.001)
    assert queued.full[1] < 0.95 * steady.full[1]
    # Loaders that wait (none of their time on the CPU) leave the cores to the step: the play is the plain play.
    waiting = replace(inp, loader=replace(inp.loader, cpu=0.0, main_cpu=0.0))
    assert predict(waiting, Change(2, 2.0), queued=True).full[1] == pytest.approx(
        BATCH / (0.0013386 + 0.0080493 * 1.19793), rel=0.01
    )


def _no_workers(make: float, worker: float, receive: float, io: float, synthetic: float, other: bool = True) -> Inputs:
    """A run without workers whose loading takes ``make`` seconds a batch on the training thread; with ``other``, its
    STAGES_WORKER trial: one worker makes a batch in ``worker`` seconds, the main process receives it in ``receive``."""
    alone = replace(_report(), period=make, workers=0, stages=[Stage(StageKind.DATASET, "main", make, 1.0, off_cpu=1.0)])
    one = replace(
        _report(receive=receive),
        period=worker,
        workers=1,
        stages=[Stage(StageKind.DATASET, "workers", worker, 1.0, off_cpu=1.0), Stage(StageKind.RECEIVE, "main", receive, 0.1)],
    )
    inp = inputs_from(
        batch=8.0,
        workers=0,
        io=Estimate(io, 0.0, 3),
        synthetic=Estimate(synthetic, 0.0, 3),
        systems={},
        stages=alone,
        stages_other=one if other else None,
    )
    assert inp is not None and (inp.other_setting is not None) == other
    return inp


def test_the_other_settings_stage_trials_serve_the_changes_on_their_side_of_no_workers() -> None:
    # A run without workers: the loading 10 ms a batch on the training thread. Its STAGES_WORKER trial: one worker,
    # 11 ms a batch there, and the main process receiving each batch in 1.5 ms (none of which the run shows).
    without = _no_workers(0.010, 0.011, 0.0015, 800.0, 800.0, other=False)
    inp = _no_workers(0.010, 0.011, 0.0015, 800.0, 800.0)
    assert predict(inp, Change(0, 2.0)) == predict(without, Change(0, 2.0))  # no workers: the run's own figures
    # 2 workers: 11 ms / 2 = 5.5 ms a batch from the pool, and the step (10 ms) then receive (1.5 ms) in series
    assert predict(inp, Change(2, 2.0)).io[1] == pytest.approx(8 / 0.0055)
    assert predict(inp, Change(2, 2.0)).full[1] == pytest.approx(8 / 0.0115)
    assert predict(without, Change(2, 2.0)).full[1] == pytest.approx(8 / 0.010)  # what the run alone would say
    block = whatif_block(whatif(inp)).inputs
    assert block is not None and block.other_workers == 1 and block.other_worker_seconds_per_batch == pytest.approx(0.011)
    assert block.other_main_seconds_per_batch == pytest.approx(0.0015)
    assert whatif_block(whatif(without)).inputs.other_workers is None  # type: ignore[union-attr]


def test_a_faster_step_that_workers_would_not_feed_is_said_to_get_the_most_from_none() -> None:
    # A run without workers whose batches take 0.4 ms to make on the training thread, a 0.3 ms step; its
    # STAGES_WORKER trial: one worker makes a batch in 0.4 ms, and the main process takes 1.36 ms to receive it.
    w = whatif(_no_workers(0.0004, 0.0004, 0.00136, 20_000.0, 8 / 0.0003))
    two = next(n for n in w.needs if n.speedup == 2.0)
    # With workers each batch costs the main process 1.36 ms (and the step 0.15 ms): no workers is the most,
    # 0.4 + 0.15 ms a batch in series, far below the faster step's own 8 / 0.15 ms.
    assert two.workers == 0 and two.full == pytest.approx(8 / 0.00055, rel=0.02)
    text = whatif_text(w)
    fulls = [f"{n.full:.1f}" for n in w.needs if n.speedup != 1.0]
    assert (
        f"a 2x, 4x and 10x faster step get the most from no workers: FULL {fulls[0]}, {fulls[1]} and {fulls[2]}, the "
        "loading and the step one after the other (workers give less than 5 % more here)" in text
    )
    assert "faster step needs 0 workers" not in text


def test_the_other_setting_is_no_workers_beside_workers_and_two_workers_beside_none_where_the_cores_hold_them() -> None:
    assert other_workers(4, 16.0) == 0 and other_workers(1, 2.0) == 0
    assert other_workers(0, 2.0) == 2 and other_workers(0, 64.0) == 2
    assert other_workers(0, 1.0) == 1 and other_workers(0, 1.5) == 1  # one core: a second worker would only wait


def _two_workers(dataset: float, off_cpu: float, receive: float, period: float, worker_cpu: float | None) -> StageReport:
    """A STAGES_WORKER trial with two workers: each makes a batch in ``dataset`` seconds (``off_cpu`` of it off the
    CPU), the main process receives it in ``receive``; the pool gave a batch every ``period``; ``worker_cpu``: the
    workers' processes' CPU seconds a batch, where read."""
    return replace(
        _report(receive=receive),
        period=period,
        workers=2,
        stages=[
            Stage(StageKind.DATASET, "workers", dataset, 1.0, off_cpu=off_cpu),
            Stage(StageKind.RECEIVE, "main", receive, 0.1, off_cpu=0.0),
        ],
        worker_cpu=worker_cpu,
    )


def _without_workers(other: StageReport, contention: ContentionRun | None = None) -> Inputs:
    """A run without workers (12 ms a batch of loading on the training thread, an 8 ms step on one core) and the
    stage trial at its other setting; ``contention``: its CONTENTION_1."""
    alone = replace(_report(), period=0.012, workers=0, stages=[Stage(StageKind.DATASET, "main", 0.012, 1.0, off_cpu=0.0)])
    inp = inputs_from(
        batch=8.0,
        workers=0,
        io=Estimate(8 / 0.012, 0.0, 3),
        synthetic=Estimate(1000.0, 0.0, 3),
        systems={"IO": {"cpu_cores": 2.0}, "SYNTHETIC": {"cpu_cores": 2.0, "cpu_cores_busy": 1.0}},
        stages=alone,
        full=Estimate(400.0, 0.0, 3),
        stages_other=other,
        contention=contention,
    )
    assert inp is not None
    return inp


def test_two_workers_that_keep_the_cores_busy_cost_their_processes_cpu_time_a_batch_not_the_periods_share() -> None:
    # The what-if benchmark's cpu0 loop (2 cores): beside each other, with the main process receiving, two workers
    # kept both cores busy: the pool gave a batch every 7.3 ms, so each worker took 14.6 ms a batch, 7 % of its
    # dataset's time waiting for a core. Their processes took 12.8 ms of CPU a batch (all of a worker's work:
    # the dataset, pickling and sending the batch), which is what one worker alone takes a batch.
    inp = _without_workers(_two_workers(0.0135, 0.07, 0.0008, 0.0073, worker_cpu=0.0128))
    there = inp.other_setting
    assert there is not None and inp.other_workers == 2
    assert there.worker == pytest.approx(0.0128) and there.cpu == 1.0
    assert there.handover == pytest.approx(0.0128 - 0.0135 * 0.93)  # what the stage timers did not see
    assert predict(inp, Change(1, 2.0)).io[1] == pytest.approx(8 / 0.0128)
    # Two workers and the receive ask for more than the 2 cores: the play shares them, and IO stays below two
    # workers' own pace.
    assert predict(inp, Change(2, 2.0), queued=True).io[1] < 0.97 * 8 / (0.0128 / 2)
    # Not read (another platform): the period's share, with what the timers missed added, as for the run's own.
    unread = _without_workers(_two_workers(0.0135, 0.07, 0.0008, 0.0073, worker_cpu=None))
    assert unread.other_setting is not None and unread.other_setting.worker >= 0.0135
    # Workers that wait (a dataset asleep) leave the cores free: their time a batch is their time, not their CPU's.
    waiting = _without_workers(_two_workers(0.0135, 0.95, 0.0008, 0.0070, worker_cpu=0.0012))
    assert waiting.other_setting is not None and waiting.other_setting.worker >= 0.0135


def test_a_run_without_workers_takes_the_step_beside_the_other_settings_workers_for_the_changes_to_workers() -> None:
    other = _two_workers(0.0135, 0.07, 0.0008, 0.0073, worker_cpu=0.0128)
    # CONTENTION_1 with the other setting's two workers beside the step: its median period 12 ms against SYNTHETIC's 8
    # (50 % longer) while they gave 80 batches a second.
    beside = ContentionRun("CONTENTION_1", 0.012, 25, 24, 0.3, workers=2)
    inp, plain = _without_workers(other, beside), _without_workers(other)
    assert inp.contention_rate == pytest.approx(80.0)
    receiving = inp.other_setting.main * inp.other_setting.main_cpu * 80.0  # the copy's receive, not the step's
    assert inp.contention == pytest.approx(0.5 - receiving)
    # FULL without workers is no point of the step beside workers
    assert inp.full_rate == 0.0 and inp.full_contention == 0.0
    for workers in (1, 2, 4):  # one worker (12.8 ms a batch) sets the pace itself: the slower step does not show
        slowed, alone = (predict(x, Change(workers, 2.0), queued=True).full[1] for x in (inp, plain))
        assert slowed <= alone and (slowed < 0.95 * alone or workers == 1), (workers, slowed, alone)
    # no workers: the loading and the step in series, as measured, whatever ran beside the step
    assert predict(inp, Change(0, 2.0)) == predict(plain, Change(0, 2.0))
    # A contention figure without workers beside the step (an older run's) is none
    assert _without_workers(other, msgspec.structs.replace(beside, workers=0)).contention == 0.0
    text = whatif_text(whatif(inp))
    assert (
        f"beside 2 loader workers (a copy of the loader taking a batch a step) the step takes {100 * inp.contention:.0f} % "
        in text
    )
    assert "(CONTENTION_1, at 80 batches/s): the changes to workers count it" in text
