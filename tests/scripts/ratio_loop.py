"""A training loop whose sides are sleeps of known length: the loader makes a batch in ``--load_ms`` (one sleep in
``__getitems__``, in whichever process makes it: each of ``--workers`` workers takes ``workers x load_ms``, so that
the loader's rate stays one batch per ``load_ms``), and the step takes ``--step_ms`` (one sleep). Data loading limits
training by ``load_ms / step_ms`` where that is above 1, compute by its inverse below. Sleeps keep their ratio on a
busy machine. ``--epochs`` epochs of ``--batches`` batches; ``USER::done`` at the end. The loader is a plain
DataLoader (for ``benchy run``), or ``benchy.data_loader`` with ``--enable_benchy`` (the one-line edit).
"""

from __future__ import annotations

import argparse
import time
from typing import List

import torch
from torch.utils.data import DataLoader, Dataset

import benchy


class Sleepy(Dataset):  # type: ignore[type-arg]
    def __init__(self, n: int, per_batch: float) -> None:
        self.n, self.per_batch = n, per_batch

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)

    def __getitems__(self, indices: List[int]) -> List[torch.Tensor]:
        time.sleep(self.per_batch)
        return [torch.zeros(2) for _ in indices]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--load_ms", type=float, required=True)
    p.add_argument("--step_ms", type=float, required=True)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--epochs", type=int, default=40)
    benchy.add_arguments(p)
    args = p.parse_args()
    data = Sleepy(args.batches * 8, args.load_ms * max(1, args.workers) / 1e3)
    kwargs = dict(batch_size=8, num_workers=args.workers, persistent_workers=args.workers > 0)
    loader = benchy.data_loader(args, data, **kwargs) if args.enable_benchy else DataLoader(data, **kwargs)
    for _ in range(args.epochs):
        for _batch in loader:
            time.sleep(args.step_ms / 1e3)
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
