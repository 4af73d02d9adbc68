"""A real small training run on generated images, with benchy switched on by a flag.

    python examples/train_cnn.py --enable_benchy              # CPU by default, CUDA if present
    python examples/train_cnn.py --enable_benchy --num_workers 2
    python examples/train_cnn.py --enable_benchy --benchy_config my.yaml   # your own schedule

Without --benchy_config (or $BENCHY_CONFIG_FILE) the demo runs the adaptive schedule below: warm-ups until the step time
is steady, trials until benchy can say which side limits training.

The task is learnable (which quadrant holds the bright blob?), and each sample costs real
work to make (noise, a blob, a random flip and blur), so data loading is a visible part of
the step, as in a script that decodes and augments images.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset

import benchy

# Warm up until steady, measure until the answer is known (benchy ends the run then).
ADAPTIVE = {
    "IO": {"ntrials": "auto"},
    "synthetic": {"ntrials": "auto", "nwarmup": "auto"},
    "full": {"ntrials": "auto", "nwarmup": "auto"},
}


class BlobQuadrants(Dataset):
    """Noisy images with one bright blob; the label is the blob's quadrant (4 classes).

    Each sample is drawn at 2x resolution, rotated by a random small angle, blurred and
    resized, so that making it costs real CPU time, like decoding and augmenting a photo.
    """

    def __init__(self, size: int = 4096, image: int = 32, seed: int = 0) -> None:
        self.size, self.image, self.seed = size, image, seed
        side = 2 * image
        coords = torch.arange(side, dtype=torch.float32)
        self.yy, self.xx = torch.meshgrid(coords, coords, indexing="ij")
        self.blur = torch.full((3, 1, 5, 5), 1.0 / 25.0)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = int(torch.randint(0, 4, (1,), generator=g))
        half = self.image  # quadrant size at 2x resolution
        cy = half * (label // 2) + 4 + torch.rand(1, generator=g).item() * (half - 8)
        cx = half * (label % 2) + 4 + torch.rand(1, generator=g).item() * (half - 8)
        blob = torch.exp(-((self.yy - cy) ** 2 + (self.xx - cx) ** 2) / 32.0)
        img = (0.5 * torch.randn(3, 2 * self.image, 2 * self.image, generator=g) + 2.0 * blob).unsqueeze(0)
        angle = (torch.rand(1, generator=g).item() - 0.5) * 0.3  # radians; keeps the quadrant
        cos, sin = torch.cos(torch.tensor(angle)), torch.sin(torch.tensor(angle))
        theta = torch.tensor([[[cos, -sin, 0.0], [sin, cos, 0.0]]])
        grid = F.affine_grid(theta, list(img.shape), align_corners=False)
        img = F.grid_sample(img, grid, align_corners=False)
        img = F.conv2d(img, self.blur, padding=2, groups=3)
        img = F.interpolate(img, size=(self.image, self.image), mode="bilinear", antialias=True, align_corners=False)
        return img.squeeze(0), label


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
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--dataset_size", type=int, default=4096)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    benchy.add_arguments(parser)  # --enable_benchy, --benchy_config
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    model = SmallCNN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    loader = benchy.data_loader(
        args,
        BlobQuadrants(args.dataset_size),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
        pin_memory=device.type == "cuda",
        drop_last=True,
        benchy_config=args.benchy_config or os.environ.get(benchy.CONFIG_ENV_VAR) or ADAPTIVE,
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
        for images, labels in loader:
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
        print(
            f"epoch {epoch}: {seen} samples, loss {float(loss_sum) / max(seen, 1):.4f}, "
            f"accuracy {float(correct) / max(seen, 1):.3f}, {seen / elapsed:.1f} samples/s",
            flush=True,
        )


if __name__ == "__main__":
    main()
