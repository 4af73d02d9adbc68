"""Growth: benchy's cost per batch must not grow with nbatches, ntrials or epochs.

    python benchmarks/growth.py

In-memory batches and an empty loop body. Prints the FULL trial's per-batch overhead (wall,
first to last batch, against the same loop over the plain list) for several ``nbatches``; the
per-batch time of each trial of a many-trial run; and, after the schedule, the per-batch time
of pass-through epochs against the plain list.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

import torch

from benchy import Mode
from benchy.torch import BenchmarkGenericIteratorWrapper


def loop_per_batch(iterable: Any) -> float:
    """First-to-last batch time per batch, as the training loop sees it."""
    clock = time.perf_counter
    first = last = 0.0
    k = -1
    for k, _ in enumerate(iterable):
        if k == 0:
            first = clock()
        last = clock()
    return (last - first) / max(k, 1)


def wrapper(batches: List[torch.Tensor], out_dir: str, nbatches: int, ntrials: int, **global_: Any) -> Any:
    mode = {"nbatches": nbatches, "ntrials": ntrials, "nwarmup": 0}
    g = {"report_freq": 1000, "exit_after_tests": False, "output_dir": out_dir, "console": "plain"}
    g.update(global_)
    cfg = {"global": g, "IO": {"run_benchmark": False}, "synthetic": {"run_benchmark": False}, "full": mode}
    return BenchmarkGenericIteratorWrapper(batches, 2, benchy_config=cfg)


def quiet() -> Any:
    return contextlib.redirect_stdout(open(os.devnull, "w"))


def main() -> int:
    batches = [torch.zeros(2, 2) for _ in range(100_001)]
    plain = statistics.median(loop_per_batch(batches) for _ in range(5))
    print(f"plain loop over the list: {plain * 1e9:.1f} ns per batch")
    with tempfile.TemporaryDirectory() as out_dir:
        print("\nFULL overhead per batch vs nbatches (one trial, its own time against the bare loop's; median of 5 runs)")
        print(f"{'nbatches':>9} {'ns':>8}")
        bare = statistics.median(_bare(batches) for _ in range(5))
        for n in (1_000, 10_000, 99_000):
            values = []
            for _ in range(5):
                w = wrapper(batches, out_dir, n, 1)
                with quiet():
                    loop_per_batch(w)  # one epoch of 100 001 batches holds the window
                values.append(w.benchy.results.measured(Mode.FULL)[0].seconds / n - bare)
            print(f"{n:>9} {statistics.median(values) * 1e9:8.1f}")

        print("\nper-trial overhead per batch over a 20-trial run (10000 batches each), in-trial time")
        w = wrapper(batches, out_dir, 10_000, 20)
        with quiet():
            while not w.benchy.done:
                loop_per_batch(w)  # the same loop body as _bare's; the windows span the epochs
        bare = statistics.median(_bare(batches) for _ in range(5))
        per_trial = [(t.seconds / 10_000 - bare) * 1e9 for t in w.benchy.results.measured(Mode.FULL)]
        print("trial  " + " ".join(f"{k + 1:>5}" for k in range(20)))
        print("ns     " + " ".join(f"{x:5.0f}" for x in per_trial))
        print(
            f"first 5 median {statistics.median(per_trial[:5]):.1f} ns, last 5 median {statistics.median(per_trial[-5:]):.1f} ns"
        )

        print("\npass-through epochs after the schedule (full passes of 100001 batches), ns per batch")
        w = wrapper(batches, out_dir, 100, 1)
        with quiet():
            for _ in w:
                pass
        assert w.benchy.done  # the next epochs are the plain list's own iterator
        rows: Dict[str, List[float]] = {"plain list": [], "wrapper, pass-through": []}
        for _ in range(5):
            rows["plain list"].append(loop_per_batch(batches))
            rows["wrapper, pass-through"].append(loop_per_batch(w))
        for name, values in rows.items():
            print(f"{name:<24} {statistics.median(values) * 1e9:8.1f} (min {min(values) * 1e9:.1f}, max {max(values) * 1e9:.1f})")
    return 0


def _bare(batches: List[torch.Tensor]) -> float:
    """The same loop body as loop_per_batch, timed from outside (what a trial's window holds)."""
    clock = time.perf_counter
    k = 0
    t0 = clock()
    for k, _ in enumerate(batches[:10_000]):
        if k == 0:
            pass
        clock()
    return (clock() - t0) / 10_000


if __name__ == "__main__":
    sys.exit(main())
