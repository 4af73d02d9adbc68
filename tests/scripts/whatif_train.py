"""A loop of known costs for the what-if tests: each item sleeps (or does CPU work) ``--item-ms`` in the
loader, each step sleeps (or works) ``--step-ms``; batches of 4. ``--fail-in-workers``: the dataset raises in a loader
worker (a loader that only works without workers)."""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import Dataset

from benchy.torch import BenchmarkDataLoader

_A = torch.ones(48, 48)


def work(seconds: float) -> None:
    end = time.thread_time() + seconds  # CPU work: this much of this thread's CPU time
    while time.thread_time() < end:
        torch.mm(_A, _A)


class Items(Dataset):
    def __init__(self, item: float, cpu: bool, fail_in_workers: bool = False) -> None:
        self.item, self.cpu, self.fail_in_workers = item, cpu, fail_in_workers

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int):
        if self.fail_in_workers and torch.utils.data.get_worker_info() is not None:
            raise RuntimeError("this dataset cannot run in a loader worker")
        (work if self.cpu else time.sleep)(self.item)
        return torch.zeros(8), 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--item-ms", type=float, default=1.0)
    parser.add_argument("--step-ms", type=float, default=6.0)
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--model", action="store_true", help="the step is a small model's forward, backward and SGD step")
    parser.add_argument("--fail-in-workers", action="store_true", help="the dataset raises in a loader worker")
    args = parser.parse_args()
    torch.set_num_threads(1)
    loader = BenchmarkDataLoader(
        Items(args.item_ms / 1e3, args.cpu, args.fail_in_workers), batch_size=4, num_workers=args.workers
    )
    step = args.step_ms / 1e3
    model = torch.nn.Sequential(torch.nn.Linear(8, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(100):
        for x, _y in loader:
            if args.model:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
            (work if args.cpu else time.sleep)(step)


if __name__ == "__main__":
    main()
