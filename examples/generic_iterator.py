"""benchy around a non-DataLoader loader: DALI-style batches (a list of per-pipeline dicts).

    python examples/generic_iterator.py --enable_benchy

``BenchmarkGenericIteratorWrapper(loader, batch_size)`` works with any re-iterable loader;
here one that yields ``[{"data": x, "label": y}]`` per batch, as NVIDIA DALI's
``DALIGenericIterator`` does with one pipeline, and resets itself at the end of a pass.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import benchy


class DaliStyleLoader:
    """Batches of synthetic features made on the fly, with a short pause per batch (like I/O)."""

    def __init__(self, nsamples: int, batch_size: int, features: int = 64, io_ms: float = 2.0) -> None:
        self.nsamples, self.batch_size, self.features, self.io_ms = nsamples, batch_size, features, io_ms
        self.weights = torch.randn(features, 3, generator=torch.Generator().manual_seed(1))
        self.epoch = 0

    def __len__(self) -> int:
        return (self.nsamples + self.batch_size - 1) // self.batch_size

    def reset(self) -> None:
        """DALI iterators need reset() between passes; this one resets itself (auto_reset)."""

    def __iter__(self):
        g = torch.Generator().manual_seed(self.epoch)
        self.epoch += 1
        for start in range(0, self.nsamples, self.batch_size):
            n = min(self.batch_size, self.nsamples - start)  # the last batch may be short
            time.sleep(self.io_ms / 1000.0)  # stands in for reading and decoding
            x = torch.randn(n, self.features, generator=g)
            y = (x @ self.weights).argmax(1)
            yield [{"data": x, "label": y}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_epochs", type=int, default=None, help="default: 10, or as many as benchy's schedule may need")
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--nsamples", type=int, default=5000)
    benchy.add_arguments(parser)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    # The one line: the wrapped loader with --enable_benchy, the loader itself without.
    loader = benchy.wrap(args, DaliStyleLoader(args.nsamples, args.batch_size), args.batch_size)

    num_epochs = args.num_epochs or 10
    if args.num_epochs is None and isinstance(loader, benchy.BenchmarkGenericIteratorWrapper):
        num_epochs = max(num_epochs, loader.benchy.epochs_needed() or 1)  # it ends the run once it knows

    for epoch in range(num_epochs):
        seen, correct = 0, 0
        for batch in loader:
            x, y = batch[0]["data"], batch[0]["label"]
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += y.shape[0]
            correct += int((logits.argmax(1) == y).sum())
        print(f"epoch {epoch}: {seen} samples, accuracy {correct / max(seen, 1):.3f}", flush=True)


if __name__ == "__main__":
    main()
