"""Made-up datasets whose stage times are known (sleeps per stage), for the stage-trial tests and scripts.

Module-level classes, so that ``spawn`` workers can unpickle them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, DefaultDict, List, Sequence

import torch
from torch.utils.data import IterableDataset, default_collate, get_worker_info

SPENT: DefaultDict[str, List[float]] = defaultdict(list)
"""What the sleeps of :class:`Stream` and :class:`SlowCollate` really took in this process, by class name:
a loaded machine oversleeps each call by a share of a millisecond, so a test compares with these, not with
the nominal ``ms``."""


def slept(name: str, ms: float) -> None:
    """Sleep ``ms`` milliseconds and record what it took under ``name``."""
    start = time.perf_counter()
    time.sleep(ms / 1e3)
    SPENT[name].append(time.perf_counter() - start)


class Compose:
    """A torchvision-style ``Compose``: a ``transforms`` list applied in order."""

    def __init__(self, transforms: List[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x


class Sleep:
    """A transform that takes ``ms`` milliseconds."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def __call__(self, x: Any) -> Any:
        time.sleep(self.ms / 1e3)
        return x


class Resize(Sleep):
    pass


class Normalize(Sleep):
    pass


class Items:
    """``n`` samples; ``__getitem__`` itself takes ``own_ms`` (``slow_ms`` in worker ``slow_worker``),
    then its transform and target_transform."""

    def __init__(
        self,
        n: int,
        own_ms: float,
        transform: Any = None,
        target_transform: Any = None,
        slow_worker: int = -1,
        slow_ms: float = 0.0,
    ) -> None:
        self.n, self.own_ms, self.transform, self.target_transform = n, own_ms, transform, target_transform
        self.slow_worker, self.slow_ms = slow_worker, slow_ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        info = get_worker_info()
        slow = info is not None and info.id == self.slow_worker
        time.sleep((self.slow_ms if slow else self.own_ms) / 1e3)
        x, y = torch.zeros(8), i
        if self.transform is not None:
            x = self.transform(x)
        if self.target_transform is not None:
            y = self.target_transform(y)
        return x, y


class Stream(IterableDataset):  # type: ignore[type-arg]
    """An iterable dataset: ``n`` items, each taking ``ms``."""

    def __init__(self, n: int, ms: float) -> None:
        self.n, self.ms = n, ms

    def __iter__(self) -> Any:
        for i in range(self.n):
            slept("Stream", self.ms)
            yield torch.zeros(8), i


class SlowCollate:
    """``default_collate`` after ``ms`` milliseconds."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def __call__(self, samples: Sequence[Any]) -> Any:
        slept("SlowCollate", self.ms)
        return default_collate(samples)
