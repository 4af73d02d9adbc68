"""What the stage trials' timers cost, per sample and per batch, against the same loader without them.

    python benchmarks/stages_cost.py [--batches 400] [--reps 5]

1. ``timer_cost(k)``: benchy's own estimate (what the STAGES line prints): a trivial dataset read
   through the timers with ``k`` transform steps, less the same read plainly, per sample.
2. A DataLoader without workers over an in-memory dataset of ``(tensor, label)`` samples with a
   two-step Compose, batches of 32: the plain loader against its instrumented copy
   (``benchy.measure.stages.instrument``), alternated, fastest of ``--reps`` each; the difference
   per sample is the timers' cost in the process that makes the batches (a worker, or the main
   process), the difference per batch includes the batch's record and marks.
3. The same with 2 workers: the marks' pickling and unpickling on the way to the main process.

The counted IO trials never run these timers (the stage trials are separate, diagnostic trials).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
from torch.utils.data import DataLoader

from benchy.measure.stages import Steps, instrument, timer_cost


class Scale:
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Shift:
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Memory:
    def __init__(self, n: int) -> None:
        self.data = [torch.full((16,), float(i)) for i in range(n)]
        self.transform = Steps([Scale(), Shift()])

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> Any:
        return self.transform(self.data[i]), i


def drain(loader: Any, batches: int) -> float:
    it = iter(loader)
    next(it)
    t0 = time.perf_counter()
    for _ in range(batches):
        next(it)
    seconds = time.perf_counter() - t0
    shutdown = getattr(it, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()
    return seconds


def compare(workers: int, batches: int, reps: int, batch: int = 32) -> None:
    args = dict(dataset=Memory((batches + 2) * batch), batch_size=batch, num_workers=workers)
    plain, timed = [], []
    for _ in range(reps):
        plain.append(drain(DataLoader(**args), batches))
        timed.append(drain(instrument(dict(args)).loader, batches))
    p, t = min(plain), min(timed)
    print(
        f"  {workers} workers: plain {1e6 * p / batches:8.1f} us a batch, instrumented {1e6 * t / batches:8.1f}"
        f" us a batch: +{1e6 * (t - p) / batches:.1f} us a batch, +{1e6 * (t - p) / (batches * batch):.2f} us a "
        f"sample ({t / p:.3f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=400)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("timer_cost(k): the timers' own cost per sample with k transform steps")
    for k in range(5):
        print(f"  k = {k}: {1e6 * timer_cost(k):.2f} us a sample")
    print(
        f"a DataLoader over (tensor, label) samples, a two-step Compose, 32 a batch, {args.batches} batches "
        f"(fastest of {args.reps}):"
    )
    for workers in (0, 2):
        compare(workers, args.batches, args.reps)


if __name__ == "__main__":
    main()
