"""Data-parallel training (DDP) with benchy, under torchrun or Slurm.

    torchrun --nproc_per_node 2 examples/ddp_train.py --enable_benchy              # gloo on CPU
    torchrun --nproc_per_node 8 examples/ddp_train.py --enable_benchy --num_workers 4   # NCCL on GPUs

Each rank loads its shard (DistributedSampler) and trains the demo's CNN; benchy measures
every rank's trials and rank 0 prints one summary for the whole job (samples of all ranks over
the slowest rank's time), with per-rank figures in the JSON.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data.distributed import DistributedSampler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cnn import BlobQuadrants, SmallCNN

import benchy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_epochs", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=32, help="per rank")
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--dataset_size", type=int, default=4096)
    benchy.add_arguments(parser)
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available()
    if use_cuda:  # one GPU per rank
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo")  # env:// from torchrun or the Slurm script
    rank = dist.get_rank()

    torch.manual_seed(0)
    model = DistributedDataParallel(SmallCNN().to(device), device_ids=[device.index] if use_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    dataset = BlobQuadrants(args.dataset_size)
    sampler = DistributedSampler(dataset, shuffle=True, drop_last=True)
    loader = benchy.data_loader(
        args,
        dataset,
        batch_size=args.batch_size,
        sampler=sampler,
        num_workers=args.num_workers,
        persistent_workers=args.num_workers > 0,
        pin_memory=use_cuda,
        drop_last=True,
    )

    for epoch in range(args.num_epochs):
        sampler.set_epoch(epoch)
        loss_sum = torch.zeros((), device=device)
        steps = 0
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces the gradients here
            optimizer.step()
            loss_sum += loss.detach()
            steps += 1
        if rank == 0:
            print(f"epoch {epoch}: {steps} steps per rank, loss {float(loss_sum) / max(steps, 1):.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
