"""A user's training script, driven by flags, that the end-to-end tests run in a subprocess.

It uses benchy exactly as a user would: the drop-in loader or the generic wrapper, an
ordinary epoch loop, and ``BENCHY_CONFIG_FILE`` for the configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import shutil
import signal
import sys
import time

import torch
from torch.utils.data import Dataset

import benchy
from benchy.torch import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper


class Items(Dataset):
    """``n`` samples of a chosen structure; optional sleep per sample."""

    def __init__(self, n: int, kind: str, sample_ms: float, raise_after: int = -1) -> None:
        self.n, self.kind, self.sample_ms, self.raise_after = n, kind, sample_ms, raise_after
        self.served = 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        self.served += 1
        if self.served == self.raise_after:
            raise OSError(f"cannot read sample {i}")
        if self.sample_ms:
            time.sleep(self.sample_ms / 1000.0)
        x = torch.full((4,), float(i))
        if self.kind == "tensor":
            return x
        if self.kind == "dict":
            return {"image": x, "label": i % 3}
        if self.kind == "dictpair":  # collated to [inputs_dict, labels_dict]: one batch, not two devices
            return {"pixels": x, "mask": x > 0}, {"label": i % 3}
        return x, i % 3


@dataclasses.dataclass
class Batch:
    """A dataclass batch, as many training scripts define one."""

    ids: list
    inputs: torch.Tensor
    labels: torch.Tensor


class Holder:
    """A plain object holding tensors."""

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor) -> None:
        self.inputs, self.labels = inputs, labels


def collate_to(kind: str):
    from torch.utils.data import default_collate

    def collate(samples):
        x, y = default_collate(samples)
        if kind == "dataclass":
            return Batch(ids=list(range(len(samples))), inputs=x, labels=y)
        return Holder(x, y)

    return collate


class CyclingSizes:
    """A batch sampler whose batches have sizes 4, 8, 16, 2, 4, 8, ... (variable-size batches)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        start, k, sizes = 0, 0, (4, 8, 16, 2)
        while start < self.n:
            size = min(sizes[k % 4], self.n - start)
            yield list(range(start, start + size))
            start, k = start + size, k + 1

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Generic:
    """A re-iterable non-DataLoader loader yielding batches of the chosen structure."""

    def __init__(self, n: int, batch_size: int, kind: str, fetch_ms: float) -> None:
        self.n, self.batch_size, self.kind, self.fetch_ms = n, batch_size, kind, fetch_ms

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for start in range(0, self.n, self.batch_size):
            if self.fetch_ms:
                time.sleep(self.fetch_ms / 1000.0)
            b = min(self.batch_size, self.n - start)
            x = torch.zeros(b, 4)
            if self.kind == "tensor":
                yield x
            elif self.kind == "dict":
                yield {"image": x, "label": torch.zeros(b)}
            elif self.kind == "dali":
                yield [{"data": x, "label": torch.zeros(b)}]
            elif self.kind == "opaque":  # nothing countable: benchy falls back to batch_size
                yield Holder(b"x" * b, None)
            else:
                yield x, torch.zeros(b)


def fail_from(first: int, worker_id: int) -> None:
    if worker_id >= first:
        raise OSError(f"worker {worker_id} cannot open its shard")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["dataloader", "generic", "plain"], default="dataloader")
    p.add_argument(
        "--kind", choices=["tuple", "tensor", "dict", "dali", "dictpair", "dataclass", "object", "opaque"], default="tuple"
    )
    p.add_argument("--variable", action="store_true", help="batches of sizes 4, 8, 16, 2, ...")
    p.add_argument(
        "--loop",
        choices=["for", "steps", "prefetch"],
        default="for",
        help="for: for batch in loader; steps: it = iter(loader); for _ in range(len(loader)): next(it); "
        "prefetch: a CUDA-prefetcher-style wrapper (timm's PrefetchLoader) that fetches one batch ahead",
    )
    p.add_argument("--peek_at", default=None, help="EPOCH:STEP (or -1:STEP) at which the loop peeks next(iter(loader))")
    p.add_argument(
        "--peek_before",
        type=int,
        default=None,
        help="epoch (or -1: every epoch) before which the script peeks len(next(iter(loader))[0])",
    )
    p.add_argument("--discard_iter_at", type=int, default=None, help="epoch before which iter(loader) is discarded")
    p.add_argument("--val_loader", action="store_true", help="a second BenchmarkDataLoader, iterated after each epoch")
    p.add_argument("--samples", type=int, default=64)
    p.add_argument("--batch_size", type=int, default=4)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--persistent", action="store_true")
    p.add_argument("--drop_last", action="store_true")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--step_ms", type=float, default=0.0)
    p.add_argument(
        "--warm_factor",
        type=float,
        default=0.0,
        help="a step time that decays: step_ms * (1 + warm_factor * exp(-k / warm_tau)) at step k",
    )
    p.add_argument("--warm_tau", type=float, default=1.0)
    p.add_argument("--fetch_ms", type=float, default=0.0)
    p.add_argument("--raise_at", default=None, help="EPOCH:STEP at which the step raises")
    p.add_argument("--break_at", default=None, help="EPOCH:STEP at which the loop breaks")
    p.add_argument("--loader_raise_after", type=int, default=-1, help="the dataset raises on its Nth sample")
    p.add_argument("--forbid_cuda", action="store_true", help="fail if benchy makes any CUDA runtime call")
    p.add_argument("--spoil_output_dir_at", default=None, help="EPOCH:DIR: replace DIR by a file before that epoch")
    p.add_argument("--chdir", default=None, help="change to this directory once the loader exists (Hydra's job.chdir)")
    p.add_argument("--own_sigterm", action="store_true", help="install a SIGTERM handler that exits with status 42")
    p.add_argument(
        "--print_children",
        action="store_true",
        help="print the process's child processes and the loader's num_workers at each step 0",
    )
    p.add_argument(
        "--fail_worker_from",
        type=int,
        default=None,
        help="worker_init_fn raises in workers with this id or higher (a setting that cannot run)",
    )
    benchy.add_arguments(p)
    args = p.parse_args()

    if args.own_sigterm:  # before the loader exists, as a launcher or the script's own set-up would

        def on_term(signum, frame):
            print("USER::sigterm handler", flush=True)
            sys.exit(42)

        signal.signal(signal.SIGTERM, on_term)

    if args.forbid_cuda:

        def forbidden(*a, **k):
            raise AssertionError("benchy made a CUDA runtime call")

        torch.cuda.cudart = forbidden
        torch.cuda.synchronize = forbidden

    if args.loader == "dataloader":
        kind = "tuple" if args.kind in ("dataclass", "object") else args.kind
        extra = {"collate_fn": collate_to(args.kind)} if args.kind in ("dataclass", "object") else {}
        if args.fail_worker_from is not None:
            extra["worker_init_fn"] = functools.partial(fail_from, args.fail_worker_from)
        if args.variable:
            extra["batch_sampler"] = CyclingSizes(args.samples)
        else:
            extra.update(batch_size=args.batch_size, drop_last=args.drop_last)
        loader = BenchmarkDataLoader(
            Items(args.samples, kind, args.fetch_ms, args.loader_raise_after),
            num_workers=args.workers,
            persistent_workers=args.persistent,
            **extra,
        )
    elif args.loader == "generic":
        loader = BenchmarkGenericIteratorWrapper(
            Generic(args.samples, args.batch_size, args.kind, args.fetch_ms), args.batch_size
        )
    else:
        loader = benchy.data_loader(
            args, Items(args.samples, args.kind, args.fetch_ms), batch_size=args.batch_size, num_workers=args.workers
        )
    if args.chdir:
        import os

        os.chdir(args.chdir)
    raise_at = tuple(int(v) for v in args.raise_at.split(":")) if args.raise_at else None
    break_at = tuple(int(v) for v in args.break_at.split(":")) if args.break_at else None

    peek_at = tuple(int(v) for v in args.peek_at.split(":")) if args.peek_at else None
    val = BenchmarkDataLoader(Items(12, "tuple", 0.0), batch_size=4) if args.val_loader else None

    def batches(epoch: int):
        if args.loop == "for":
            yield from loader
            return
        if args.loop == "prefetch":  # fetch batch k + 1 (and start its copy) before handing out batch k
            first, current = True, None
            for following in loader:
                following = [t.clone() if isinstance(t, torch.Tensor) else t for t in following]
                if not first:
                    yield current
                first, current = False, following
            if not first:
                yield current
            return
        it = iter(loader)
        for _ in range(len(loader)):  # a steps-per-epoch loop: never asks for one batch more
            yield next(it)

    total_steps = 0
    for epoch in range(args.epochs):
        if args.spoil_output_dir_at and int(args.spoil_output_dir_at.split(":", 1)[0]) == epoch:
            spoiled = args.spoil_output_dir_at.split(":", 1)[1]
            shutil.rmtree(spoiled)
            with open(spoiled, "w") as handle:
                handle.write("not a directory any more")
        if args.peek_before in (-1, epoch):  # e.g. the batch size for a log line (PyTorch's DDP tutorial)
            print(f"USER::peeked {len(next(iter(loader))[0])}", flush=True)
        if args.discard_iter_at == epoch:
            iter(loader)  # e.g. a helper that builds an iterator and never uses it
        steps = 0
        length = len(loader)
        for step, batch in enumerate(batches(epoch)):
            if raise_at == (epoch, step):
                raise RuntimeError(f"boom in the training step at epoch {epoch} step {step}")
            if break_at is not None and break_at[1] == step and break_at[0] in (-1, epoch):
                break
            if peek_at is not None and peek_at[1] == step and peek_at[0] in (-1, epoch):
                next(iter(loader))  # e.g. logging one sample batch inside the loop
            if args.print_children and step == 0:
                import psutil

                kids = len(psutil.Process().children(recursive=True))
                print(f"USER::children {kids} num_workers {loader.num_workers}", flush=True)
            if args.step_ms:
                time.sleep(args.step_ms / 1000.0 * (1.0 + args.warm_factor * math.exp(-total_steps / args.warm_tau)))
            steps += 1
            total_steps += 1
        if val is not None:
            print(f"USER::val batches {sum(1 for _ in val)}", flush=True)
        print(f"USER::epoch {epoch} steps {steps} len {length}", flush=True)
    print("USER::done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
