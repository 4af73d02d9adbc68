"""A loop whose training goes on after benchy's schedule, for the watch: each batch costs ``--load_ms`` of sleep in
the loader (twice that from epoch ``--slow_from`` on, counting from 1; 0: never) and ``--step_ms`` in the step;
``--workers`` loader workers; ``--epochs`` epochs of ``--batches`` batches; ``--stop_at_len``: each epoch takes
``len(loader)`` batches and never asks past the last (as Lightning's loop does). Prints ``EPOCH <k> <wait share>``
for each epoch, its own share of time in ``next()`` after the first batch up to the ask for the last (as the watch
counts it: the last step, whose end no ask marks where the loop stops at the length, is left out)."""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import Dataset

import benchy


class Slowing(Dataset):  # type: ignore[type-arg]
    def __init__(self, batches: int, load_ms: float, slow_from: int) -> None:
        self.batches, self.load_ms, self.slow_from = batches, load_ms, slow_from
        self.epoch = 1  # set by the loop before each epoch (a worker gets the value at its pass's start)

    def __len__(self) -> int:
        return self.batches

    def __getitem__(self, i: int) -> torch.Tensor:
        slow = 0 < self.slow_from <= self.epoch
        time.sleep(self.load_ms * (2 if slow else 1) / 1000.0)
        return torch.full((8, 4), float(i))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=9)
    p.add_argument("--batches", type=int, default=50)
    p.add_argument("--load_ms", type=float, default=10.0)
    p.add_argument("--step_ms", type=float, default=20.0)
    p.add_argument("--slow_from", type=int, default=0)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--stop_at_len", action="store_true")
    args = p.parse_args()
    data = Slowing(args.batches, args.load_ms, args.slow_from)
    loader = benchy.data_loader(True, data, batch_size=None, num_workers=args.workers)
    weights = torch.zeros(4)
    for epoch in range(1, args.epochs + 1):
        data.epoch = epoch
        it = iter(loader)
        next(it)
        wait, taken, length = 0.0, 1, len(loader)
        start = t0 = time.perf_counter()
        share = 0.0
        for _, batch in zip(range(length - 1), it) if args.stop_at_len else enumerate(it):
            taken += 1
            if taken == length:  # the ask for the last batch
                share = wait / (t0 - start)
            wait += time.perf_counter() - t0
            weights += batch.mean(0) * 1e-6
            time.sleep(args.step_ms / 1000.0)
            t0 = time.perf_counter()
        print(f"EPOCH {epoch} {share:.4f}", flush=True)


if __name__ == "__main__":
    main()
