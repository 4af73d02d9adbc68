"""A seeded training run that says which batches it saw, to be compared with the same run under benchy.

The seeded patterns people write (``--pattern``):

* ``generator``: ``DataLoader(shuffle=True, generator=g)`` with ``g`` seeded;
* ``global``: ``shuffle=True`` and only ``torch.manual_seed`` (the sampler draws its seed from the global stream);
* ``sampler``: a sampler of one's own that draws each index when it is asked for (from a generator of its own
  that runs on across epochs), so that a pass asked for fewer indices leaves it elsewhere;
* ``persistent``: ``shuffle=True, generator=g, persistent_workers=True`` (the workers' random streams run on
  across epochs);
* ``distributed``: ``DistributedSampler(shuffle=True)`` with ``set_epoch``, one process per rank under
  torchrun (gloo).

Every pattern also seeds Python's and NumPy's streams, sets the dataset's epoch before each ``for batch in
loader`` (the ``set_epoch`` pattern: each sample says the epoch it was made under), draws a random
augmentation for each sample (in the workers with ``--workers``; on the global stream in the main process
without), and runs a step with dropout (the global stream). Each step prints ``USER::batch EPOCH STEP #OBJECT
INDICES AUGMENTATION`` (``OBJECT``: the batch object's number, in the order the loop first got each: one handed
out at several steps is benchy's cached SYNTHETIC batch; ``INDICES``: ``epoch:index`` of each sample); each epoch
``USER::epoch E steps S len L``. The loader is plain (for ``benchy run``) or ``benchy.data_loader`` with ``--enable_benchy``. Under
torchrun every line starts with ``USER::rank R``.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Dict, Iterator, Tuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

import benchy


class Tagged(Dataset):
    """``n`` samples, each made under the epoch set last (``set_epoch``), with a random augmentation."""

    def __init__(self, n: int) -> None:
        self.n, self.epoch = n, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        noise = torch.rand(()).item()  # in a worker: its own stream, seeded from the pass's base seed
        return torch.tensor([float(self.epoch), float(i), noise]), i % 3


class Drawing(Sampler[int]):
    """Each index drawn when it is asked for, from a generator of its own that runs on across epochs."""

    def __init__(self, n: int, seed: int) -> None:
        self.n = n
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.n):
            yield int(torch.randint(self.n, (1,), generator=self.generator))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pattern", choices=["generator", "global", "sampler", "persistent", "distributed"], default="generator")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--samples", type=int, default=80)
    p.add_argument("--batch_size", type=int, default=4)
    benchy.add_arguments(p)
    args = p.parse_args()
    prefix = "USER::"
    distributed = args.pattern == "distributed"
    if distributed:
        torch.distributed.init_process_group("gloo")
        prefix = f"USER::rank {torch.distributed.get_rank()} "
    torch.manual_seed(1)
    random.seed(1)
    np.random.seed(1)
    data = Tagged(args.samples)
    kwargs: Dict[str, object] = dict(batch_size=args.batch_size, num_workers=args.workers)
    if args.pattern in ("generator", "persistent"):
        kwargs.update(shuffle=True, generator=torch.Generator().manual_seed(7))
        kwargs["persistent_workers"] = args.pattern == "persistent"
    elif args.pattern == "global":
        kwargs["shuffle"] = True
    elif args.pattern == "sampler":
        kwargs["sampler"] = Drawing(args.samples, 11)
    else:
        kwargs["sampler"] = torch.utils.data.DistributedSampler(data, shuffle=True, seed=5)
    loader = benchy.data_loader(args, data, **kwargs) if args.enable_benchy else DataLoader(data, **kwargs)
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen: Dict[int, Tuple[int, object]] = {}  # every batch object handed out (kept: no two share an id()), numbered
    lines = []
    for epoch in range(args.epochs):
        data.set_epoch(epoch)
        if distributed:
            kwargs["sampler"].set_epoch(epoch)  # type: ignore[attr-defined]
        steps = 0
        for x, y in loader:
            kind = seen.setdefault(id(x), (len(seen), x))[0]
            indices = ",".join(f"{int(row[0])}:{int(row[1])}" for row in x)
            noise = ",".join(f"{row[2]:.6f}" for row in x)
            lines.append(f"{prefix}batch {epoch} {steps} #{kind} {indices} {noise}")
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
        lines.append(f"{prefix}epoch {epoch} steps {steps} len {len(loader)}")
        sys.stdout.write("\n".join(lines) + "\n")  # one write: ranks share the pipe
        sys.stdout.flush()
        lines = []
    sys.stdout.write(f"{prefix}done\n")
    sys.stdout.flush()
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
