"""An ordinary training script that knows nothing of benchy, for `benchy run` (zero edit).

A train loader and a validation loader, built from both import paths of DataLoader and
optionally from a subclass; argv, ``__main__``, isinstance and the exit status are checked or
printed so that the tests can see they behave as without benchy.
"""

import argparse
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dataloader_module
from torch.utils.data.distributed import DistributedSampler


def say(text: str) -> None:
    """A USER:: line in one write: ranks share the pipe, and print() writes the text and newline apart."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Items(Dataset):
    def __init__(self, n, fetch_ms):
        self.n, self.fetch_ms = n, fetch_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.fetch_ms:
            time.sleep(self.fetch_ms / 1000.0)
        return torch.full((4,), float(i)), i % 2


class MyLoader(DataLoader):
    """A script's own DataLoader subclass."""

    def describe(self):
        return f"MyLoader of {len(self.dataset)} samples"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--samples", type=int, default=48)
    p.add_argument("--step_ms", type=float, default=1.0)
    p.add_argument("--fetch_ms", type=float, default=0.5)
    p.add_argument("--peek", action="store_true", help="next(iter(val)) before training, to look at a batch")
    p.add_argument(
        "--peek_each_epoch",
        action="store_true",
        help="next(iter(train)) before every epoch's loop (as PyTorch's DDP tutorial does)",
    )
    p.add_argument("--subclass", action="store_true")
    p.add_argument("--exit_status", type=int, default=0)
    p.add_argument("--raise_at_end", action="store_true")
    p.add_argument("--ddp", action="store_true")
    args = p.parse_args()
    say(f"USER::argv {sys.argv}")
    sampler = None
    if args.ddp:
        dist.init_process_group("gloo")
        sampler = DistributedSampler(Items(args.samples, 0), shuffle=True)
    cls = MyLoader if args.subclass else DataLoader
    train = cls(Items(args.samples, args.fetch_ms), batch_size=4, shuffle=sampler is None, sampler=sampler)
    val = dataloader_module.DataLoader(Items(16, 0), batch_size=4)
    assert isinstance(train, DataLoader) and isinstance(val, DataLoader)
    assert isinstance(train, dataloader_module.DataLoader) and issubclass(MyLoader, DataLoader)
    assert isinstance(torch.utils.data.DataLoader(Items(4, 0)), DataLoader)
    if args.subclass:
        say(f"USER::{train.describe()}")
    if args.peek:
        x, _ = next(iter(val))
        say(f"USER::peeked a batch of {len(x)}")
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        if args.peek_each_epoch:
            next(iter(train))
        steps = 0
        for x, y in train:
            time.sleep(args.step_ms / 1000.0)
            steps += 1
        seen = sum(len(x) for x, _ in val)
        say(f"USER::epoch {epoch} steps {steps} val {seen}")
    if args.raise_at_end:
        raise RuntimeError("the script's own error")
    say("USER::done")
    if args.ddp:
        dist.destroy_process_group()
    return args.exit_status


if __name__ == "__main__":
    sys.exit(main())
