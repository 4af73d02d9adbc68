"""What-if accuracy: benchy's predictions against plain loops that really have the change.

    python benchmarks/whatif.py [--reps 3] [--batches 150] [--workloads sleep,knee,cpu,cpu0]
    python benchmarks/whatif.py --checks 5      # the emulated check at the knee, 5 runs of the knee loop

For each workload, benchy runs (a ``BenchmarkDataLoader`` with the workload's workers, the step as it
is, the default configuration) before and after the plain loops; the mean of their ``whatif`` blocks
predicts IO and FULL for 0, 1, 2 and 4 workers and a step 1, 2 and 4 times faster, and FULL with the
run's own workers at the knee (the speed-up from which the model says loading limits, the runs'
``flip_speedup``, their mean). Each of those is run as a plain loop (the same dataset, a ``DataLoader``
with that many workers, a step that really is k times shorter), ``--reps`` times, interleaved; the table
sets the prediction, the naive ``min(IO, k x SYNTHETIC)`` and the plain loops' median side by side.

Workloads (batches of 8): ``sleep`` (the dataset sleeps 2 ms an item, the step sleeps 10 ms: nothing
contends for the cores; 2 workers), ``knee`` (1 ms an item, a 10 ms step, 2 workers: the loader about
twice the step's pace, so that a step 2 to 3 times faster meets it), ``cpu`` (the dataset and the step
do a fixed amount of torch work, one thread each, 1.5 ms an item and 8 ms a step on a quiet core: the
workers and the step share the machine's cores, and take longer when they contend; 2 workers) and
``cpu0`` (the same loop without workers: the loading and the step on one thread).

``--checks N`` runs the ``knee`` loop under benchy N times and prints each run's emulated check
(benchy's own measurement of its prediction at the knee) and whether it agrees.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.utils.data import DataLoader, Dataset

BATCH = 8
# 4 workers on 2 cores is one of the changes measured: torch's advice against it is known here.
warnings.filterwarnings("ignore", message="This DataLoader will create")
WORKLOADS = {  # name: (kind, seconds an item, seconds a step, the benchy run's workers)
    "sleep": ("sleep", 0.002, 0.010, 2),
    "knee": ("sleep", 0.001, 0.010, 2),
    "cpu": ("cpu", 0.0015, 0.008, 2),
    "cpu0": ("cpu", 0.0015, 0.008, 0),
}
WORKERS = (0, 1, 2, 4)
SPEEDUPS = (1.0, 2.0, 4.0)


_A = torch.ones(128, 128)  # an op of some 0.1 to 0.3 ms: torch lets go of the GIL while it computes
_OP_SECONDS: List[float] = []


def op_seconds() -> float:
    """Seconds of one unit of torch work on one quiet thread (measured once, before any worker starts)."""
    if not _OP_SECONDS:
        torch.set_num_threads(1)
        found = []
        for _ in range(7):
            began = time.perf_counter()
            for _ in range(200):
                torch.mm(_A, _A)
            found.append((time.perf_counter() - began) / 200)
        _OP_SECONDS.append(sorted(found)[3])
    return _OP_SECONDS[0]


def work(seconds: float) -> None:
    """A fixed amount of CPU work: what takes ``seconds`` on a quiet core (longer when cores are shared)."""
    for _ in range(max(1, round(seconds / op_seconds()))):
        torch.mm(_A, _A)


def waiter(kind: str) -> Callable[[float], None]:
    return time.sleep if kind == "sleep" else work


class Items(Dataset):  # type: ignore[type-arg]
    """Each item costs ``item`` seconds (asleep or spinning) in whichever process makes it."""

    def __init__(self, kind: str, item: float) -> None:
        self.kind, self.item = kind, item

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, int]:
        waiter(self.kind)(self.item)
        return torch.zeros(64), 0


def plain(kind: str, item: float, step: Optional[float], workers: int, batches: int) -> float:
    """A plain loop's samples/s over ``batches`` batches after a warm-up (``step``: None for IO)."""
    loader = DataLoader(Items(kind, item), batch_size=BATCH, num_workers=workers)
    wait = waiter(kind)
    it = iter(loader)
    for _ in range(2 * workers + 4):  # the workers started, their queue in its steady state
        next(it)
        if step is not None:
            wait(step)
    began = time.perf_counter()
    for _ in range(batches):
        next(it)
        if step is not None:
            wait(step)
    seconds = time.perf_counter() - began
    del it
    return batches * BATCH / seconds


def benchy_run(name: str, out: str) -> Dict[str, Any]:
    """The workload under benchy (defaults, 2 workers); its JSON."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--run-benchy", name, "--out", out, "--op-seconds", repr(op_seconds())],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the benchy run of {name} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f)  # type: ignore[no-any-return]


def under_benchy(name: str, out: str) -> None:
    from benchy.torch import BenchmarkDataLoader

    kind, item, step, workers = WORKLOADS[name]
    op_seconds()
    config = {"global": {"output_dir": os.path.dirname(out), "output_filename": os.path.basename(out)}}
    loader = BenchmarkDataLoader(Items(kind, item), batch_size=BATCH, num_workers=workers, benchy_config=config)
    wait = waiter(kind)
    for _ in range(100):
        for _batch in loader:
            wait(step)


def prediction(doc: Dict[str, Any], workers: int, speedup: float) -> Dict[str, Any]:
    w = doc["whatif"]
    cores = w["inputs"]["cores"]
    for p in w["predictions"]:
        if p["workers"] == workers and p["speedup"] == speedup and p["cores"] == cores and p["free_stage"] is None:
            return p  # type: ignore[no-any-return]
    raise SystemExit(f"no prediction for {workers} workers and a {speedup:g}x step in the JSON")


def knee(doc: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The run's emulated check (its change: the run's workers, a step ``flip_speedup`` times faster)."""
    for c in doc["whatif"]["checks"]:
        if c["kind"] == "FULL":  # the sweep's checks are IO
            return c  # type: ignore[no-any-return]
    return None


Row = Tuple[str, str, int, str, float, Optional[float], float]


def table(name: str, docs: List[Dict[str, Any]], found: Dict[Tuple[int, Optional[float]], List[float]]) -> List[Row]:
    rows: List[Row] = []
    for (workers, k), reals in found.items():
        real = statistics.median(reals)
        ps = [prediction(doc, workers, k or 1.0) for doc in docs]
        if k is None:
            model = statistics.mean(p["io"][1] for p in ps)
            rows.append((name, "IO", workers, "", model, None, real))
        else:
            model = statistics.mean(p["full"][1] for p in ps)
            naive = statistics.mean(p["naive_full"] for p in ps)
            rows.append((name, "FULL", workers, f"{k:g}x faster", model, naive, real))
    return rows


def at_knee(doc: Dict[str, Any], kind: str, item: float, step: float, args: argparse.Namespace) -> List[float]:
    """Plain loops at the run's knee (its emulated check's change)."""
    c = knee(doc)
    if c is None:
        return []
    w, k = c["change"]["workers"], c["change"]["speedup"]
    return [plain(kind, item, step / k, w, args.batches) for _ in range(args.reps)]


def knee_row(name: str, doc: Dict[str, Any], reals: List[float], which: str) -> Row:
    c = knee(doc)
    assert c is not None
    k = c["change"]["speedup"]
    naive = min(doc["IO"]["mean"], k * doc["SYNTHETIC"]["mean"])
    label = f"{k:.2f}x faster (knee, run {which})"
    return (name, "FULL", c["change"]["workers"], label, c["predicted"][1], naive, statistics.median(reals))


def checks(n: int, tmp: str) -> None:
    """The knee loop under benchy ``n`` times: each run's emulated check."""
    agreed = 0
    for j in range(n):
        doc = benchy_run("knee", os.path.join(tmp, f"check-{j}.json"))
        c = knee(doc)
        if c is None:
            print(f"run {j + 1}: no emulated check ({doc['whatif'].get('flip_speedup')})")
            continue
        lo, mean, hi = c["predicted"]
        agreed += bool(c["agree"])
        print(
            f"run {j + 1}: a step {c['change']['speedup']:.2f}x faster: predicted {mean:.1f} ({lo:.1f} to {hi:.1f}), measured "
            f"{c['measured']:.1f} +/- {c['measured_half_width']:.1f} ({100 * c['error']:+.1f} %): "
            f"{'agrees' if c['agree'] else 'disagrees'}",
            flush=True,
        )
    print(f"{agreed} of {n} agree")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="plain loops per change, interleaved (their median is compared)")
    parser.add_argument("--batches", type=int, default=150, help="batches a plain loop times")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    parser.add_argument("--checks", type=int, default=0, help="only run the knee loop under benchy this many times")
    parser.add_argument("--run-benchy", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--op-seconds", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.op_seconds is not None:  # the benchy run does the very work the plain loops do
        _OP_SECONDS.append(args.op_seconds)
        torch.set_num_threads(1)
    if args.run_benchy:
        under_benchy(args.run_benchy, args.out)
        return
    op_seconds()
    rows: List[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.checks:
            checks(args.checks, tmp)
            return
        for name in args.workloads.split(","):
            kind, item, step, _ = WORKLOADS[name]
            # benchy before and after the plain loops (predictions: their mean), the plain loops interleaved
            # rep by rep, so that a slow stretch of a shared machine falls on every change alike; each run's knee
            # (its emulated check's step) is run as a plain loop after it.
            docs = [benchy_run(name, os.path.join(tmp, f"{name}-before.json"))]
            changes = [(w, None) for w in WORKERS] + [(w, k) for w in WORKERS for k in SPEEDUPS]
            found: Dict[Tuple[int, Optional[float]], List[float]] = {c: [] for c in changes}
            knees: List[List[float]] = []

            knees.append(at_knee(docs[0], kind, item, step, args))
            for _ in range(args.reps):
                for workers, k in changes:
                    found[(workers, k)].append(plain(kind, item, None if k is None else step / k, workers, args.batches))
            docs.append(benchy_run(name, os.path.join(tmp, f"{name}-after.json")))
            knees.append(at_knee(docs[1], kind, item, step, args))
            for doc in docs:
                w = doc["whatif"]
                print(
                    f"{name}: benchy IO {doc['IO']['mean']:.1f}, SYNTHETIC {doc['SYNTHETIC']['mean']:.1f}, FULL "
                    f"{doc['FULL']['mean']:.1f} samples/s ({w['inputs']['cores']:g} cores); basis: {w['basis']}",
                    flush=True,
                )
            rows += table(name, docs, found)
            rows += [knee_row(name, doc, reals, which) for doc, reals, which in zip(docs, knees, "AB") if reals]
    print()
    print("| workload | figure | workers | step | plain loop | model | error | naive min(IO, k x SYN) | error |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst_model = worst_naive = 0.0
    for name, what, workers, k, model, naive, real in rows:
        em = model / real - 1
        worst_model = max(worst_model, abs(em))
        naive_cells = " | "
        if naive is not None:
            en = naive / real - 1
            worst_naive = max(worst_naive, abs(en))
            naive_cells = f"{naive:.1f} | {100 * en:+.1f} %"
        print(f"| {name} | {what} | {workers} | {k} | {real:.1f} | {model:.1f} | {100 * em:+.1f} % | {naive_cells} |")
    print()
    print(f"worst model error {100 * worst_model:.1f} %, worst naive error (FULL) {100 * worst_naive:.1f} %")


if __name__ == "__main__":
    main()
