"""A GPU-shaped training loop on the CPU: a DataLoader with 8 workers in step (each sample's ``__getitem__`` sleeps,
so a worker's batch takes ``batch x sample_ms``: the workers hand over 8 batches at once, then nothing for a whole
batch's loading time), ``shuffle=True``, ``persistent_workers=True``, and a step that sleeps a few milliseconds.

Run plain (``--mode train`` or ``--mode loader``: the loader alone, no step) it prints its own steady throughput:
``USER::STEADY <samples/s>``, over every epoch after the first from its second batch to its last whole round of the
workers (its epochs' start-ups left out). Run under ``benchy run`` (with ``--mode train``) it is the loop benchy
measures. ``USER::done`` at the end.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Samples(Dataset):
    def __init__(self, n: int, sample_ms: float) -> None:
        self.n, self.sample_ms = n, sample_ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(self.sample_ms / 1000.0)
        return torch.zeros(4), i


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--sample_ms", type=float, default=2.0)
    p.add_argument("--step_ms", type=float, default=2.0)
    p.add_argument("--epoch_batches", type=int, default=100)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--mode", choices=["train", "loader"], default="train")
    args = p.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(
        Samples(args.epoch_batches * args.batch_size, args.sample_ms),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        persistent_workers=args.workers > 0,
    )
    step = args.step_ms / 1000.0
    samples, seconds, rounds = 0, 0.0, max(1, args.workers)
    for epoch in range(args.epochs):
        stamps = []
        for _x, _y in loader:
            stamps.append(time.perf_counter())
            if args.mode == "train":
                time.sleep(step)
        periods = (len(stamps) - 2) // rounds * rounds
        if epoch > 0 and periods > 0:
            samples += periods * args.batch_size
            seconds += stamps[1 + periods] - stamps[1]
    if seconds > 0:
        print(f"USER::STEADY {samples / seconds:.3f}", flush=True)
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
