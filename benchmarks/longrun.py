"""Long runs: the memory benchy keeps per timed batch, and what each JSON checkpoint costs.

    python benchmarks/longrun.py [--nbatches 200000] [--ntrials 2] [--batch-size 64]

IO, SYNTHETIC and FULL each run ``--ntrials`` trials (no warm-up) of ``--nbatches`` batches
over in-memory ``(inputs, labels)`` tuples with an empty loop body: 6 trials of 200 000
batches by default, the case in issue 10. Two runs of the same schedule:

* memory (``tracemalloc`` on): what benchy still holds after the schedule, per timed batch
  (the results of every trial), and the peak while a trial runs, per batch of that trial;
* cost (``tracemalloc`` off): the time of every JSON write after a trial (checkpoints) and of
  the final one, with the sizes of the JSON and of the per-step side file.

A batch size above 256 (``--batch-size 512``) makes every sample count a new Python int,
which is what a list of counts pays for such batches.

Then the peak the operating system sees: two fresh processes run the same loop over the same
loader (64 batch objects handed out in turn, so the batches themselves take no memory), one
plain and one through benchy with the schedule above (the final JSON and per-step files
written), and each reports its peak RSS (``ru_maxrss``); the difference per timed batch is
what benchy costs at its peak (``--schedule full`` runs FULL trials only).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any, Callable, Dict, List, Tuple

import torch

from benchy.session import sink as _sink
from benchy.torch import BenchmarkGenericIteratorWrapper


def make_wrapper(batches: List[Any], out_dir: str, nbatches: int, ntrials: int, batch_size: int) -> Any:
    mode = {"nbatches": nbatches, "ntrials": ntrials, "nwarmup": 0}
    cfg = {
        "global": {"report_freq": 0, "exit_after_tests": False, "output_dir": out_dir, "console": "plain"},
        "IO": mode,
        "synthetic": mode,
        "full": mode,
    }
    return BenchmarkGenericIteratorWrapper(batches, batch_size, benchy_config=cfg)


def run_epochs(wrapper: Any, epochs: int) -> None:
    """Epochs until the schedule is over (each window spans about an epoch of these loaders), then one
    plain epoch; ``epochs`` bounds them."""
    with contextlib.redirect_stdout(open(os.devnull, "w")):
        for _ in range(epochs):
            for _ in wrapper:
                pass
            if wrapper.benchy.done:
                break
        for _ in wrapper:
            pass


def timed_writes(trace: bool) -> Tuple[List[Tuple[bool, float, int]], Callable[[], None]]:
    """Record every ResultSink.write_json call: (final?, seconds, tracemalloc peak above the
    memory at its start); with ``trace``, the peak between writes goes to ``between``."""
    calls: List[Tuple[bool, float, int]] = []
    original = _sink.ResultSink.write_json

    def timed(self: Any, snapshot: Any, reading: Any, *, final: bool, **kwargs: Any) -> None:
        start = 0
        if trace:
            start, peak = tracemalloc.get_traced_memory()
            BETWEEN.append(peak)
            tracemalloc.reset_peak()
        t0 = time.perf_counter()
        original(self, snapshot, reading, final=final, **kwargs)
        seconds = time.perf_counter() - t0
        extra = 0
        if trace:
            extra = tracemalloc.get_traced_memory()[1] - start
            tracemalloc.reset_peak()
        calls.append((final, seconds, extra))

    _sink.ResultSink.write_json = timed  # type: ignore[method-assign]

    def restore() -> None:
        _sink.ResultSink.write_json = original  # type: ignore[method-assign]

    return calls, restore


def recorded_run(
    batches: List[Any], out_dir: str, n: int, ntrials: int, size: int, epochs: int, trace: bool
) -> Tuple[Any, List[Tuple[bool, float, int]]]:
    """Run the schedule with every JSON write recorded (see :func:`timed_writes`)."""
    calls, restore = timed_writes(trace=trace)
    try:
        wrapper = make_wrapper(batches, out_dir, n, ntrials, size)
        run_epochs(wrapper, epochs)
    finally:
        restore()
    return wrapper, calls


BETWEEN: List[int] = []  # tracemalloc peaks between JSON writes (while trials run)


class Pool:
    """A loader of ``n`` batches per pass, 64 batch objects handed out in turn."""

    def __init__(self, n: int, size: int) -> None:
        self.n = n
        self.pool = [(torch.zeros(size, 1), torch.zeros(size, dtype=torch.long)) for _ in range(64)]

    def __iter__(self) -> Any:
        pool = self.pool
        return (pool[k & 63] for k in range(self.n))


def child(kind: str, n: int, ntrials: int, size: int, schedule: str) -> None:
    """One process's loop, plain or through benchy; prints its peak RSS in bytes."""
    import resource

    loader = Pool(n + 2, size)
    modes = ("IO", "synthetic", "full") if schedule == "all" else ("full",)
    epochs = 2 * ((2 * ntrials if schedule == "all" else ntrials) + 1)
    if kind == "plain":
        for _ in range(epochs):
            for _ in loader:
                pass
    else:
        with tempfile.TemporaryDirectory() as out_dir:
            mode = {"nbatches": n, "ntrials": ntrials, "nwarmup": 0}
            cfg: Dict[str, Any] = {
                "global": {"report_freq": 0, "exit_after_tests": False, "output_dir": out_dir, "console": "plain"}
            }
            for name in ("IO", "synthetic", "full"):
                cfg[name] = mode if name in modes else {"run_benchmark": False}
            wrapper = BenchmarkGenericIteratorWrapper(loader, size, benchy_config=cfg)
            run_epochs(wrapper, epochs)
            assert wrapper.benchy.done, "the schedule did not finish"
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _peaks(n: int, ntrials: int, size: int, schedule: str) -> Dict[str, int]:
    peaks = {}
    for kind in ("plain", "benchy"):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                kind,
                "--nbatches",
                str(n),
                "--ntrials",
                str(ntrials),
                "--batch-size",
                str(size),
                "--schedule",
                schedule,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        peaks[kind] = int(out.stdout.split()[-1])
    return peaks


def peak_rss(n: int, ntrials: int, size: int, schedule: str) -> None:
    """Peak RSS through benchy over the plain loop's, at ``n`` and ``n / 10`` batches per trial:
    per timed batch in all, and at the margin (the slope between the two: what each more batch
    costs, without the fixed cost of benchy's imports and threads)."""
    per_mode = (3 if schedule == "all" else 1) * ntrials
    big, small = _peaks(n, ntrials, size, schedule), _peaks(max(1, n // 10), ntrials, size, schedule)
    extra = big["benchy"] - big["plain"]
    extra_small = small["benchy"] - small["plain"]
    timed, timed_small = per_mode * n, per_mode * max(1, n // 10)
    print(
        f"peak RSS, {schedule} schedule ({timed} timed batches): plain loop {big['plain'] / 1e6:.1f} MB, "
        f"through benchy {big['benchy'] / 1e6:.1f} MB: +{extra / 1e6:.1f} MB, {extra / timed:.1f} bytes per timed "
        f"batch; at {timed_small} timed batches +{extra_small / 1e6:.1f} MB: "
        f"{(extra - extra_small) / (timed - timed_small):.1f} bytes per timed batch at the margin"
    )


def disk_size(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))
    return os.path.getsize(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nbatches", type=int, default=200_000)
    parser.add_argument("--ntrials", type=int, default=2, help="trials per mode (3 modes)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--schedule",
        choices=["all", "full"],
        default="all",
        help="the peak-RSS comparison's schedule: IO, SYNTHETIC and FULL, or FULL only",
    )
    parser.add_argument("--child", choices=["plain", "benchy"], help=argparse.SUPPRESS)
    parser.add_argument("--peak-only", action="store_true", help="only the peak-RSS comparison")
    args = parser.parse_args()
    n, size = args.nbatches, args.batch_size
    if args.child:
        child(args.child, n, args.ntrials, size, args.schedule)
        return 0
    # First, while this process is small: a child's peak RSS starts from its parent's (it
    # survives exec on Linux), so the children must not be started after the batches below.
    peak_rss(n, args.ntrials, size, args.schedule)
    if args.peak_only:
        return 0
    peak_rss(n, args.ntrials, size, "full" if args.schedule == "all" else "all")
    batches = [(torch.zeros(size, 1), torch.zeros(size, dtype=torch.long)) for _ in range(n + 1)]
    trials = 3 * args.ntrials
    epochs = 4 * args.ntrials + 2  # a bound: each window spans about one of these epochs
    timed = trials * n
    print(f"{trials} trials of {n} batches ({timed} timed batches), (inputs, labels) tuples of {size} samples")

    with tempfile.TemporaryDirectory() as out_dir:
        run_epochs(make_wrapper(batches[:101], out_dir, 100, 1, size), 3)  # imports and caches: not per batch
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        wrapper, calls = recorded_run(batches, out_dir, n, args.ntrials, size, epochs, trace=True)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert wrapper.benchy.done, "the schedule did not finish"
        trial_peak = max(BETWEEN) - base
        final_extra = max(extra for final, _, extra in calls if final)
        print(f"memory kept after the schedule: {(kept - base) / timed:.1f} bytes per timed batch ({(kept - base) / 1e6:.1f} MB)")
        print(
            f"peak while trials run:          {trial_peak / 1e6:.1f} MB "
            f"(what is kept plus {(trial_peak - (kept - base) * (trials - 1) / trials) / n:.1f} bytes per "
            f"batch of the running trial)"
        )
        print(
            f"final write, at its peak:       +{final_extra / 1e6:.1f} MB "
            f"({final_extra / timed:.1f} bytes per counted batch: the 'rates' lists, once)"
        )
        del wrapper
        gc.collect()

    with tempfile.TemporaryDirectory() as out_dir:
        _, calls = recorded_run(batches, out_dir, n, args.ntrials, size, epochs, trace=False)
        checkpoints = [t for final, t, _ in calls if not final]
        finals = [t for final, t, _ in calls if final]
        print("checkpoint writes (s):         " + " ".join(f"{t:.3f}" for t in checkpoints))
        print("final write (s):               " + " ".join(f"{t:.3f}" for t in finals))
        for name in sorted(os.listdir(out_dir)):
            print(f"{name}: {disk_size(os.path.join(out_dir, name)) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
