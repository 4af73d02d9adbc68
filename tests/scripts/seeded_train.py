"""A seeded training run that says which batches it saw, to be compared with the same run under benchy.

Global seeds (torch, random, numpy) and a ``generator`` on the loader; a sampler whose ``set_epoch``
changes what it draws (as ``DistributedSampler`` does), called at each epoch's start; a dataset that
names the epoch each sample was drawn under; with workers, a random augmentation drawn in the workers
(their seeds come from the loader's generator); a step with dropout (torch's global stream).
Each step prints ``USER::batch EPOCH STEP DIGEST`` (the batch's samples and augmentation); each epoch
``USER::epoch E steps S len L stale K`` (K: batches made under another epoch's sampler state that
were not one same object, i.e. not benchy's one cached SYNTHETIC batch); the loader is plain (for
``benchy run``) or ``benchy.data_loader`` with ``--enable_benchy``.
"""

from __future__ import annotations

import argparse
import random
from typing import Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler, get_worker_info

import benchy

N = 48  # samples an epoch


class EpochSampler(Sampler[int]):
    """A shuffle drawn from the loader's generator, each index tagged with the epoch set last."""

    def __init__(self, generator: torch.Generator) -> None:
        self.generator, self.epoch = generator, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return N

    def __iter__(self) -> Iterator[int]:
        for i in torch.randperm(N, generator=self.generator).tolist():
            yield self.epoch * N + i


class Tagged(Dataset):
    def __init__(self, augment: bool) -> None:
        self.augment = augment

    def __len__(self) -> int:
        return N

    def __getitem__(self, k: int):
        epoch, i = divmod(k, N)
        noise = torch.rand(()).item() if self.augment and get_worker_info() is not None else 0.0
        return torch.tensor([float(epoch), float(i), noise]), i % 3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=12)
    benchy.add_arguments(p)
    args = p.parse_args()
    torch.manual_seed(1)
    random.seed(1)
    np.random.seed(1)
    generator = torch.Generator().manual_seed(7)
    sampler = EpochSampler(generator)
    kwargs = dict(batch_size=4, sampler=sampler, num_workers=args.workers, generator=generator)
    data = Tagged(augment=args.workers > 0)
    loader = benchy.data_loader(args, data, **kwargs) if args.enable_benchy else DataLoader(data, **kwargs)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        steps, stale = 0, []
        for x, y in loader:
            if int(x[0, 0]) != epoch or int(x[:, 0].max()) != epoch:
                stale.append(x)  # kept, so that no two of them share an id()
            digest = ",".join(f"{int(row[1])}:{row[2]:.6f}" for row in x)
            print(f"USER::batch {epoch} {steps} {digest}", flush=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
        print(f"USER::epoch {epoch} steps {steps} len {len(loader)} stale {len({id(b) for b in stale})}", flush=True)
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
