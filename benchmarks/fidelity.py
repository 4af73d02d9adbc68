"""Fidelity: benchy's IO / SYNTHETIC / FULL against plain loops, on workloads of known rates.

    python benchmarks/fidelity.py [--reps 10]

Loader and step sleep (IO-bound, compute-bound, balanced; 0 and 2 DataLoader workers). Each
repetition times plain loops, runs benchy, and times the plain loops again; the error is
benchy's mean against the mean of the two plain figures. Coverage counts the repetitions
whose 95 % interval contains the plain figure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.utils.data import DataLoader, Dataset

from benchy import Mode
from benchy.torch import BenchmarkDataLoader

BATCH = 8
NBATCHES = 20

WORKLOADS = {  # name: (seconds to make one batch, seconds of one step)
    "io-bound": (0.008, 0.004),
    "compute-bound": (0.004, 0.008),
    "balanced": (0.006, 0.006),
}


class Sleepy(Dataset):
    """Each batch (``__getitems__``) costs ``per_batch`` seconds in whichever process makes it."""

    def __init__(self, per_batch: float) -> None:
        self.per_batch = per_batch

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)

    def __getitems__(self, indices: List[int]) -> List[torch.Tensor]:
        time.sleep(self.per_batch)
        return [torch.zeros(2) for _ in indices]


def loader_kwargs(workers: int) -> Dict[str, Any]:
    return dict(batch_size=BATCH, num_workers=workers, persistent_workers=workers > 0)


def per_batch_seconds(fetch: float, workers: int) -> float:
    """Sleep per batch inside the loader so that the loader's nominal rate is one batch per ``fetch``."""
    return fetch * max(1, workers)


def plain(fetch: float, step: float, workers: int, n: int, repeats: int = 3) -> Dict[Mode, float]:
    loader = DataLoader(Sleepy(per_batch_seconds(fetch, workers)), **loader_kwargs(workers))
    it = iter(loader)
    for _ in range(5):
        next(it)

    def rate(run: Callable[[], float]) -> float:
        return statistics.median(n * BATCH / run() for _ in range(repeats))

    def io() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            next(it)
        return time.perf_counter() - t0

    batch = next(it)

    def synthetic() -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            time.sleep(step)
        return time.perf_counter() - t0

    def full() -> float:
        next(it)  # the batch the first step trains on, fetched before the clock as in benchy
        t0 = time.perf_counter()
        for _ in range(n):
            time.sleep(step)
            next(it)
        return time.perf_counter() - t0

    del batch
    return {Mode.IO: rate(io), Mode.SYNTHETIC: rate(synthetic), Mode.FULL: rate(full)}


def benchy_run(fetch: float, step: float, workers: int, n: int, out_dir: str) -> Dict[Mode, Tuple[float, float]]:
    mode = {"nbatches": n, "ntrials": 3, "nwarmup": 1}
    cfg = {
        "global": {"exit_after_tests": False, "output_dir": out_dir, "console": "plain", "report_freq": 0},
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    loader = BenchmarkDataLoader(Sleepy(per_batch_seconds(fetch, workers)), benchy_config=cfg, **loader_kwargs(workers))
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        while not loader.benchy.done:
            for _ in loader:  # an epoch of a million batches: the schedule runs inside it
                time.sleep(step)
                if loader.benchy.done:
                    break
    out = {}
    for m in Mode:
        est = loader.benchy.results.estimate(m)
        out[m] = (est.mean, est.half_width)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--nbatches", type=int, default=NBATCHES, help="batches per trial (and per plain timing)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for name, (fetch, step) in WORKLOADS.items():
            if name not in args.workloads:
                continue
            for workers in args.workers:
                errors: Dict[Mode, List[float]] = {m: [] for m in Mode}
                covered: Dict[Mode, int] = {m: 0 for m in Mode}
                plains: Dict[Mode, List[float]] = {m: [] for m in Mode}
                for _ in range(args.reps):
                    before = plain(fetch, step, workers, args.nbatches)
                    got = benchy_run(fetch, step, workers, args.nbatches, out_dir)
                    after = plain(fetch, step, workers, args.nbatches)
                    for m in Mode:
                        ref = 0.5 * (before[m] + after[m])
                        mean, half = got[m]
                        plains[m].append(ref)
                        errors[m].append(100.0 * (mean - ref) / ref)
                        covered[m] += int(half is not None and abs(mean - ref) <= half)
                for m in Mode:
                    e = errors[m]
                    rows.append(
                        (
                            name,
                            workers,
                            m.value,
                            statistics.median(plains[m]),
                            statistics.median(e),
                            min(e),
                            max(e),
                            max(abs(x) for x in e),
                            covered[m],
                        )
                    )
                print(f"... {name}, {workers} workers done", file=sys.stderr, flush=True)
    print(
        f"benchy fidelity vs plain loops: {args.reps} repetitions each; batches of {BATCH}, trials of "
        f"{args.nbatches} batches (3 + 1 warm-up); error = benchy mean vs plain (mean of before and after)"
    )
    print(
        f"{'workload':<14} {'workers':>7} {'mode':<9} {'plain/s':>9} {'err med %':>9} {'min %':>7} {'max %':>7} "
        f"{'|max| %':>7} {'CI covers':>9}"
    )
    for name, workers, mode, ref, med, lo, hi, worst, cov in rows:
        print(f"{name:<14} {workers:>7} {mode:<9} {ref:9.1f} {med:9.2f} {lo:7.2f} {hi:7.2f} {worst:7.2f} {cov:>4}/{args.reps:<4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
