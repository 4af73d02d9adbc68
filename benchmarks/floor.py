"""benchy's hot loops against a floor: hand-written loops that take the same timestamps.

    python benchmarks/floor.py [--nbatches 50000] [--reps 7] [--loader all|generic|dataloader]

For each trial kind, one process times benchy's trial and an ideal instrumented loop written
by hand for that one batch structure, alternating the two (floor, benchy, floor ... floor:
``--reps`` benchy runs), and prints the fastest time per batch of each, their ratio (benchy /
floor), and the median of the paired ratios (each benchy run against the mean of the floor
runs either side of it). A VM switches between a fast and a slow regime (here ~85 and ~130 ns
for the same SYNTHETIC loop, minutes apart or ms apart): the fastest run of each side is the
code's own cost, the paired median says how often benchy ran in the slow one. A whole process can also sit
in the slow regime on one side for every repetition (either side: seen at 1.7x for benchy's SYNTHETIC, and for
the floor's, in some processes and not in others): read a row as the code's only where several runs agree.
The floor does what a trial must do and nothing more: one timestamp per batch (and, for FULL, one when the loop asks for
the next batch), the samples counted inline the cheapest way (``batch[0].shape[0]``), stored
in preallocated lists; IO fetches ``n`` batches after one; SYNTHETIC yields one cached batch;
FULL yields each batch and fetches the next. Both are timed by their own first and last
timestamps (benchy's ``TrialResult.seconds``), so the user's loop body (``pass``) is in both.

Batches are a tensor, an ``(inputs, labels)`` tuple and an ``{"image", "label"}`` dict, from
a list iterator (``BenchmarkGenericIteratorWrapper``) and from a ``DataLoader`` over an
in-memory dataset (``BenchmarkDataLoader``, ``batch_size=None``). With an NVTX tool attached
(``NVTX_INJECTION64_PATH``, e.g. ``tests/nvtx/recorder.c`` built as a shared library, with
``NVTX_RECORD_FILE=/dev/null``) the ``nvtx on`` rows push and pop the same ranges in both loops
(benchy's windows, step and fetch index as payload); without one, only ``nvtx off``
is measured. benchy runs with its defaults (system-metrics sampler on) but ``report_freq: 0``
unless ``--report_freq`` says otherwise: the periodic line's own time is taken out of the
trial, and ``--report_freq 10`` (the default config) shows what it leaves behind per step.
Ratios mean something only side by side: on a busy machine both sides slow down unevenly.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

import torch
from overhead import make_batches  # the same batches as benchmarks/overhead.py (run from this folder)

from benchy import Mode
from benchy.measure.profiling import nvtx_ranges
from benchy.torch import BenchmarkDataLoader, BenchmarkGenericIteratorWrapper

FREQ = [0]  # benchy's report_freq (--report_freq)
COUNT = {"tensor": "batch.shape[0]", "tuple": "batch[0].shape[0]", "dict": "batch['image'].shape[0]"}

# The floors, written once with {count} and {push}/{pop} placeholders; compiled per batch kind
# and NVTX setting, so each loop holds only what it needs: the ideal a plain loop is measured against.
FLOORS = """
def io(nxt, n, clock, stamps, sizes, push, pop, fetch_attr):
    batch = nxt()
    stamps[0] = clock()
    for j in range(1, n + 1):
        {push_fetch_j}
        batch = nxt()
        {pop}
        sizes[j - 1] = {count}
        stamps[j] = clock()
    return stamps[n] - stamps[0]


def synthetic(batch, n, clock, stamps, push, pop, step_attr):
    for i in range(n):
        stamps[i] = clock()
        {push_step}
        yield batch
        {pop}
    stamps[n] = clock()


def full(nxt, n, clock, stamps, asks, sizes, push, pop, step_attr, fetch_attr):
    batch = nxt()
    for i in range(n):
        sizes[i] = {count}
        stamps[i] = clock()
        {push_step}
        yield batch
        asks[i] = clock()
        {pop}
        {push_fetch_i}
        batch = nxt()
        {pop}
    stamps[n] = clock()
"""


def floors(kind: str, nvtx: bool) -> Dict[str, Callable[..., Any]]:
    source = FLOORS.format(
        count=COUNT[kind],
        # benchy's ranges carry the step's and the fetch's index as their payload: so do these.
        push_step="step_attr.payload = i; push(step_attr)" if nvtx else "pass",
        push_fetch_j="fetch_attr.payload = j; push(fetch_attr)" if nvtx else "pass",
        push_fetch_i="fetch_attr.payload = i + 1; push(fetch_attr)" if nvtx else "pass",
        pop="pop()" if nvtx else "pass",
    )
    namespace: Dict[str, Any] = {}
    exec(compile(source, f"<floor {kind} nvtx={nvtx}>", "exec"), namespace)
    return namespace


class InMemory(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Ready-made batches, handed out as they are (``DataLoader(batch_size=None)``)."""

    def __init__(self, batches: List[Any]) -> None:
        self.batches = batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, i: int) -> Any:
        return self.batches[i]


def source(loader: str, batches: List[Any]) -> Iterator[Any]:
    if loader == "generic":
        return iter(batches)
    return iter(torch.utils.data.DataLoader(InMemory(batches), batch_size=None))


def floor_run(loader: str, kind: str, nvtx: bool, batches: List[Any], n: int) -> Dict[str, float]:
    """Seconds per batch of each floor loop, over the same batches as benchy's trials."""
    f = floors(kind, nvtx)
    domain = _domain()
    push, pop = domain.push_range, domain.pop_range
    step_attr = domain.get_event_attributes(message="step", payload=0)
    fetch_attr = domain.get_event_attributes(message="fetch", payload=0)
    clock = time.perf_counter
    out: Dict[str, float] = {}
    stamps, sizes, asks = [0.0] * (n + 1), [0] * n, [0.0] * n
    out["IO"] = f["io"](source(loader, batches).__next__, n, clock, stamps, sizes, push, pop, fetch_attr) / n
    cached = batches[0]
    stamps = [0.0] * (n + 1)
    for _ in f["synthetic"](cached, n, clock, stamps, push, pop, step_attr):
        pass
    out["SYNTHETIC"] = (stamps[n] - stamps[0]) / n
    stamps = [0.0] * (n + 1)
    for _ in f["full"](source(loader, batches).__next__, n, clock, stamps, asks, sizes, push, pop, step_attr, fetch_attr):
        pass
    out["FULL"] = (stamps[n] - stamps[0]) / n
    return out


def _domain() -> Any:
    import nvtx

    return nvtx.get_domain("benchy")  # the domain benchy's ranges use


def benchy_run(loader: str, nvtx: bool, batches: List[Any], n: int, out_dir: str) -> Dict[str, float]:
    """Seconds per batch of benchy's IO, SYNTHETIC and FULL trials (one each, no warm-up): the IO trial on
    a pass of benchy's own, then the two windows in one epoch of the loop (``batches`` holds 2 n + 8)."""
    mode = {"nbatches": n, "ntrials": 1, "nwarmup": 0}
    cfg = {
        "global": {
            "exit_after_tests": False,
            "output_dir": out_dir,
            "console": "plain",
            "report_freq": FREQ[0],
            "flops": False,
            "stages": False,
            "whatif": False,  # no diagnostic windows or emulated trials: the three trials' loops are measured
            "nvtx": nvtx,
        },  # nvtx: false, no ranges pushed
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    wrapper: Any
    if loader == "generic":
        wrapper = BenchmarkGenericIteratorWrapper(batches, 2, benchy_config=cfg)
    else:
        wrapper = BenchmarkDataLoader(InMemory(batches), batch_size=None, benchy_config=cfg)
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        for _ in wrapper:  # one epoch: the IO trial runs inside its iter(), then SYNTHETIC and FULL
            pass
    results = wrapper.benchy.results
    assert wrapper.benchy.done, "the schedule did not finish"
    return {m.value: results.measured(m)[0].seconds / n for m in Mode}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbatches", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--loader", choices=["all", "generic", "dataloader"], default="all")
    parser.add_argument(
        "--report_freq",
        type=int,
        default=0,
        help="benchy's periodic line every this many steps (0: none, as the floor; the default "
        "config prints one every 10, its own time taken out of the trial)",
    )
    args = parser.parse_args()
    FREQ[0] = args.report_freq
    loaders = ["generic", "dataloader"] if args.loader == "all" else [args.loader]
    one, five, _ = os.getloadavg()
    print(
        f"benchy's trials against a hand-written floor, ns per batch (fastest of {args.reps} alternating "
        f"repetitions; paired: median of the ratios of neighbours); {args.nbatches} batches per trial; "
        f"Python {platform.python_version()}, torch {torch.__version__}, {os.cpu_count()} cores, "
        f"load average {one:.2f} / {five:.2f} at the start; "
        f"benchy's report_freq {args.report_freq}"
    )
    print(f"{'loader':<11} {'batch':<7} {'nvtx':<4} {'mode':<10} {'floor':>8} {'benchy':>8} {'ratio':>7} {'paired':>7}")
    settings = [False] + ([True] if nvtx_ranges(True) is not None else [])
    if len(settings) == 1:
        print("no NVTX tool attached (NVTX_INJECTION64_PATH): nvtx off only")
    worst: List[Tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as out_dir:
        for loader in loaders:
            n = args.nbatches if loader == "generic" else max(1000, args.nbatches // 5)
            for kind in ("tensor", "tuple", "dict"):
                batches = make_batches(kind, 2 * n + 8)
                for nvtx in settings:
                    # Floor, benchy, floor, ... floor: each benchy run is compared with the mean of
                    # the floor runs either side of it, so a burst of noise on a shared machine
                    # (minutes long on a VM) moves both sides of a ratio together.
                    floors_seen = [floor_run(loader, kind, nvtx, batches, n)]
                    ours: List[Dict[str, float]] = []
                    for _ in range(args.reps):
                        ours.append(benchy_run(loader, nvtx, batches, n, out_dir))
                        floors_seen.append(floor_run(loader, kind, nvtx, batches, n))
                    for m in ("IO", "SYNTHETIC", "FULL"):
                        ratios = [ours[k][m] * 2 / (floors_seen[k][m] + floors_seen[k + 1][m]) for k in range(args.reps)]
                        lo = min(f[m] for f in floors_seen) * 1e9
                        hi = min(o[m] for o in ours) * 1e9
                        paired = statistics.median(ratios)
                        worst.append((hi / lo, f"{loader} {kind} nvtx {'on' if nvtx else 'off'} {m}"))
                        print(
                            f"{loader:<11} {kind:<7} {'on' if nvtx else 'off':<4} {m:<10} {lo:8.1f} {hi:8.1f} "
                            f"{hi / lo:7.3f} {paired:7.3f}",
                            flush=True,
                        )
    ratio, where = max(worst)
    one, five, _ = os.getloadavg()
    print(f"highest ratio: {ratio:.3f} ({where}); load average {one:.2f} / {five:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
