"""The system-metrics sampler's cost: benchy's throughputs with the sampler on against off.

    python benchmarks/sampler.py [--reps 3] [--nbatches 20]

On the fidelity workloads (sleep-based loader and step, 0 and 2 DataLoader workers) plus a
CPU step (a small matrix multiply loop holding the GIL, where a sampler thread could take
time from the step), each repetition runs benchy with ``system_metrics: true`` and with
``false`` one after the other (the order alternates between repetitions). Printed: per
mode, the median over repetitions of (on / off - 1) in %, with min and max.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity import WORKLOADS, Sleepy, loader_kwargs, per_batch_seconds

from benchy import Mode
from benchy.torch import BenchmarkDataLoader


def cpu_step(seconds: float) -> Callable[[], None]:
    """A step that computes on the CPU for about ``seconds`` (calibrated once)."""
    a = torch.randn(96, 96)
    t0 = time.perf_counter()
    for _ in range(50):
        a @ a
    per = (time.perf_counter() - t0) / 50
    reps = max(1, round(seconds / per))

    def step() -> None:
        for _ in range(reps):
            a @ a

    return step


def run(fetch: float, step: Callable[[], None], workers: int, n: int, sampler: bool, out_dir: str) -> Dict[Mode, float]:
    mode = {"nbatches": n, "ntrials": 3, "nwarmup": 1}
    cfg = {
        "global": {
            "exit_after_tests": False,
            "output_dir": out_dir,
            "console": "plain",
            "report_freq": 0,
            "system_metrics": sampler,
            "save_steps": False,
        },
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    loader = BenchmarkDataLoader(Sleepy(per_batch_seconds(fetch, workers)), benchy_config=cfg, **loader_kwargs(workers))
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        while not loader.benchy.done:
            for _ in loader:
                step()
    return {m: float(loader.benchy.results.estimate(m).mean or 0.0) for m in Mode}


def tick_cost(children: int, ticks: int = 200) -> float:
    """Seconds one reading takes, with ``children`` worker processes alive (the GIL is held for it)."""
    import multiprocessing

    from benchy.measure.system import SystemSampler

    procs = [multiprocessing.Process(target=time.sleep, args=(30,), daemon=True) for _ in range(children)]
    for p in procs:
        p.start()
    try:
        sampler = SystemSampler(hz=10)
        sampler._tick(baseline=True)  # the tree once
        t0 = time.thread_time()
        for _ in range(ticks):
            sampler._tick()
        return (time.thread_time() - t0) / ticks
    finally:
        for p in procs:
            p.terminate()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--nbatches", type=int, default=20)
    args = parser.parse_args()
    cases = [
        (name, fetch, (lambda s=step: time.sleep(s)), workers) for name, (fetch, step) in WORKLOADS.items() for workers in (0, 2)
    ]
    cases.append(("cpu step (6 ms matmul)", 0.006, cpu_step(0.006), 0))
    for children in (0, 2, 8):
        cost = tick_cost(children)
        print(
            f"one reading with {children} worker process(es): {cost * 1e6:.0f} us of CPU; at 10 Hz "
            f"{cost * 10 * 100:.2f} % of one core (the GIL held for as long)"
        )
    print(
        f"sampler on vs off: (on / off - 1) in %, median (min..max) of {args.reps} repetitions, "
        f"{args.nbatches}-batch trials, 3 trials + 1 warm-up per mode"
    )
    print(f"{'workload':<24} {'workers':>7}  " + "  ".join(f"{m.value:>22}" for m in Mode))
    with tempfile.TemporaryDirectory() as out_dir:
        for name, fetch, step, workers in cases:
            changes: Dict[Mode, List[float]] = {m: [] for m in Mode}
            for rep in range(args.reps):
                order = [True, False] if rep % 2 == 0 else [False, True]
                got = {on: run(fetch, step, workers, args.nbatches, on, out_dir) for on in order}
                for m in Mode:
                    changes[m].append(100.0 * (got[True][m] / got[False][m] - 1.0))
            cells = [f"{statistics.median(v):+6.2f} ({min(v):+.2f}..{max(v):+.2f})" for v in changes.values()]
            print(f"{name:<24} {workers:>7}  " + "  ".join(f"{c:>22}" for c in cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
