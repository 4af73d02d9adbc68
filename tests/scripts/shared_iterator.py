"""A hand-written reader that hands out one shared iterator, as many vendor and home-made data iterators do.

``--shape self``: the reader is its own iterator (``__iter__`` returns ``self``, a new epoch once the last ended);
``--shape stored``: it keeps one iterator in an attribute and returns it from every ``iter()``. Each batch holds
its index in the epoch; the script prints, per epoch, the indices the loop received (``RECEIVED <json>``).
``--plain``: without benchy."""

from __future__ import annotations

import argparse
import json
import time
from typing import Iterator

import torch


class SelfReader:
    def __init__(self, n: int) -> None:
        self.n, self.i = n, n

    def __iter__(self) -> SelfReader:
        if self.i >= self.n:
            self.i = 0
        return self

    def __next__(self) -> torch.Tensor:
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        time.sleep(0.0005)
        return torch.full((4, 8), float(self.i - 1))

    def __len__(self) -> int:
        return self.n


class StoredReader:
    def __init__(self, n: int) -> None:
        self.n = n
        self.stream: Iterator[torch.Tensor] = self._epoch()

    def _epoch(self) -> Iterator[torch.Tensor]:
        for i in range(self.n):
            time.sleep(0.0005)
            yield torch.full((4, 8), float(i))
        self.stream = self._epoch()  # the next iter() starts a new epoch

    def __iter__(self) -> Iterator[torch.Tensor]:
        return self.stream

    def __len__(self) -> int:
        return self.n


parser = argparse.ArgumentParser()
parser.add_argument("--shape", choices=["self", "stored"], default="self")
parser.add_argument("--plain", action="store_true")
parser.add_argument("--epochs", type=int, default=4)
args = parser.parse_args()

reader = SelfReader(120) if args.shape == "self" else StoredReader(120)
loader = reader
if not args.plain:
    import benchy

    loader = benchy.BenchmarkGenericIteratorWrapper(reader)
weights = torch.zeros(8)
for epoch in range(args.epochs):
    received = []
    for batch in loader:
        received.append(int(batch[0, 0]))
        weights += batch.mean(0) * 1e-6
    print("RECEIVED " + json.dumps(received), flush=True)
