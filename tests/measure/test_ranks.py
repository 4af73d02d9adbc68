"""Naming the ranks that did not report, from the rendezvous store's keys alone (pure logic, a fake store)."""

from __future__ import annotations

import math
from typing import Any, List, Sequence, Set

import numpy as np
import pytest
from helpers import trial_result

from benchy import Mode
from benchy.measure.ranks import missing_ranks, summarised


class Store:
    """The store's ``check``: every key present; counts the reads."""

    def __init__(self, keys: Set[str]) -> None:
        self.keys = keys
        self.reads = 0

    def check(self, keys: Sequence[str]) -> bool:
        self.reads += 1
        return all(k in self.keys for k in keys)


@pytest.mark.parametrize(
    "world,missing", [(1, []), (2, [1]), (8, [5]), (8, [0, 7]), (4096, [4095]), (4096, [3, 1000, 2048]), (6, [0, 1, 2, 3, 4, 5])]
)
def test_the_missing_ranks_are_found_with_few_reads(world: int, missing: List[int]) -> None:
    store = Store({f"benchy/9/{r}" for r in range(world) if r not in missing})
    assert missing_ranks(store, "benchy/9", world) == missing
    if missing and world >= 64:
        # About 2 log2(world) reads a missing rank, not one read a rank.
        assert store.reads <= 2 * len(missing) * world.bit_length(), store.reads
    if not missing:
        assert store.reads == 1


class Ranks:
    """Every rank's reduce at once: the merge folded over the ranks in a shuffled order (any order must
    give the same answer), handed to each rank in turn."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.rank = 0
        self.vectors: List[Any] = []

    def reduce(self, label: str, values: Any, merge: Any, what: str = "") -> Any:
        import random

        order = list(self.vectors)
        random.Random(len(order)).shuffle(order)
        total = np.asarray(order[0], dtype=float)
        for v in order[1:]:
            total = merge(total, np.asarray(v, dtype=float))
        return total


def test_a_summary_gives_every_rank_the_same_totals_and_names_the_slowest() -> None:
    times = [1.0, 1.5, 3.0, 1.2, 3.0]  # ranks 2 and 4 tie for slowest: the lower rank is named
    changes: List[Any] = [-0.01, None, -0.2, 0.0, -0.05]
    comm = Ranks(5)
    comm.vectors = [
        [32.0, t, float(r), t, float(r), t, math.inf if c is None else c, 1.0 if c is None else 0.0]
        for r, (t, c) in enumerate(zip(times, changes))
    ]
    result = trial_result(Mode.FULL, samples=32, seconds=1.0)
    combined, change = summarised(comm, result, -0.01)
    assert combined.samples == 5 * 32 and combined.seconds == 3.0
    summary = combined.rank_summary
    assert summary is not None and (summary.slowest, summary.fastest) == (2, 0)
    assert summary.mean_seconds == pytest.approx(sum(times) / 5) and summary.spread == pytest.approx(2.0)
    assert change is None  # rank 1 could not tell its warm-up change
    comm.vectors[1][6], comm.vectors[1][7] = -0.3, 0.0
    assert summarised(comm, result, -0.01)[1] == pytest.approx(-0.3)
    # This rank's own throughput stays its own, not the ranks' total.
    assert combined.own_throughput == pytest.approx(32 / 1.0)
    assert combined.rank_seconds == () and combined.rank_samples == ()


class Schedules:
    """Ranks holding the given schedules: ``reduce`` merges their digests, ``gather`` hands them all out."""

    def __init__(self, fingerprints: List[Any]) -> None:
        self.fingerprints = fingerprints
        self.world = len(fingerprints)
        self.rank = 0
        self.gathered = 0

    def reduce(self, label: str, values: Any, merge: Any, what: str = "") -> Any:
        from benchy.measure.ranks import schedule_digest

        total = np.asarray(schedule_digest(self.fingerprints[0]))
        for f in self.fingerprints[1:]:
            total = merge(total, np.asarray(schedule_digest(f)))
        return total

    def gather(self, label: str, value: Any) -> List[Any]:
        self.gathered += 1
        return list(self.fingerprints)

    def barrier(self, label: str) -> None:
        return None


def test_past_the_bound_the_schedule_check_reduces_a_hash_and_gathers_only_on_a_difference() -> None:
    from benchy import DistributedError
    from benchy.measure.ranks import agree

    same = Schedules([{"FULL.nbatches": 50, "IO.ntrials": 3}] * 100)
    agree(same, same.fingerprints[0], lists=64)
    assert same.gathered == 0  # the hashes agreed: nothing gathered
    agree(same, same.fingerprints[0], lists=100)
    assert same.gathered == 1  # up to the bound: gathered as before
    differ = Schedules([{"FULL.nbatches": 50}] * 99 + [{"FULL.nbatches": 60}])
    with pytest.raises(DistributedError) as err:
        agree(differ, differ.fingerprints[0], lists=64)
    assert differ.gathered == 1 and "FULL.nbatches (rank 0: 50" in str(err.value) and "rank 99: 60" in str(err.value)
