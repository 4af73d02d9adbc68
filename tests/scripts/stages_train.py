"""A training script over a made-up dataset with known stage times, run by the stage-trial tests.

``--files DIR``: each sample is also read from a file in DIR (written by the test: page-cached).
``--generic``: the loader is wrapped with the generic wrapper instead (no stage trials there).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from stage_datasets import Compose, Items, Normalize, Resize, SlowCollate

from benchy.torch import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper


class FileItems(Items):
    """Items that also read one file each (from the page cache, as the test just wrote them)."""

    def __init__(self, directory: str, **kw) -> None:
        super().__init__(**kw)
        self.files = sorted(os.path.join(directory, f) for f in os.listdir(directory))

    def __getitem__(self, i: int):
        with open(self.files[i % len(self.files)], "rb") as f:
            f.read()
        return super().__getitem__(i)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slow-worker", type=int, default=-1)
    parser.add_argument("--files")
    parser.add_argument("--generic", action="store_true")
    args = parser.parse_args()
    kw = dict(n=4000, own_ms=1.0, transform=Compose([Resize(0.5), Normalize(1.5)]), slow_worker=args.slow_worker, slow_ms=4.0)
    dataset = FileItems(args.files, **kw) if args.files else Items(**kw)
    loader_args = dict(batch_size=4, num_workers=args.workers, collate_fn=SlowCollate(2.0))
    if args.generic:
        loader = BenchmarkGenericIteratorWrapper(DataLoader(dataset, **loader_args))
    else:
        loader = BenchmarkDataLoader(dataset, **loader_args)
    model = torch.nn.Linear(8, 1)
    for _ in range(50):
        for x, _y in loader:
            model(x).sum().backward()


if __name__ == "__main__":
    main()
