"""A user's training with persistent loader workers that goes on after the benchmark (exit_after_tests: false).

Prints, per epoch: batches, samples seen, distinct samples, len(loader), and the worker processes
that made the epoch's samples; at the end, this process's child processes, then again once the
script drops the loader (with the cyclic garbage collector off: a plain DataLoader's workers end
as soon as the loader is dropped, and so must a wrapped one's).
"""

import gc
import os
import sys
import time

import psutil
import torch
from torch.utils.data import Dataset

from benchy.torch import BenchmarkDataLoader


class Numbered(Dataset):
    def __len__(self) -> int:
        return 48

    def __getitem__(self, i: int):
        return torch.full((3,), float(i)), torch.tensor([i, os.getpid()])


def main() -> None:
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    loader = BenchmarkDataLoader(Numbered(), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        seen, pids, steps = [], set(), 0
        for x, y in loader:
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += y[:, 0].tolist()
            pids |= set(y[:, 1].tolist())
            steps += 1
        print(
            f"USER::epoch {epoch} steps {steps} samples {len(seen)} distinct {len(set(seen))} len {len(loader)} "
            f"workers {','.join(map(str, sorted(pids)))}",
            flush=True,
        )
    children = sorted(c.pid for c in psutil.Process().children(recursive=True))
    print(f"USER::children {','.join(map(str, children))}", flush=True)
    gc.disable()
    del loader
    deadline = time.monotonic() + 10.0
    while psutil.Process().children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"USER::children after the loader is dropped {len(psutil.Process().children(recursive=True))}", flush=True)


if __name__ == "__main__":
    main()
