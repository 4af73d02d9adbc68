"""An unmodified script whose DataLoader spawns its workers (multiprocessing_context="spawn"): under
`benchy run -- python ...` the spawned workers skip benchy's patch (they build no training loader)."""

import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def init(worker_id):
    # One write() per line: the two workers start together and share the pipe; print() writes the text
    # and its newline separately (PYTHONUNBUFFERED), so their lines could interleave and one be lost to the regex.
    os.write(1, f"USER::worker {worker_id} benchy loaded: {'benchy.integrations.runner' in sys.modules}\n".encode())


if __name__ == "__main__":
    ds = TensorDataset(torch.arange(64.0).view(-1, 1))
    loader = DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="spawn", worker_init_fn=init)
    for epoch in range(2):
        print("USER::epoch", epoch, sum(1 for _ in loader), flush=True)
    print("USER::main benchy loaded:", "benchy.integrations.runner" in sys.modules, type(loader).__mro__[0].__module__)
