"""A real small training run on generated images, with benchy switched on by a flag.

    python examples/train_cnn.py --enable_benchy                        # data loading limits training
    python examples/train_cnn.py --enable_benchy --bottleneck compute   # compute limits training
    python examples/train_cnn.py --enable_benchy --num_workers 1        # a loader worker beside the step
    python examples/train_cnn.py --enable_benchy --benchy_config my.yaml   # your own schedule
    python examples/train_cnn.py --num_workers 8 --loader_only          # the loader alone, no step (no benchy)

Each epoch prints its samples/s, and, from its second batch on (over whole rounds of the loader's workers), its
rate between the epochs' start-ups: the figure benchy's FULL (and, with ``--loader_only``, IO) is checked against.

The bottleneck is clear by design, on a quiet machine and on a busy one alike. With
``--bottleneck data`` (the default) each sample is drawn at 4x its size and augmented there
(noise, a bright blob, colour jitter, blur passes, a resize), as a script that decodes and augments
photos does: making a sample costs several times what the step spends on it, so the model waits
for data. With ``--bottleneck compute`` the samples are drawn at their size with one blur pass:
the step costs several times the loading. The step runs on ``--threads`` (default 1) CPU threads:
on a shared machine a multi-threaded step slows far more than the loading (its threads wait for
each other), which would make the answer depend on what else the machine runs.

Without --benchy_config (or $BENCHY_CONFIG_FILE) the demo runs benchy's default schedule with trials of
at most 20 batches (below): windows short first and growing, warm-ups until the step time is steady,
trials until benchy can say which side limits training, then the extras that explain it; benchy then
ends the run (exit_after_tests).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset

import benchy

# The defaults (warm up until steady, measure until the answer is known: benchy ends the run then), with trials
# of at most 20 batches: the side trials after the verdict (the loader's stages, the what-if check) are as long.
DEMO = {mode: {"nbatches": 20} for mode in ("IO", "synthetic", "full")}

# How each sample is made: (drawn at this many times its size, blur passes there).
BOTTLENECKS = {"data": (4, 6), "compute": (1, 1)}


def box_blur(img: np.ndarray, radius: int) -> np.ndarray:
    """A box blur of ``radius`` along the last two axes (cumulative sums), the same size out."""
    k = 2 * radius + 1
    padded = np.pad(img, ((0, 0), (radius + 1, radius), (radius + 1, radius)), mode="edge")
    rows = np.cumsum(padded, axis=1)
    rows = (rows[:, k:, :] - rows[:, :-k, :]) / k
    cols = np.cumsum(rows, axis=2)
    return (cols[:, :, k:] - cols[:, :, :-k]) / k


class BlobQuadrants(Dataset):
    """Noisy images with one bright blob; the label is the blob's quadrant (4 classes).

    Each sample is drawn at ``scale`` x its size (a decoded photo), colour-jittered, blurred
    ``passes`` times and resized, in NumPy on one core: real CPU work a sample, as decoding and
    augmenting are. Sample ``i`` is the same in every epoch and process (seeded by its index).
    """

    def __init__(self, size: int = 2048, image: int = 32, seed: int = 0, scale: int = 4, passes: int = 6) -> None:
        self.size, self.image, self.seed, self.scale, self.passes = size, image, seed, scale, passes
        side = scale * image
        self.yy, self.xx = np.mgrid[0:side, 0:side].astype(np.float32)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        rng = np.random.default_rng(self.seed * 1_000_003 + index)
        label = int(rng.integers(4))
        scale, side = self.scale, self.scale * self.image
        half = side // 2
        cy = half * (label // 2) + rng.uniform(0.15, 0.85) * half
        cx = half * (label % 2) + rng.uniform(0.15, 0.85) * half
        blob = np.exp(-((self.yy - cy) ** 2 + (self.xx - cx) ** 2) / (8.0 * scale * scale))
        img = 0.5 * rng.standard_normal((3, side, side), dtype=np.float32) + 2.0 * blob
        img *= rng.uniform(0.8, 1.2, size=(3, 1, 1)).astype(np.float32)  # colour jitter
        for _ in range(self.passes):
            img = box_blur(img, max(1, scale // 2))
        img = img.reshape(3, self.image, scale, self.image, scale).mean(axis=(2, 4))  # resize
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), label


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_epochs", type=int, default=None, help="default: 10, or as many as benchy's schedule may need")
    parser.add_argument(
        "--bottleneck",
        choices=sorted(BOTTLENECKS),
        default="data",
        help="data: costly samples, the model waits for them (default); compute: cheap samples, the step is the limit",
    )
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--dataset_size", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the step (torch.set_num_threads)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--loader_only", action="store_true", help="iterate the loader alone (no step): its own rate")
    benchy.add_arguments(parser)  # --enable_benchy, --benchy_config
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    scale, passes = BOTTLENECKS[args.bottleneck]
    device = torch.device(args.device)
    model = SmallCNN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    loader = benchy.data_loader(
        args,
        BlobQuadrants(args.dataset_size, scale=scale, passes=passes),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
        pin_memory=device.type == "cuda",
        drop_last=True,
        benchy_config=args.benchy_config or os.environ.get(benchy.CONFIG_ENV_VAR) or DEMO,
    )
    num_epochs = args.num_epochs or 10
    if args.num_epochs is None and isinstance(loader, benchy.BenchmarkDataLoader):
        num_epochs = max(num_epochs, loader.benchy.epochs_needed() or 1)  # it ends the run once it knows

    for epoch in range(num_epochs):
        model.train()
        # Running sums stay on the device: no per-step host sync in the training loop.
        start, seen = time.perf_counter(), 0
        correct = torch.zeros((), device=device)
        loss_sum = torch.zeros((), device=device)
        second = last = None  # hand-out times: of the epoch's second batch, and of its last whole round
        rounds = max(1, args.num_workers)
        for k, (images, labels) in enumerate(loader):
            if k >= 1 and (k - 1) % rounds == 0:
                last = time.perf_counter()
                second = second if second is not None else last
            if args.loader_only:
                seen += labels.shape[0]
                continue
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            logits = model(images)
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            seen += labels.shape[0]
            loss_sum += loss.detach() * labels.shape[0]
            correct += (logits.argmax(1) == labels).sum()
        elapsed = time.perf_counter() - start
        steady = ""
        if second is not None and last is not None and last > second:
            batches = k - (k - 1) % rounds - 1  # the batches from the second to the last whole round's start
            steady = f" ({batches * args.batch_size / (last - second):.1f} between start-ups)"
        print(
            f"epoch {epoch}: {seen} samples, loss {float(loss_sum) / max(seen, 1):.4f}, "
            f"accuracy {float(correct) / max(seen, 1):.3f}, {seen / elapsed:.1f} samples/s{steady}",
            flush=True,
        )


if __name__ == "__main__":
    main()
