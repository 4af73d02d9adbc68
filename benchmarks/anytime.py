"""Steps to a verdict: how many of the loop's steps the default schedule takes to decide, on sleep-based loops.

    python benchmarks/anytime.py [--reps 3] [--workers 0 2] [--step_ms 2 10 30] [--ratios 0.33 0.5 0.77 1 1.3 2 3] [--busy 2]

Each case is a DataLoader whose batches take ``ratio x step`` to make (a sleep in ``__getitems__``, in whichever
process makes it) and a training step that sleeps ``step`` milliseconds: ``ratio`` above 1, data loading limits
training by that much; below 1, compute by its inverse. benchy runs with its defaults (``exit_after_tests: false``,
so that the loop goes on, and its lines to /dev/null) through ``BenchmarkDataLoader``, the one-line edit's
wrapper; the loop runs epochs of 64 batches until the schedule is over. For each case: the loop's steps until the
verdict was decided (the JSON's ``schedule.decided_steps``; where it never was, until measuring stopped), the steps
until the final figures (``measuring_steps``: a decided verdict goes on while a figure's interval is wider than
+/-5 % of it, ``global.auto_figure_precision``), the verdict, and the seconds each took (``decided_seconds``,
``measuring_seconds``). Sleep-based loops keep their ratio on a busy machine; ``--busy N`` keeps N other processes
spinning meanwhile, to show what the noise of a shared machine costs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import torch
from torch.utils.data import Dataset

from benchy.torch import BenchmarkDataLoader

BATCH = 8
EPOCH = 64  # batches an epoch


class Sleepy(Dataset):  # type: ignore[type-arg]
    """Each batch (``__getitems__``) costs ``per_batch`` seconds in whichever process makes it."""

    def __init__(self, per_batch: float) -> None:
        self.per_batch = per_batch

    def __len__(self) -> int:
        return EPOCH * BATCH

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)

    def __getitems__(self, indices: List[int]) -> List[torch.Tensor]:
        time.sleep(self.per_batch)
        return [torch.zeros(2) for _ in indices]


def run(ratio: float, step: float, workers: int, out_dir: str) -> Dict[str, Any]:
    """One benchmark of a loop whose loader makes a batch in ``ratio x step`` seconds (``workers`` of them in
    parallel, each taking ``workers`` times as long) and whose step takes ``step``."""
    config = {"global": {"exit_after_tests": False, "output_dir": out_dir, "console": "plain"}}
    per_batch = ratio * step * max(1, workers)
    loader = BenchmarkDataLoader(
        Sleepy(per_batch), batch_size=BATCH, num_workers=workers, persistent_workers=workers > 0, benchy_config=config
    )
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        session = loader.benchy
        while not session.done:  # the schedule, the extras after the verdict, then the summary
            for _ in loader:
                time.sleep(step)
                if session.done:
                    break
    reading = session.ctx.sink.reading(session.snapshot())
    found = reading.verdict
    schedule = session.snapshot().schedule
    decided = schedule.decided_at is not None
    return {
        "steps": schedule.decided_at if decided else schedule.stopped_at,
        "seconds": schedule.decided_seconds if decided else schedule.stopped_seconds,
        "final": schedule.stopped_at,
        "final_seconds": schedule.stopped_seconds,
        "verdict": "-" if found is None else found.label,
        "stop": session.machine.stop.value if session.machine.stop is not None else "-",
    }


def expected(ratio: float) -> str:
    if ratio >= 1.25:
        return "data-loading"
    if ratio <= 1 / 1.25:
        return "compute"
    return "balanced or undecided"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    p.add_argument("--step_ms", type=float, nargs="+", default=[2.0, 10.0, 30.0])
    p.add_argument("--ratios", type=float, nargs="+", default=[1 / 3, 1 / 2, 1 / 1.3, 1.0, 1.3, 2.0, 3.0])
    p.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU meanwhile")
    args = p.parse_args()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL) for _ in range(args.busy)]
    try:
        rows = measure(args)
    finally:
        for proc in spinners:
            proc.kill()
    print(
        f"Steps to a verdict with benchy's defaults (one-line edit's wrapper, exit_after_tests: false); sleep-based loops, "
        f"batches of {BATCH}, epochs of {EPOCH} batches; {args.reps} run(s) each; {args.busy} other process(es) spinning; "
        f"Python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} cores"
    )
    header = (
        f"{'workers':>7} {'step ms':>7} {'loader/step':>11}  {'expected':<22} {'steps to verdict':<18} "
        f"{'steps to figures':<18} {'verdicts':<28}"
    )
    print(header + " seconds (median: verdict, figures)")
    for workers, step_ms, ratio, found in rows:
        steps = " ".join(str(f["steps"]) for f in found)
        verdicts = ", ".join(sorted({f["verdict"] for f in found}))
        final = " ".join(str(f["final"]) for f in found)
        seconds = statistics.median(f["seconds"] or 0.0 for f in found)
        final_seconds = statistics.median(f["final_seconds"] or 0.0 for f in found)
        print(
            f"{workers:>7} {step_ms:>7g} {ratio:>11.2f}  {expected(ratio):<22} {steps:<18} {final:<18} {verdicts:<28} "
            f"{seconds:.1f}, {final_seconds:.1f}"
        )


def measure(args: argparse.Namespace) -> List[Any]:
    rows = []
    with tempfile.TemporaryDirectory() as out_dir:
        for workers in args.workers:
            for step_ms in args.step_ms:
                for ratio in args.ratios:
                    found = [run(ratio, step_ms / 1e3, workers, out_dir) for _ in range(args.reps)]
                    rows.append((workers, step_ms, ratio, found))
                    print(f"... {workers} workers, step {step_ms:g} ms, loader {ratio:.2f}x the step: done", file=sys.stderr)
    return rows


if __name__ == "__main__":
    main()
