"""Fidelity: benchy's IO / SYNTHETIC / FULL with its defaults against the same loop unwrapped, on loops of known shape.

    python benchmarks/fidelity.py [--reps 3] [--rows w8-b32-s4-io ...] [--quick]

Each row is a DataLoader over a dataset whose batch costs a known sleep in whichever process makes it (a worker, or
the main process without workers), ``shuffle=True``, ``persistent_workers=True`` with workers, epochs of ``--epoch``
batches, and a training step that sleeps. The rows with 4, 8 and 16 workers are GPU-shaped: the workers run in step
and hand over their batches in bursts (``workers`` at once, then a wait of a whole batch's making), the step takes 1
to 10 ms, on both sides of the point where loading starts to limit (``loader/step``: a batch's share of the loader's
time over the step's). The rows with 0 and 2 workers are the earlier tables' workloads (batches of 8).

Each repetition measures the truth, runs benchy, and measures the truth again, in the same minutes:

* FULL: the same loop unwrapped (a DataLoader with the same arguments, the same step), its steady throughput between
  its epochs' start-ups (in each epoch after the first, from its second hand-out over whole rounds of the workers);
* IO: the loader alone, the same way;
* SYNTHETIC: the step alone.

benchy runs with its defaults through ``BenchmarkDataLoader`` (the one-line edit's wrapper; only ``exit_after_tests:
false``, so the loop goes on, and its lines to /dev/null); the loop runs epochs until the schedule is over. The error
is benchy's mean against the mean of the truth before and after; ``+/-`` its 95 % interval as a share of its mean;
"covers" the repetitions whose interval holds the truth; ``drift`` how far the truth itself moved between before and
after (FULL, IO: the largest of the repetitions, % of their mean): the machine's own noise, which no figure beats.
``decided`` and ``final``: the loop's steps and seconds from
the benchmark's start until the verdict was first decided and until measuring stopped (the JSON's
``schedule.decided_steps``, ``decided_seconds``, ``measuring_steps``, ``measuring_seconds``). ``FULL>`` counts the
repetitions whose FULL, less its interval, lies above IO or SYNTHETIC plus theirs (no loop is faster than its loader or
its step, beyond what the intervals allow).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.utils.data import DataLoader, Dataset

from benchy.torch import BenchmarkDataLoader

MODES = ("IO", "SYNTHETIC", "FULL")
TRUTH_SECONDS = 2.5  # each truth measured for about this long (whole epochs)


@dataclass(frozen=True)
class Row:
    name: str
    workers: int
    batch: int
    step_ms: float
    loader_ms: float  # the loader's time a batch (a worker takes workers x this for one)

    @property
    def ratio(self) -> float:
        return self.loader_ms / self.step_ms


ROWS = [
    # GPU-shaped: workers in step, bursts of `workers` batches.
    Row("w4-b16-s2-io", 4, 16, 2.0, 3.2),
    Row("w4-b16-s4-compute", 4, 16, 4.0, 2.4),
    Row("w8-b32-s4-io", 8, 32, 4.0, 6.4),
    Row("w8-b32-s4-near", 8, 32, 4.0, 3.2),
    Row("w8-b32-s6-compute", 8, 32, 6.0, 3.6),
    Row("w8-b16-s1-io", 8, 16, 1.0, 2.0),
    Row("w8-b64-s10-io", 8, 64, 10.0, 13.0),
    Row("w16-b64-s8-io", 16, 64, 8.0, 12.8),
    Row("w16-b32-s5-compute", 16, 32, 5.0, 3.5),
    # The earlier tables' workloads: batches of 8, 0 and 2 workers.
    Row("w0-b8-io", 0, 8, 4.0, 8.0),
    Row("w0-b8-compute", 0, 8, 8.0, 4.0),
    Row("w0-b8-balanced", 0, 8, 6.0, 6.0),
    Row("w2-b8-io", 2, 8, 4.0, 8.0),
    Row("w2-b8-compute", 2, 8, 8.0, 4.0),
    Row("w2-b8-balanced", 2, 8, 6.0, 6.0),
]
QUICK = ["w8-b32-s4-io", "w16-b32-s5-compute", "w2-b8-io"]


class Sleepy(Dataset):  # type: ignore[type-arg]
    """Each batch (``__getitems__``) costs ``per_batch`` seconds in whichever process makes it."""

    def __init__(self, length: int, per_batch: float) -> None:
        self.length, self.per_batch = length, per_batch

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)

    def __getitems__(self, indices: List[int]) -> List[torch.Tensor]:
        time.sleep(self.per_batch)
        return [torch.zeros(2) for _ in indices]


def dataset(row: Row, epoch: int) -> Sleepy:
    return Sleepy(epoch * row.batch, row.loader_ms / 1000 * max(1, row.workers))


def loader_kwargs(row: Row) -> Dict[str, Any]:
    return dict(batch_size=row.batch, shuffle=True, num_workers=row.workers, persistent_workers=row.workers > 0)


def steady(stamps: List[float], cycle: int, batch: int) -> Tuple[int, float]:
    """An epoch's samples and seconds between its start-up and its end, over whole rounds of the workers."""
    periods = (len(stamps) - 2) // cycle * cycle
    if periods <= 0:
        return 0, 0.0
    return periods * batch, stamps[1 + periods] - stamps[1]


def truth(row: Row, epoch: int) -> Dict[str, float]:
    """The same loop unwrapped (FULL), its loader alone (IO) and its step alone (SYNTHETIC), samples/s."""
    step = row.step_ms / 1000
    out: Dict[str, float] = {}
    for mode in ("IO", "FULL"):
        loader = DataLoader(dataset(row, epoch), **loader_kwargs(row))
        samples, seconds, started, epochs = 0, 0.0, time.perf_counter(), 0
        while epochs < 2 or time.perf_counter() - started < TRUTH_SECONDS:
            stamps = []
            for _ in loader:
                stamps.append(time.perf_counter())
                if mode == "FULL":
                    time.sleep(step)
            epochs += 1
            if epochs > 1:  # the first epoch starts the workers
                got = steady(stamps, max(1, row.workers), row.batch)
                samples, seconds = samples + got[0], seconds + got[1]
        out[mode] = samples / seconds
        del loader
        gc.collect()
    n = int(TRUTH_SECONDS / 2 / step)
    t0 = time.perf_counter()
    for _ in range(n):
        time.sleep(step)
    out["SYNTHETIC"] = n * row.batch / (time.perf_counter() - t0)
    return out


def benchy_run(row: Row, epoch: int, out_dir: str) -> Dict[str, Any]:
    """benchy's defaults on the loop; its three figures and the schedule's milestones, from its JSON."""
    config = {"global": {"exit_after_tests": False, "output_dir": out_dir, "console": "plain"}}
    loader = BenchmarkDataLoader(dataset(row, epoch), benchy_config=config, **loader_kwargs(row))
    step = row.step_ms / 1000
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        while not loader.benchy.done:
            for _ in loader:
                time.sleep(step)
                if loader.benchy.done:
                    break
    with open(os.path.join(out_dir, "benchy_result.json")) as f:
        doc = json.load(f)
    del loader
    gc.collect()
    sched = doc["schedule"]
    return {
        "figures": {m: (doc[m]["mean"], doc[m]["interval"], doc[m]["n"]) for m in MODES},
        "decided": (sched.get("decided_steps"), sched.get("decided_seconds")),
        "final": (sched.get("measuring_steps"), sched.get("measuring_seconds")),
        "verdict": doc["decision"]["outcome"] if doc.get("decision") else "-",
    }


def spread(values: List[float]) -> str:
    return f"{statistics.median(values):+.1f} ({min(values):+.1f}..{max(values):+.1f})"


def ints(values: List[Optional[float]], fmt: str = "{:.0f}") -> str:
    return "/".join("-" if v is None else fmt.format(v) for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rows", nargs="+", choices=[r.name for r in ROWS], default=None)
    parser.add_argument("--epoch", type=int, default=150, help="batches an epoch (not whole rounds of the workers)")
    parser.add_argument("--quick", action="store_true", help=f"the rows {', '.join(QUICK)}, 2 repetitions")
    parser.add_argument("--json", default=None, help="also write every repetition's figures to this file")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")  # more workers than this machine's cores
    names = args.rows or (QUICK if args.quick else [r.name for r in ROWS])
    reps = 2 if args.quick and args.reps == 3 else args.reps
    rows = [r for r in ROWS if r.name in names]
    print(
        f"benchy fidelity with its defaults against the unwrapped loop: {reps} repetition(s) a row; epochs of "
        f"{args.epoch} batches, shuffle=True, persistent workers; Python {platform.python_version()}, "
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}",
        flush=True,
    )
    print(
        "| row | loader/step | truth IO / SYN / FULL samples/s | error % IO | error % SYN | error % FULL | +/- % IO / SYN / FULL "
        "(max) | covers | FULL> | drift % FULL, IO | decided: steps, s | final: steps, s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    record = []
    with tempfile.TemporaryDirectory() as out_dir:
        for row in rows:
            errors: Dict[str, List[float]] = {m: [] for m in MODES}
            widths: Dict[str, List[float]] = {m: [] for m in MODES}
            covers = {m: 0 for m in MODES}
            truths: Dict[str, List[float]] = {m: [] for m in MODES}
            drift: Dict[str, List[float]] = {m: [] for m in MODES}
            decided: List[Tuple[Any, Any]] = []
            final: List[Tuple[Any, Any]] = []
            above = 0
            for _ in range(reps):
                before = truth(row, args.epoch)
                got = benchy_run(row, args.epoch, out_dir)
                after = truth(row, args.epoch)
                figures = got["figures"]
                for m in MODES:
                    ref = 0.5 * (before[m] + after[m])
                    mean, half, _ = figures[m]
                    truths[m].append(ref)
                    drift[m].append(100.0 * abs(before[m] - after[m]) / ref)
                    errors[m].append(100.0 * (mean - ref) / ref)
                    widths[m].append(100.0 * half / mean if half is not None else float("inf"))
                    covers[m] += int(half is not None and abs(mean - ref) <= half)
                full_low = figures["FULL"][0] - (figures["FULL"][1] or 0.0)
                above += int(any(full_low > figures[m][0] + (figures[m][1] or 0.0) for m in ("IO", "SYNTHETIC")))
                decided.append(got["decided"])
                final.append(got["final"])
                record.append({"row": row.name, "before": before, "after": after, **got})
            ref = " / ".join(f"{statistics.median(truths[m]):.0f}" for m in MODES)
            width = " / ".join(f"{statistics.median(widths[m]):.1f}" for m in MODES)
            worst = max(max(widths[m]) for m in MODES)
            print(
                f"| {row.name} | {row.ratio:.2f} | {ref} | {spread(errors['IO'])} | {spread(errors['SYNTHETIC'])} | "
                f"{spread(errors['FULL'])} | {width} ({worst:.1f}) | "
                f"{covers['IO']}/{covers['SYNTHETIC']}/{covers['FULL']} of {reps} | {above} | "
                f"{max(drift['FULL']):.1f}, {max(drift['IO']):.1f} | "
                f"{ints([d[0] for d in decided])}, {ints([d[1] for d in decided], '{:.1f}')} | "
                f"{ints([f[0] for f in final])}, {ints([f[1] for f in final], '{:.1f}')} |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
