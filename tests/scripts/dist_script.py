"""A data-parallel training script for the distributed tests (gloo, CPU), run under a launcher.

The wrapper is built before ``init_process_group`` on purpose: ranks must be read when the
trials start, not at construction. Loader and step sleep, so rates are known.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

from benchy.torch import BenchmarkGenericIteratorWrapper


def say(text: str) -> None:
    """A USER:: line in one write: ranks share the pipe, and print() writes the text and newline apart."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Sleepy:
    def __init__(self, nbatches: int, batch: int, fetch_s: float) -> None:
        self.nbatches, self.batch, self.fetch_s = nbatches, batch, fetch_s

    def __len__(self) -> int:
        return self.nbatches

    def __iter__(self):
        for _ in range(self.nbatches):
            time.sleep(self.fetch_s)
            yield torch.zeros(self.batch, 2)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--fetch_ms", type=float, default=2.0)
    p.add_argument("--step_ms", type=float, default=3.0)
    p.add_argument("--slow_rank", type=int, default=-1)
    p.add_argument("--slow_factor", type=float, default=1.0)
    p.add_argument("--batches", type=int, default=100, help="batches an epoch")
    p.add_argument("--die_rank", type=int, default=-1, help="this rank SIGKILLs itself at --die_at")
    p.add_argument("--die_at", default="0:22", help="EPOCH:STEP (0:22: FULL_1's second step, with the tests' config)")
    p.add_argument("--raise_rank", type=int, default=-1, help="this rank's step raises at --die_at")
    p.add_argument("--leave_rank", type=int, default=-1, help="this rank stops after --leave_after epochs")
    p.add_argument("--leave_after", type=int, default=2)
    p.add_argument("--no_allreduce", action="store_true", help="ranks do not talk inside the step")
    p.add_argument(
        "--decay_rank",
        type=int,
        default=-1,
        help="this rank's step starts 10x slower and settles over ~60 steps (the others are steady)",
    )
    args = p.parse_args()

    loader = BenchmarkGenericIteratorWrapper(Sleepy(args.batches, args.batch, args.fetch_ms / 1000.0), args.batch)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    slow = args.slow_factor if rank == args.slow_rank else 1.0
    loader._iterable.fetch_s *= slow  # the slow rank loads and computes slower
    die_epoch, die_step = (int(v) for v in args.die_at.split(":"))
    epochs = args.leave_after if rank == args.leave_rank else args.epochs

    total_steps = 0
    for epoch in range(epochs):
        for step, batch in enumerate(loader):
            if rank == args.die_rank and (epoch, step) == (die_epoch, die_step):
                say(f"USER::rank {rank} killing itself")
                os.kill(os.getpid(), signal.SIGKILL)
            if rank == args.raise_rank and (epoch, step) == (die_epoch, die_step):
                raise RuntimeError(f"rank {rank}'s step failed at epoch {epoch} step {step}")
            decay = 1.0 + 9.0 * math.exp(-total_steps / 12.0) if rank == args.decay_rank else 1.0
            time.sleep(args.step_ms / 1000.0 * slow * decay)
            total_steps += 1
            if not args.no_allreduce:
                dist.all_reduce(torch.ones(1))  # the gradient all-reduce of data-parallel training
        say(f"USER::rank {rank} epoch {epoch}")
    say(f"USER::rank {rank} done")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
