"""Loader shapes users bring, each a loop of a few epochs that says which batches it received (``--shape``):

* ``workers``: an ``IterableDataset`` sharded across 2 workers by a ``worker_init_fn`` that reads
  ``get_worker_info()`` (the pattern of torch's documentation); with ``--sized`` it has a ``len()``, else none;
* ``batch-sampler``: a ``DataLoader`` with a ``batch_sampler`` of one's own, which shuffles each epoch from a random
  stream that runs on across epochs (``--rng torch``: a ``torch.Generator`` in ``.generator``; ``--rng python``: a
  ``random.Random`` in ``.rng``; ``--rng numpy``: a NumPy ``Generator`` in ``.rng``) and makes batches of 3, 4 and 5 samples in turn;
* ``set-epoch``: a ``DistributedSampler(num_replicas=1, rank=0, shuffle=True)`` whose ``set_epoch`` the loop calls
  before each epoch;
* ``thread``: a loader that fetches on a background thread (as MONAI's ``ThreadDataLoader`` does): its ``__iter__``
  starts a thread that fills a ``queue.Queue`` of ``--depth`` batches from an inner ``DataLoader`` and yields from the
  queue; each batch costs ``--load_ms`` of sleep on that thread. Wrapped with ``BenchmarkGenericIteratorWrapper``.

Each sample is its index; each step sleeps ``--step_ms``. Per epoch the script prints ``RECEIVED <json>``: the
sample indices of each batch the loop received, in order. ``--plain``: without benchy (the first three shapes:
``benchy.data_loader``, the one-line edit).
"""

from __future__ import annotations

import argparse
import json
import queue
import random
import threading
import time
from typing import Any, Iterator, List

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, IterableDataset, Sampler, get_worker_info

import benchy


class Indices(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([float(i)])


class Shards(IterableDataset):
    """Samples ``start`` to ``end``; in a worker, the worker's shard (set by :func:`shard`)."""

    def __init__(self, n: int) -> None:
        self.start, self.end = 0, n

    def __iter__(self) -> Iterator[torch.Tensor]:
        for i in range(self.start, self.end):
            yield torch.tensor([float(i)])


class SizedShards(Shards):
    def __len__(self) -> int:
        return self.end - self.start


def shard(worker_id: int) -> None:
    info = get_worker_info()
    data = info.dataset  # the worker's own copy
    per = -(-(data.end - data.start) // info.num_workers)
    data.start, data.end = data.start + worker_id * per, min(data.end, data.start + (worker_id + 1) * per)


class Buckets(Sampler[List[int]]):
    """Shuffled each epoch from a stream that runs on across epochs; batches of 3, 4 and 5 samples in turn."""

    SIZES = (3, 4, 5)

    def __init__(self, n: int, rng: str) -> None:
        self.n, self.kind = n, rng
        if rng == "torch":
            self.generator = torch.Generator().manual_seed(3)
        elif rng == "numpy":
            self.rng = np.random.default_rng(3)
        else:
            self.rng = random.Random(3)

    def _order(self) -> List[int]:
        if self.kind == "torch":
            return torch.randperm(self.n, generator=self.generator).tolist()
        if self.kind == "numpy":
            return [int(i) for i in self.rng.permutation(self.n)]
        order = list(range(self.n))
        self.rng.shuffle(order)
        return order

    def _batches(self, order: List[int]) -> Iterator[List[int]]:
        i, k = 0, 0
        while i < len(order):
            size = self.SIZES[k % len(self.SIZES)]
            yield order[i : i + size]
            i, k = i + size, k + 1

    def __iter__(self) -> Iterator[List[int]]:
        return self._batches(self._order())

    def __len__(self) -> int:
        return sum(1 for _ in self._batches(list(range(self.n))))


class ThreadLoader:
    """Batches of ``inner`` fetched on a background thread into a queue of ``depth``, one thread a pass."""

    def __init__(self, inner: DataLoader, depth: int) -> None:
        self.inner, self.depth = inner, depth

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Any]:
        buffer: queue.Queue = queue.Queue(maxsize=self.depth)
        stop, end = threading.Event(), object()

        def fill() -> None:
            for batch in self.inner:
                while not stop.is_set():
                    try:
                        buffer.put(batch, timeout=0.05)
                        break
                    except queue.Full:
                        pass
                if stop.is_set():
                    return
            buffer.put(end)

        thread = threading.Thread(target=fill, daemon=True)
        thread.start()
        try:
            while True:
                batch = buffer.get()
                if batch is end:
                    return
                yield batch
        finally:
            stop.set()
            thread.join()


def sleepy_collate(load_ms: float):
    def collate(samples: List[torch.Tensor]) -> torch.Tensor:
        time.sleep(load_ms / 1000.0)
        return torch.stack(samples)

    return collate


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shape", choices=["workers", "batch-sampler", "set-epoch", "thread"], required=True)
    p.add_argument("--plain", action="store_true")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--samples", type=int, default=480)
    p.add_argument("--sized", action="store_true")
    p.add_argument("--rng", choices=["torch", "python", "numpy"], default="torch")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--load_ms", type=float, default=0.0)
    p.add_argument("--step_ms", type=float, default=0.0)
    args = p.parse_args()
    torch.manual_seed(1)
    enabled = not args.plain
    sampler = None
    if args.shape == "workers":
        loader: Any = benchy.data_loader(
            enabled, (SizedShards if args.sized else Shards)(args.samples), batch_size=4, num_workers=2, worker_init_fn=shard
        )
    elif args.shape == "batch-sampler":
        loader = benchy.data_loader(enabled, Indices(args.samples), batch_sampler=Buckets(args.samples, args.rng))
    elif args.shape == "set-epoch":
        sampler = DistributedSampler(Indices(args.samples), num_replicas=1, rank=0, shuffle=True, seed=5)
        loader = benchy.data_loader(enabled, Indices(args.samples), batch_size=4, sampler=sampler)
    else:
        inner = DataLoader(Indices(args.samples), batch_size=4, collate_fn=sleepy_collate(args.load_ms))
        loader = ThreadLoader(inner, args.depth)
        if enabled:
            loader = benchy.BenchmarkGenericIteratorWrapper(loader)
    weights = torch.zeros(1)
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        received = []
        for batch in loader:
            received.append([int(v) for v in batch.flatten()])
            weights += batch.mean(0) * 1e-6
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
        print("RECEIVED " + json.dumps(received), flush=True)


if __name__ == "__main__":
    main()
