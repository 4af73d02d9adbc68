"""A torchvision-style image-folder training: JPEG files decoded with PIL, a Compose of transforms.

    python examples/image_folder.py --enable_benchy [--root DIR] [--num_workers 2]

It writes 600 JPEGs (two classes) under ``--root`` the first time, then trains a small CNN on
them. torchvision is not needed (its ``ImageFolder``, ``Compose`` and transforms are mirrored
here with the same attributes), so benchy's stage trials split the time the same way: the
dataset's own reading and decoding, each transform by name, collate, receiving from the workers.
Needs Pillow (``pip install pillow``; the ``test`` and ``plot`` extras bring it with matplotlib).
"""

import argparse
import os
import random

import numpy as np
import torch
from PIL import Image


def make_folder(root: str, n: int = 600, size: int = 320) -> None:
    """``n`` JPEGs of ``size`` x ``size`` in two class folders (once: kept for later runs)."""
    if os.path.isdir(root):
        return
    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        os.makedirs(os.path.join(root, c))
        for i in range(n // 2):
            base = np.linspace(0, 255, size, dtype=np.float32)
            img = (base[None, :, None] * rng.uniform(0.3, 1, 3) + rng.normal(0, 20, (size, size, 3))).clip(0, 255)
            Image.fromarray(img.astype(np.uint8)).save(os.path.join(root, c, f"{i}.jpg"), quality=90)


def pil_loader(path: str) -> Image.Image:
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


class ImageFolder:
    """torchvision's ImageFolder in short: (path, class) samples, ``transform`` and ``target_transform``."""

    def __init__(self, root, transform=None, target_transform=None, loader=pil_loader):
        self.classes = sorted(os.listdir(root))
        self.samples = [
            (os.path.join(root, c, f), k) for k, c in enumerate(self.classes) for f in sorted(os.listdir(os.path.join(root, c)))
        ]
        self.transform, self.target_transform, self.loader = transform, target_transform, loader

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, target = self.samples[i]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class RandomResizedCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, img):
        w, h = img.size
        s = random.uniform(0.5, 1.0)
        cw, ch = int(w * s), int(h * s)
        x, y = random.randint(0, w - cw), random.randint(0, h - ch)
        return img.crop((x, y, x + cw, y + ch)).resize((self.size, self.size), Image.BILINEAR)


class RandomHorizontalFlip:
    def __call__(self, img):
        return img.transpose(Image.FLIP_LEFT_RIGHT) if random.random() < 0.5 else img


class ToTensor:
    def __call__(self, img):
        return torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1).contiguous()


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

    def __call__(self, t):
        return (t - self.mean) / self.std


def main() -> None:
    import benchy

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=os.path.join(os.path.expanduser("~"), ".cache", "benchy-image-folder"))
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=30)
    benchy.add_arguments(parser)  # --enable_benchy, --benchy_config
    args = parser.parse_args()
    make_folder(args.root)
    tf = Compose([RandomResizedCrop(128), RandomHorizontalFlip(), ToTensor(), Normalize([0.5] * 3, [0.25] * 3)])
    loader = benchy.data_loader(
        args,
        ImageFolder(args.root, transform=tf),
        batch_size=32,
        shuffle=True,
        num_workers=args.num_workers,
        benchy_config=args.benchy_config,
    )
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 2),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        print("epoch", epoch, "done")


if __name__ == "__main__":
    main()
