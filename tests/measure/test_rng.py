"""benchy's own draws leave the loader's own random streams as they were, whatever their kind."""

from __future__ import annotations

import random

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler

from benchy.measure.rng import kept, loader_streams


class Shuffled(Sampler[int]):
    def __init__(self) -> None:
        self.rng = random.Random(1)
        self.legacy = np.random.RandomState(2)
        self.same = self.rng  # found once

    def __iter__(self):  # type: ignore[no-untyped-def]
        order = list(range(8))
        self.rng.shuffle(order)
        return iter(order)

    def __len__(self) -> int:
        return 8


class Augmented(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self) -> None:
        self.rng = np.random.default_rng(3)

    def __getitem__(self, i: int) -> float:
        return float(self.rng.random())

    def __len__(self) -> int:
        return 8


def test_every_stream_of_the_loader_is_found_once_and_put_back() -> None:
    loader = DataLoader(Augmented(), sampler=Shuffled(), batch_size=2, generator=torch.Generator().manual_seed(4))
    streams = loader_streams(loader)
    kinds = sorted(type(s).__name__ for s in streams)
    assert kinds == ["Generator", "Generator", "Random", "RandomState"], kinds
    plain = [b.tolist() for b in loader]
    again = DataLoader(Augmented(), sampler=Shuffled(), batch_size=2, generator=torch.Generator().manual_seed(4))
    with kept(loader_streams(again)):
        [b.tolist() for b in again]  # benchy's own pass
    assert [b.tolist() for b in again] == plain
