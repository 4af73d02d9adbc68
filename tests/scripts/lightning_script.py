"""A PyTorch Lightning training script using benchy the documented way (docs/guide/frameworks.md).

``train_dataloader()`` returns a ``BenchmarkDataLoader``; the Trainer runs at least the
schedule's epochs; benchy ends the process after the last trial (``exit_after_tests``).
``--devices 2`` runs DDP on the CPU (gloo), where Lightning re-creates the loader with a
``DistributedSampler``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import torch
from torch.utils.data import Dataset

import benchy

warnings.filterwarnings("ignore")
import pytorch_lightning as pl  # noqa: E402


class Shapes(Dataset):
    """Samples with a known CPU cost: ``sample_ms`` of sleep each."""

    def __init__(self, n: int, sample_ms: float) -> None:
        self.n, self.sample_ms = n, sample_ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        return torch.full((8,), float(i % 7)), i % 2


class Model(pl.LightningModule):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.lin = torch.nn.Linear(8, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.args.step_ms:
            time.sleep(self.args.step_ms / 1000.0)
        return torch.nn.functional.cross_entropy(self.lin(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return benchy.data_loader(
            self.args,
            Shapes(self.args.samples, self.args.fetch_ms),
            batch_size=self.args.batch_size,
            num_workers=self.args.workers,
        )

    def on_train_epoch_end(self) -> None:
        loader = self.trainer.train_dataloader
        print(
            f"USER::rank {self.global_rank} epoch {self.current_epoch} batches "
            f"{self.trainer.fit_loop.epoch_loop.batch_progress.current.completed} "
            f"type {type(loader).__name__}",
            flush=True,
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=80)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--step_ms", type=float, default=0.0)
    p.add_argument("--fetch_ms", type=float, default=0.0)
    benchy.add_arguments(p)
    args = p.parse_args()
    trainer = pl.Trainer(
        max_epochs=args.epochs,
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp" if args.devices > 1 else "auto",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(Model(args))
    print(f"USER::rank {os.environ.get('RANK', '0')} done", flush=True)


if __name__ == "__main__":
    main()
