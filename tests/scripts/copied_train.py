"""A user's training on a copy of a wrapped loader: ``--copy deepcopy|copy|pickle`` made before
training (as frameworks and launchers copy or pickle loaders), ``--after`` a second copy made
once the benchmark is over and trained on for two more epochs; ``--generic`` wraps a plain
DataLoader with BenchmarkGenericIteratorWrapper instead."""

import argparse
import copy
import pickle

import torch
from torch.utils.data import DataLoader, TensorDataset

from benchy.torch import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

COPIES = {"deepcopy": copy.deepcopy, "copy": copy.copy, "pickle": lambda o: pickle.loads(pickle.dumps(o))}


def train(loader, epochs: int, tag: str) -> None:
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        seen = []
        for x, y in loader:
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += y.tolist()
        print(f"USER::{tag} epoch {epoch} samples {len(seen)} distinct {len(set(seen))} len {len(loader)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copy", choices=sorted(COPIES), default="deepcopy")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--after", action="store_true")
    parser.add_argument("--generic", action="store_true")
    args = parser.parse_args()
    data = TensorDataset(torch.randn(40, 4), torch.arange(40))
    if args.generic:
        original = BenchmarkGenericIteratorWrapper(DataLoader(data, batch_size=4, shuffle=True))
    else:
        original = BenchmarkDataLoader(data, batch_size=4, shuffle=True)
    loader = COPIES[args.copy](original)
    print(f"USER::copy is a {type(loader).__name__}", flush=True)
    train(loader, args.epochs, "copy")
    if args.after:
        train(COPIES[args.copy](loader), 2, "after")


if __name__ == "__main__":
    main()
