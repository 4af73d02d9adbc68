"""Training loops as people write them, for benchy to fit as they are (``--pattern``):

* ``for``: ``for batch in loader`` each epoch (the ordinary loop);
* ``steps``: ``for step in range(max_steps): batch = next(it)``, ``it`` a generator that cycles the
  loader (a new pass each time the last one ends), as many repositories write it;
* ``infinite``: the same loop over a loader of an endless ``IterableDataset`` (one epoch, never ending);
* ``break``: an epoch loop that breaks out after ``--take`` batches each epoch;
* ``iterable``: an ``IterableDataset`` split across ``--workers`` workers, without ``len()``;
* ``persistent``: ``for batch in loader`` over a loader with ``persistent_workers=True``.

The loader is a plain ``torch.utils.data.DataLoader`` (for ``benchy run``), or ``benchy.data_loader``
with ``--enable_benchy`` (the one-line edit). Each epoch prints ``USER::epoch E steps S len L``
(``len`` -1 without one) ``distinct D`` (the samples it saw, each once); the end ``USER::done``.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

import benchy


class Samples(Dataset):
    def __init__(self, n: int, sample_ms: float) -> None:
        self.n, self.sample_ms = n, sample_ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        return torch.full((16,), float(i)), i % 4


class Stream(IterableDataset):
    """``n`` samples a pass (endless when ``n`` is 0), split between the loader's workers; no ``len()``."""

    def __init__(self, n: int, sample_ms: float) -> None:
        self.n, self.sample_ms = n, sample_ms

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        i = worker
        while self.n == 0 or i < self.n:
            if self.sample_ms:
                time.sleep(self.sample_ms / 1000.0)
            yield torch.full((16,), float(i)), i % 4
            i += workers


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pattern", choices=["for", "steps", "infinite", "break", "iterable", "persistent"], default="for")
    p.add_argument("--samples", type=int, default=96)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--max_steps", type=int, default=300)
    p.add_argument("--take", type=int, default=5, help="--pattern break: batches taken each epoch")
    p.add_argument("--step_ms", type=float, default=1.0)
    p.add_argument("--sample_ms", type=float, default=0.0)
    benchy.add_arguments(p)
    args = p.parse_args()

    if args.pattern in ("iterable", "infinite"):
        data = Stream(0 if args.pattern == "infinite" else args.samples, args.sample_ms)
        kwargs = dict(batch_size=args.batch_size, num_workers=args.workers)
    else:
        data = Samples(args.samples, args.sample_ms)
        kwargs = dict(
            batch_size=args.batch_size,
            shuffle=True,
            num_workers=args.workers,
            persistent_workers=args.pattern == "persistent" and args.workers > 0,
        )
    if args.enable_benchy:
        loader = benchy.data_loader(args, data, **kwargs)
    else:
        loader = DataLoader(data, **kwargs)
    model = torch.nn.Linear(16, 4)
    seen: set = set()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch) -> None:
        x, y = batch
        seen.update(int(v) for v in x[:, 0])
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.step_ms:
            time.sleep(args.step_ms / 1000.0)

    def length() -> int:
        try:
            return len(loader)
        except TypeError:
            return -1

    if args.pattern in ("steps", "infinite"):

        def cycle():
            epoch = 0
            while True:
                steps = 0
                for batch in loader:
                    steps += 1
                    yield batch
                print(f"USER::epoch {epoch} steps {steps} len {length()} distinct {len(seen)}", flush=True)
                seen.clear()
                epoch += 1

        it = cycle()
        for _ in range(args.max_steps):
            step(next(it))
        print(f"USER::steps {args.max_steps}", flush=True)
    else:
        for epoch in range(args.epochs):
            steps = 0
            for batch in loader:
                steps += 1
                step(batch)
                if args.pattern == "break" and steps == args.take:
                    break
            print(f"USER::epoch {epoch} steps {steps} len {length()} distinct {len(seen)}", flush=True)
            seen.clear()
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
