"""A Hugging Face Accelerate training loop, with benchy as the manual's recipe says (docs/guide/frameworks.md).

``--recipe wrap`` (the recipe): prepare the plain DataLoader, then wrap what ``prepare()``
returned with ``benchy.wrap`` (the batch size is read from the prepared loader).
``--recipe naive``: swap in ``BenchmarkDataLoader`` before ``prepare()``, which replaces it;
benchy must then say at exit that it measured nothing, and why.
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch
from torch.utils.data import DataLoader, TensorDataset

import benchy
from benchy.torch import BenchmarkDataLoader

warnings.filterwarnings("ignore")
from accelerate import Accelerator  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--recipe", choices=["wrap", "naive"], default="wrap")
    p.add_argument("--samples", type=int, default=80)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--step_ms", type=float, default=0.0)
    benchy.add_arguments(p)
    args = p.parse_args()

    accelerator = Accelerator(cpu=True)
    data = TensorDataset(torch.randn(args.samples, 8), torch.randint(0, 2, (args.samples,)))
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.recipe == "naive":
        loader = BenchmarkDataLoader(data, batch_size=args.batch_size, shuffle=True)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    else:
        loader = DataLoader(data, batch_size=args.batch_size, shuffle=True)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        loader = benchy.wrap(args, loader)  # the recipe: wrap the loader prepare() returned

    for epoch in range(args.epochs):
        seen = 0
        for inputs, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0)
            seen += len(labels)
        print(f"USER::epoch {epoch} samples {seen}", flush=True)
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
