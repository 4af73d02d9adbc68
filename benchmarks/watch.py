"""The watch's cost a batch and its memory, against the loops it is measured by.

    python benchmarks/watch.py [--nbatches 1000000] [--reps 5]

Per batch, over a list iterator of one tensor (the cheapest loader there is, so the loop's own cost shows):

* ``plain``: ``for batch in it: pass``, the loop without benchy (after the schedule without the watch);
* ``floor``: the ideal hand-written loop that takes what the watch takes: a timestamp before and after each
  ``next()``, the wait and the steps summed (``benchmarks/floor.py``'s FULL, without storing anything);
* ``watch``: benchy's watched pass (``benchy.measure.trial.watched_pass``), as the loop gets it.

The fastest of ``--reps`` runs of each, alternating, and ``watch / floor``. Then the memory: the Python heap
(tracemalloc) after a watched pass of ``--nbatches`` steps and after a watch of 1 000 epochs of 1 000 steps
(``core.watch.Watch``: the first 1 000 epochs are kept, then only counted).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Any, Callable, List

import torch

from benchy.core.watch import Baseline, Watch, watched
from benchy.measure.trial import watched_pass


def plain(batches: List[Any]) -> float:
    start = time.perf_counter()
    for _ in iter(batches):
        pass
    return time.perf_counter() - start


def floor(batches: List[Any]) -> float:
    clock = time.perf_counter
    start = clock()
    inner_next = iter(batches).__next__
    steps, wait = 0, 0.0
    t0 = clock()
    while True:
        try:
            inner_next()
        except StopIteration:
            break
        t1 = clock()
        wait += t1 - t0
        steps += 1
        t0 = clock()
    return clock() - start


def watch(batches: List[Any]) -> float:
    start = time.perf_counter()
    for _ in watched_pass(iter(batches), time.perf_counter, lambda steps, seconds, wait: None):
        pass
    return time.perf_counter() - start


def best(run: Callable[[List[Any]], float], batches: List[Any]) -> float:
    return 1e9 * run(batches) / len(batches)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nbatches", type=int, default=1_000_000)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    batches = [torch.zeros(4)] * args.nbatches
    times = {"plain": [], "floor": [], "watch": []}  # type: dict[str, list[float]]
    runs = {"plain": plain, "floor": floor, "watch": watch}
    for _ in range(args.reps):
        for name, run in runs.items():
            times[name].append(best(run, batches))
    for name in runs:
        print(f"{name:6s} {min(times[name]):7.1f} ns a batch (fastest of {args.reps})")
    fastest = {name: min(t) for name, t in times.items()}
    print(f"watch / floor {fastest['watch'] / fastest['floor']:.2f}x; watch - plain {fastest['watch'] - fastest['plain']:.1f} ns")

    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in watched_pass(iter(batches), time.perf_counter, lambda steps, seconds, wait: None):
        pass
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    print(f"a watched pass of {args.nbatches} steps: {grown / 1e3:.1f} kB held after it")
    base = Baseline(data_wait=0.3, interval=0.02)
    w = Watch(baseline=base)
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    for epoch in range(1, 2001):
        w = w.add(watched(epoch, 1000, 10.0, 3.0 if epoch % 2 else 4.0, 32000, base))
    now = tracemalloc.get_traced_memory()[0]
    kept = f"{len(w.epochs)} epochs kept, {w.watched} counted"
    print(f"a watch of 2 000 epochs (half of them rises, 1 000 steps each): {(now - start) / 1e3:.1f} kB, {kept}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
