"""Naming the ranks that did not report, from the rendezvous store's keys alone (pure logic, a fake store)."""

from __future__ import annotations

from typing import List, Sequence, Set

import pytest

from benchy.measure.ranks import missing_ranks


class Store:
    """The store's ``check``: every key present; counts the reads."""

    def __init__(self, keys: Set[str]) -> None:
        self.keys = keys
        self.reads = 0

    def check(self, keys: Sequence[str]) -> bool:
        self.reads += 1
        return all(k in self.keys for k in keys)


@pytest.mark.parametrize("world,missing", [(1, []), (2, [1]), (8, [5]), (8, [0, 7]), (4096, [4095]),
                                            (4096, [3, 1000, 2048]), (6, [0, 1, 2, 3, 4, 5])])
def test_the_missing_ranks_are_found_with_few_reads(world: int, missing: List[int]) -> None:
    store = Store({f"benchy/9/{r}" for r in range(world) if r not in missing})
    assert missing_ranks(store, "benchy/9", world) == missing
    if missing and world >= 64:
        # About 2 log2(world) reads a missing rank, not one read a rank.
        assert store.reads <= 2 * len(missing) * world.bit_length(), store.reads
    if not missing:
        assert store.reads == 1
