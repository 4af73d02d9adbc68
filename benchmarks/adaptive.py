"""Time to an answer: the fixed default schedule against ``ntrials: auto`` / ``nwarmup: auto``.

    python benchmarks/adaptive.py [--reps 3] [--workers 0 2]

On the fidelity workloads (loader and step sleep for known times; IO-bound, compute-bound,
balanced, and a close 1.15x gap) each repetition runs benchy's schedule with the fixed
defaults (1 warm-up + 3 trials of 50 batches per mode) and with the adaptive one (same
``nbatches``), and records the wall time from the first ``iter()`` to the end of the schedule,
the epochs it took, the verdict's outcome and each mode's relative half-width. The answer is
the verdict; a fixed schedule that ends "undecided" has none.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fidelity import WORKLOADS, Sleepy, loader_kwargs, per_batch_seconds

from benchy import Mode
from benchy.core.verdict import verdict
from benchy.torch import BenchmarkDataLoader

CASES = dict(WORKLOADS, **{"close (1.15x)": (0.0069, 0.006)})
FIXED = {"nbatches": 50, "ntrials": 3, "nwarmup": 1}
AUTO = {"nbatches": 50, "ntrials": "auto", "nwarmup": "auto"}
SHORT = dict(AUTO, nbatches=25)
SCHEDULES = {
    "fixed default": (FIXED, FIXED, FIXED),
    "auto": (dict(AUTO, nwarmup=1), AUTO, AUTO),
    "auto, 25 batches": (dict(SHORT, nwarmup=1), SHORT, SHORT),
}


def run(fetch: float, step: float, workers: int, modes: Any, out_dir: str) -> Dict[str, Any]:
    io, syn, full = modes
    cfg = {
        "global": {"exit_after_tests": False, "output_dir": out_dir, "console": "plain", "report_freq": 0},
        "IO": io,
        "synthetic": syn,
        "full": full,
    }
    loader = BenchmarkDataLoader(Sleepy(per_batch_seconds(fetch, workers)), benchy_config=cfg, **loader_kwargs(workers))
    t0 = time.perf_counter()
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        while not loader.benchy.done:
            for _ in loader:
                if loader.benchy.done:  # the schedule ended at this iter() (its last trials were IO): plain now
                    break
                time.sleep(step)
    wall = time.perf_counter() - t0
    session = loader.benchy
    found = verdict(session.results, session.schedule.modes, session.schedule.decision_confidence)
    widths = {}
    for m in Mode:
        est = session.results.estimate(m)
        widths[m.value] = (100.0 * est.half_width / est.mean) if est.half_width is not None and est.mean else None
    counts = {m.value: len(session.results.measured(m)) for m in Mode}
    return {
        "wall": wall,
        "epochs": session.epochs_started,
        "outcome": found.outcome if found else "n/a",
        "widths": widths,
        "counts": counts,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args()
    print(
        f"{'workload':<16} {'workers':>7} {'schedule':<14} {'wall s (median)':>15} {'epochs':>7} "
        f"{'trials IO/SYN/FULL':>18} {'answers':>8}  outcomes; max half-width %"
    )
    with tempfile.TemporaryDirectory() as out_dir:
        for name, (fetch, step) in CASES.items():
            for workers in args.workers:
                walls: Dict[str, List[float]] = {}
                for sched, modes in SCHEDULES.items():
                    results = [run(fetch, step, workers, modes, out_dir) for _ in range(args.reps)]
                    walls[sched] = [r["wall"] for r in results]
                    answered = sum(r["outcome"] in ("data-loading", "compute", "balanced") for r in results)
                    outcomes = ",".join(sorted({r["outcome"] for r in results}))
                    width = max((w for r in results for w in r["widths"].values() if w is not None), default=0.0)
                    trials = "/".join(
                        str(round(statistics.median(r["counts"][m] for r in results))) for m in ("IO", "SYNTHETIC", "FULL")
                    )
                    print(
                        f"{name:<16} {workers:>7} {sched:<14} {statistics.median(walls[sched]):>15.2f} "
                        f"{statistics.median(r['epochs'] for r in results):>7} {trials:>18} "
                        f"{answered:>4}/{len(results):<3}  {outcomes}; {width:.1f}",
                        flush=True,
                    )
                fixed = statistics.median(walls["fixed default"])
                ratios = ", ".join(f"{k} {statistics.median(v) / fixed:.2f}" for k, v in walls.items() if k != "fixed default")
                print(f"{'':<16} {'':>7} wall time against the fixed default: {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
