"""A user-like training script whose step's FLOPs and tokens are known by hand, run by the compute tests.

``--kind mlp``: batches of (8 features, label), a two-layer MLP (8 -> 16 -> 4) trained with SGD.
``--kind tokens``: dict batches of token ids padded per batch (lengths 4, 8, 12, 16 in every batch of 4:
64 positions, 40 tokens), an embedding and a linear head. ``--peek``: ``next(iter(loader))`` before
every epoch. Prints ``USER::epoch N steps S len L``.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, TensorDataset

from benchy.torch import BenchmarkDataLoader


class Sequences(Dataset):
    def __len__(self) -> int:
        return 4000

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.arange(1, 4 * (i % 4 + 1) + 1)


def pad(items: List[torch.Tensor]) -> Dict[str, Any]:
    longest = max(len(x) for x in items)
    ids = torch.zeros(len(items), longest, dtype=torch.long)
    mask = torch.zeros(len(items), longest, dtype=torch.long)
    for k, x in enumerate(items):
        ids[k, : len(x)], mask[k, : len(x)] = x, 1
    return {"input_ids": ids, "attention_mask": mask}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=("mlp", "tokens"), default="mlp")
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--peek", action="store_true", help="next(iter(loader)) before every epoch (a batch's size)")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.kind == "mlp":
        data = TensorDataset(torch.randn(4000, 8), torch.randint(0, 4, (4000,)))
        loader = BenchmarkDataLoader(data, batch_size=5, shuffle=True)
        model: nn.Module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    else:
        loader = BenchmarkDataLoader(Sequences(), batch_size=4, collate_fn=pad)
        model = nn.Sequential(nn.Embedding(17, 8), nn.Linear(8, 17))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        if args.peek:
            next(iter(loader))  # as the PyTorch DDP tutorial's trainer does for the batch size
        steps = 0
        for batch in loader:
            if args.kind == "mlp":
                x, y = batch
                loss = F.cross_entropy(model(x), y)
            else:
                logits = model(batch["input_ids"])
                loss = F.cross_entropy(logits.flatten(0, 1), batch["input_ids"].flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
        print(f"USER::epoch {epoch} steps {steps} len {len(loader)}", flush=True)


if __name__ == "__main__":
    main()
