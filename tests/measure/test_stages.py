"""The stage trials on real DataLoaders over made-up datasets with known stage times (sleeps).

Each stage's share is compared with what the sleeps make it, within a few points; the shares are
taken among the worker stages (their sum is the workers' busy share, which the machine's load moves).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Dict, Optional

import pytest
from stage_datasets import SPENT, Compose, Items, Normalize, Resize, Sleep, SlowCollate, Stream
from torch.utils.data import DataLoader, Subset

from benchy.core.stages import MAIN_WORK, StageKind, StageReport, analyse, stage_fix
from benchy.measure.source import BatchSource
from benchy.measure.stages import Arrival, Done, has_in_order, instrument, stage_trial, timer_cost
from benchy.results.summary import stages_text
from benchy.results.text import reports

BATCH = 4


def load() -> str:
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"


def run(arguments: Dict[str, Any], nbatches: int = 24, trials: int = 2) -> StageReport:
    made = instrument(arguments)
    source = BatchSource(lambda: iter(made.loader))
    try:
        found = [stage_trial("STAGES_WARMUP_1", True, 6, source.fetch, lambda b: len(b[0]), made)]
        for k in range(1, trials + 1):
            found.append(stage_trial(f"STAGES_{k}", False, nbatches, source.fetch, lambda b: len(b[0]), made))
    finally:
        try:
            source.close()
        except RuntimeError:  # a worker that aborts while it exits (seen with torch's own spawn workers under load)
            pass
    report = analyse(found, in_order=has_in_order(), split=made.plan.split, free_cores=0.0)
    assert report is not None
    return report


def among_workers(report: StageReport) -> Dict[str, float]:
    """Each worker-side stage's share of the worker stages' sum."""
    stages = [s for s in report.stages if s.where in ("workers", "main") and s.kind not in (*MAIN_WORK, StageKind.WAIT)]
    total = sum(s.seconds for s in stages)
    return {s.name: s.seconds / total for s in stages}


def expected(parts: Dict[str, float]) -> Dict[str, float]:
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()}


def close(found: Dict[str, float], want: Dict[str, float], points: float, report: StageReport) -> None:
    assert set(found) == set(want), found
    for name, share in want.items():
        assert abs(found[name] - share) <= points, (
            f"{name}: {found[name]:.3f} vs {share:.3f}; {found}; {stages_text(report)}; {load()}"
        )


def between(found: Dict[str, float], ms: Dict[str, float], calls: Dict[str, int], points: float, report: StageReport) -> None:
    """Each stage's share between its share of the nominal sleeps and its share of the sleep calls, within
    ``points``. A loaded machine oversleeps each call by about the same ``o`` (a wake-up's delay): a stage's share
    is then ``(ms + calls o) / (sum ms + sum calls o)``, which moves monotonically from the first (``o`` = 0) to the
    second (``o`` large) whatever ``o`` is: no load crosses it (at 0.5 ms a call, 4 x 0.5 ms of Resize read 19.5 %
    against a nominal 14.3 %, past the 4 points this test once allowed around the nominal share)."""
    assert set(found) == set(ms), found
    nominal, counted = expected(ms), expected({k: float(n) for k, n in calls.items()})
    for name in ms:
        lo, hi = sorted((nominal[name], counted[name]))
        assert lo - points <= found[name] <= hi + points, (
            f"{name}: {found[name]:.3f} outside {lo:.3f} to {hi:.3f}; {found}; {stages_text(report)}; {load()}"
        )


def items(**kw: Any) -> Items:
    return Items(2000, own_ms=1.0, transform=Compose([Resize(0.5), Normalize(1.5)]), **kw)


@pytest.mark.timing
@pytest.mark.parametrize("workers", [0, 2])
def test_each_stage_share_matches_its_sleeps(workers: int) -> None:
    report = run(dict(dataset=items(), batch_size=BATCH, num_workers=workers, collate_fn=SlowCollate(2.0)))
    # Per batch: 4 x 1 ms in __getitem__ itself, 4 x 0.5 ms Resize, 4 x 1.5 ms Normalize, 2 ms collate (13 sleeps).
    ms = {"dataset": 4.0, "transform Resize": 2.0, "transform Normalize": 6.0, "collate_fn": 2.0}
    calls = {"dataset": 4, "transform Resize": 4, "transform Normalize": 4, "collate_fn": 1}
    by_name = {s.name: s for s in report.stages}
    assert by_name["dataset"].off_cpu is not None and by_name["dataset"].off_cpu > 0.5  # it sleeps
    if workers:
        # In two worker processes beside the main one, each stage's time is what the scheduler gave its sleeps: beside
        # a load average of 5 to 7 on 2 cores a worker's 1.5 ms sleep took 2.5 to 4.3 ms, unevenly (collate_fn's one
        # sleep read 21.7 % against at most 14.3 %, Normalize was not the largest): no bound on the shares holds there
        # and still tells a stage from another. The shares with workers are measured by benchmarks/stage_shares.py;
        # here each stage is found, in the workers, with its time.
        found = among_workers(report)
        assert set(found) == set(ms) and all(share > 0 for share in found.values()), found
    else:
        # One process: between the nominal shares and the calls' shares (see ``between``: no oversleep crosses it); a
        # stage that took another's time (Normalize's in Resize: 57 %) or lost its own (collate 0 against 7.7 % at the
        # least) fails.
        between(among_workers(report), ms, calls, 0.04, report)
        # margin: sleeps never end early (the lower bound is 5 % under the nominal 6 ms). Against the dataset's four
        # 1 ms sleeps a batch, Normalize's four of 1.5 ms read (6 + 4 o) / (4 + 4 o) with an oversleep ``o`` a call:
        # between 1x and 1.5x whatever ``o`` is. Normalize given the dataset's time too (2.5x) still fails.
        normalize, dataset = by_name["transform Normalize"].seconds, by_name["dataset"].seconds
        assert normalize >= 5.7e-3 and 0.9 <= normalize / dataset <= 1.6, (by_name, load())
        assert report.largest is not None and report.largest.name == "transform Normalize", (stages_text(report), load())
        assert "Normalize" in stage_fix(report.largest).words()
    if workers:
        assert {s.where for s in report.stages if s.name == "dataset"} == {"workers"}
        # margin: the workers sleep most of each batch, and a sleeping worker counts as busy in its stage: idle only
        # while its queue is full, which a 0 ms consumer never leaves it; CPU load lengthens the work, not the idle.
        assert report.worker_busy is not None and report.worker_busy > 0.8, (report.worker_busy, load())
        assert {StageKind.WAIT, StageKind.RECEIVE} <= {s.kind for s in report.stages}
        assert [reports.stage_name(s) for s in report.stages if s.kind is StageKind.WAIT] == ["waiting for workers"]
        assert [w.worker for w in report.per_worker] == [0, 1]
        assert all(w.batches == 24 for w in report.per_worker)
    else:
        assert report.worker_busy is None and report.per_worker == []
        # Every stage is on the main thread: they and the loader's own code make the period.
        assert 0.0 <= report.unexplained <= 0.1, (report.unexplained, load())
    assert abs(report.unexplained) <= 0.15, (report.unexplained, load())


@pytest.mark.timing
def test_a_slow_worker_is_named_and_its_batches_hold_up_the_others() -> None:
    # Worker 1's items take 10 ms (4 ms until now: beside a load average of 5 to 7 on 2 cores, where a 1.5 ms sleep
    # took up to 4.3 ms, its 26 ms a batch against 14 read 1.2x or less and no straggler was named).
    report = run(dict(dataset=items(slow_worker=1, slow_ms=10.0), batch_size=BATCH, num_workers=2, collate_fn=SlowCollate(2.0)))
    assert report.straggler is not None and report.straggler.worker == 1, (report.per_worker, load())
    # Worker 0 makes a batch in 4 + 2 + 6 + 2 = 14 ms, worker 1 in 40 + 2 + 6 + 2 = 50 ms: 3.6x, each in 13 sleeps.
    # margin: an oversleep ``o`` a call reads (50 + 13 o) / (14 + 13 o): under 1.5x only at o > 4.2 ms on average (up to
    # 2.8 ms measured, above); above 5x only if worker 1 alone is descheduled 40 % of its time more than worker 0. A
    # straggler read without its slow stage (about 1x) still fails.
    assert 1.5 <= report.straggler.ratio <= 5.0, (report.straggler, load())
    # Worker 0's batches wait behind worker 1's: ready out of order, the loop waiting meanwhile.
    assert report.out_of_order >= 10, report.out_of_order
    # margin: worker 0's batches wait behind worker 1's 36 ms more a batch, most of the loop's time; 0.2 measured when
    # worker 1 took 12 ms more (the 4 ms items), 0.004 to 0.06 where the load hid that difference.
    assert report.hol_share >= 0.1, (report.hol_share, load())


@pytest.mark.timing
def test_equal_workers_are_neither_slow_nor_held_up() -> None:
    report = run(dict(dataset=Items(2000, own_ms=5.0), batch_size=BATCH, num_workers=2))
    assert report.straggler is None, report.per_worker
    # On an idle machine the two finish in lockstep (0 %); a loaded one delays one worker at random.
    # margin: 0.008 to 0.05 measured beside a load average of 5 on 2 cores: 3x under the bound.
    assert report.hol_share < 0.15, (report.hol_share, load())


def test_compose_steps_target_transform_and_a_subset_are_split_by_name() -> None:
    base = Items(100, own_ms=0.0, transform=Compose([Sleep(0.2), Sleep(0.2), Resize(0.1)]), target_transform=Normalize(0.1))
    report = run(dict(dataset=Subset(base, list(range(80))), batch_size=BATCH), nbatches=5, trials=1)
    names = [s.name for s in report.stages if s.where == "main"]
    assert names[:5] == ["dataset", "transform Sleep", "transform Sleep#2", "transform Resize", "target_transform"], names
    assert "Items's transform and target_transform" in report.split


def test_the_users_dataset_and_transforms_are_left_as_they_were() -> None:
    steps = [Resize(0.0), Normalize(0.0)]
    compose = Compose(steps)
    ds = Items(50, own_ms=0.0, transform=compose)
    made = instrument(dict(dataset=ds, batch_size=BATCH, num_workers=0))
    next(iter(made.loader))
    assert ds.transform is compose and compose.transforms is steps and compose.transforms == steps
    assert [type(s) for s in steps] == [Resize, Normalize]
    plain = DataLoader(ds, batch_size=BATCH)
    _x, y = next(iter(plain))
    assert list(y) == [0, 1, 2, 3]


def test_an_iterable_dataset_times_each_item_and_collate() -> None:
    SPENT.clear()
    report = run(dict(dataset=Stream(10_000, 1.0), batch_size=BATCH, collate_fn=SlowCollate(2.0)), nbatches=10, trials=1)
    # Compared with what the sleeps took (0 workers: all in this process), not with their nominal 4 and 2 ms:
    # a loaded machine oversleeps each of the four item sleeps as much as the one collate sleep.
    item, collate = (sum(SPENT[k]) / len(SPENT[k]) for k in ("Stream", "SlowCollate"))
    close(among_workers(report), expected({"dataset": BATCH * item, "collate_fn": collate}), 0.05, report)
    assert "Stream has no transform" in report.split


def test_spawned_workers_unpickle_the_timers() -> None:
    report = run(
        dict(dataset=Items(200, own_ms=1.0), batch_size=BATCH, num_workers=2, multiprocessing_context="spawn"),
        nbatches=8,
        trials=1,
    )
    assert [w.worker for w in report.per_worker] == [0, 1]
    assert {s.name for s in report.stages} >= {"dataset", "collate_fn", "receive"}


def test_marks_stamp_their_unpickling_and_pinning() -> None:
    mark = pickle.loads(pickle.dumps(Arrival(3, 1.0, 2.0, (0.5, 0.25), 0.1, 4)))
    done = pickle.loads(pickle.dumps(Done()))
    assert (mark.worker, mark.start, mark.end, mark.seconds, mark.items) == (3, 1.0, 2.0, (0.5, 0.25), 4)
    assert mark.received > 0 and done.received >= mark.received
    assert mark.pin_memory() is mark and done.pin_memory() is done and done.pinned >= mark.pinned > 0


def test_a_batch_rebuilt_after_collate_is_named() -> None:
    made = instrument(dict(dataset=Items(20, own_ms=0.0), batch_size=BATCH))
    with pytest.raises(TypeError, match="cannot be timed stage by stage"):
        stage_trial("STAGES_1", False, 2, lambda: "not a batch", len, made)


def test_the_timers_cost_a_few_microseconds_a_sample() -> None:
    cost: Optional[float] = timer_cost(3)
    assert cost is not None and 0.0 <= cost < 50e-6, cost


class Batched(Items):
    """A dataset that reads a batch of indices at once (``__getitems__``)."""

    calls = 0

    def __getitems__(self, indices):
        type(self).calls += 1
        return [self[i] for i in indices]


@pytest.mark.timing  # its time a batch, 4 ms, within half of it: a busy machine's skip, not a failure
def test_a_dataset_that_reads_whole_batches_is_called_so_and_timed_whole() -> None:
    Batched.calls = 0  # counted from here: a rerun of this timing test starts again from none
    report = run(dict(dataset=Batched(200, own_ms=1.0), batch_size=BATCH), nbatches=5, trials=1)
    assert Batched.calls == 6 + 5  # once a batch, as the DataLoader calls it
    # margin: 4 sleeps of 1 ms a batch over 5 batches: sleeps never end early (the lower bound is 3 ms); the upper
    # 7.5 ms fails only if the 20 sleeps oversleep 0.875 ms each on average, 17.5 ms in all (0.21 ms measured beside a
    # load average of 5.5 on 2 cores, one 15 ms outlier in 600 included; the 6 ms this test once allowed fell to one
    # such outlier); timed item by item instead of whole it reads 1 ms, twice over 8 ms.
    assert report.stages[0].name == "dataset" and 3e-3 <= report.stages[0].seconds <= 7.5e-3, (report.stages[0], load())


class ReadOnly(Items):
    """A dataset whose transform is a read-only property: it stays in the dataset's own time."""

    def __init__(self) -> None:
        super().__init__(40, own_ms=0.0)

    @property  # type: ignore[override]
    def transform(self):
        return Normalize(0.0)

    @transform.setter
    def transform(self, value) -> None:
        if value is not None:
            raise AttributeError("read-only")


def test_a_transform_that_cannot_be_replaced_stays_in_the_dataset_time() -> None:
    report = run(dict(dataset=ReadOnly(), batch_size=BATCH), nbatches=3, trials=1)
    assert [s.name for s in report.stages if s.where == "main"][:2] == ["dataset", "collate_fn"]
    assert "could not be replaced (read-only)" in report.split


class Frozen(Compose):
    """A Compose that cannot be copied: it is timed whole, under its own name."""

    def __copy__(self):
        raise TypeError("no copies")


def test_a_compose_that_cannot_be_copied_is_timed_whole() -> None:
    ds = Items(40, own_ms=0.0, transform=Frozen([Resize(0.0), Normalize(0.0)]), target_transform=Sleep(0.0))
    report = run(dict(dataset=ds, batch_size=BATCH), nbatches=3, trials=1)
    assert [s.name for s in report.stages if s.where == "main"][:4] == [
        "dataset",
        "transform Frozen",
        "target_transform",
        "collate_fn",
    ]


def test_the_what_if_models_other_setting_is_the_same_loader_with_no_workers_or_one() -> None:
    from torch.utils.data import DataLoader

    from benchy.integrations.wrappers import WORKER_TIMEOUT, LoaderSweeper

    with_workers = DataLoader(items(), batch_size=BATCH, num_workers=2, prefetch_factor=3, pin_memory=False)
    alone = LoaderSweeper(with_workers, (items(),), dict(batch_size=BATCH, num_workers=2, prefetch_factor=3)).instrumented(0)
    assert alone.workers == 0 and alone.loader.prefetch_factor is None and alone.loader.timeout == 0
    assert alone.loader.batch_size == BATCH
    plain = DataLoader(items(), batch_size=BATCH)
    one = LoaderSweeper(plain, (items(),), dict(batch_size=BATCH)).instrumented(1)
    # a dataset that never ran in a worker may hang there: the copy gives up on a batch after WORKER_TIMEOUT
    assert one.workers == 1 and one.loader.prefetch_factor == 2 and one.loader.timeout == WORKER_TIMEOUT
    own = LoaderSweeper(plain, (items(),), dict(batch_size=BATCH, timeout=7.0)).instrumented(1)
    assert own.loader.timeout == 7.0  # the loader's own timeout stays
    assert LoaderSweeper(plain, (items(),), dict(batch_size=BATCH)).instrumented().workers == 0
