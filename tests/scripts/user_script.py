"""A user's training script, driven by flags, that the end-to-end tests run in a subprocess.

It uses benchy exactly as a user would: the drop-in loader or the generic wrapper, an
ordinary epoch loop, and ``BENCHY_CONFIG_FILE`` for the configuration.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch.utils.data import Dataset

import benchy
from benchy.torch import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper


class Items(Dataset):
    """``n`` samples of a chosen structure; optional sleep per sample."""

    def __init__(self, n: int, kind: str, sample_ms: float, raise_after: int = -1) -> None:
        self.n, self.kind, self.sample_ms, self.raise_after = n, kind, sample_ms, raise_after
        self.served = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        self.served += 1
        if self.served == self.raise_after:
            raise OSError(f"cannot read sample {i}")
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        x = torch.full((4,), float(i))
        if self.kind == "tensor":
            return x
        if self.kind == "dict":
            return {"image": x, "label": i % 3}
        return x, i % 3


class Generic:
    """A re-iterable non-DataLoader loader yielding batches of the chosen structure."""

    def __init__(self, n: int, batch_size: int, kind: str, fetch_ms: float) -> None:
        self.n, self.batch_size, self.kind, self.fetch_ms = n, batch_size, kind, fetch_ms

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for start in range(0, self.n, self.batch_size):
            if self.fetch_ms:
                time.sleep(self.fetch_ms / 1000.0)
            b = min(self.batch_size, self.n - start)
            x = torch.zeros(b, 4)
            if self.kind == "tensor":
                yield x
            elif self.kind == "dict":
                yield {"image": x, "label": torch.zeros(b)}
            elif self.kind == "dali":
                yield [{"data": x, "label": torch.zeros(b)}]
            else:
                yield x, torch.zeros(b)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["dataloader", "generic", "plain"], default="dataloader")
    p.add_argument("--kind", choices=["tuple", "tensor", "dict", "dali"], default="tuple")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--drop_last", action="store_true")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--step_ms", type=float, default=0.0)
    p.add_argument("--fetch_ms", type=float, default=0.0)
    p.add_argument("--raise_at", default=None, help="EPOCH:STEP at which the step raises")
    p.add_argument("--break_at", default=None, help="EPOCH:STEP at which the loop breaks")
    p.add_argument("--loader_raise_after", type=int, default=-1, help="the dataset raises on its Nth sample")
    p.add_argument("--forbid_cuda", action="store_true", help="fail if benchy makes any CUDA runtime call")
    benchy.add_arguments(p)
    args = p.parse_args()

    if args.forbid_cuda:
        def forbidden(*a, **k):
            raise AssertionError("benchy made a CUDA runtime call")
        torch.cuda.cudart = forbidden
        torch.cuda.synchronize = forbidden

    if args.loader == "dataloader":
        loader = BenchmarkDataLoader(
            Items(args.samples, args.kind, args.fetch_ms, args.loader_raise_after), batch_size=args.batch_size,
            num_workers=args.workers, persistent_workers=args.persistent, drop_last=args.drop_last,
        )
    elif args.loader == "generic":
        loader = BenchmarkGenericIteratorWrapper(Generic(args.samples, args.batch_size, args.kind, args.fetch_ms), args.batch_size)
    else:
        loader = benchy.data_loader(args, Items(args.samples, args.kind, args.fetch_ms), batch_size=args.batch_size,
                                    num_workers=args.workers)
    raise_at = tuple(int(v) for v in args.raise_at.split(":")) if args.raise_at else None
    break_at = tuple(int(v) for v in args.break_at.split(":")) if args.break_at else None

    for epoch in range(args.epochs):
        steps = 0
        for step, batch in enumerate(loader):
            if raise_at == (epoch, step):
                raise RuntimeError(f"boom in the training step at epoch {epoch} step {step}")
            if break_at is not None and break_at[1] == step and break_at[0] in (-1, epoch):
                break
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
            steps += 1
        print(f"USER::epoch {epoch} steps {steps} len {len(loader)}", flush=True)
    print("USER::done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
