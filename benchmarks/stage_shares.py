"""Stage shares with and without loader workers, against the sleeps that make them (the measurement moved here from
``tests/measure/test_stages.py``, whose bounds on the shares with workers no loaded machine kept).

    python benchmarks/stage_shares.py [--reps 3] [--workers 0 2]

The workload is the test's: a dataset whose ``__getitem__`` sleeps 1 ms, a Compose of Resize (0.5 ms) and Normalize
(1.5 ms), a collate_fn that sleeps 2 ms, batches of 4: per batch 4 + 2 + 6 + 2 ms in 13 sleeps. Each repetition runs
the stage trials (a warm-up of 6 batches, two of 24) and prints each worker stage's share of the worker stages' sum,
against its share of the nominal sleeps and its share of the sleep calls (with an equal oversleep on each call, the
true share lies between the two), and Normalize's time a batch.

Printed on the 2-core development machine beside a load average of 6.8 (other jobs), 2026-11-29, ``--reps 3``:

    stage                 nominal  calls   w0 median (min-max)  w2 median (min-max)
    dataset                 0.286  0.308      0.303 (0.284-0.319)    0.319 (0.318-0.326)
    transform Resize        0.143  0.308      0.174 (0.148-0.175)    0.159 (0.155-0.169)
    transform Normalize     0.429  0.308      0.390 (0.371-0.412)    0.367 (0.355-0.368)
    collate_fn              0.143  0.077      0.136 (0.129-0.159)    0.154 (0.153-0.159)
    Normalize ms            6.000  0.000      8.023 (6.550-9.732)    7.805 (7.318-8.327)

With workers, single runs beside a load average of 5 to 7 read collate_fn at 0.217 and Normalize at 10 to 12.7 ms
(the test's failures that moved the measurement here).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from stage_datasets import Compose, Items, Normalize, Resize, SlowCollate  # noqa: E402

from benchy.core.stages import MAIN_WORK, StageKind, analyse  # noqa: E402
from benchy.measure.source import BatchSource  # noqa: E402
from benchy.measure.stages import has_in_order, instrument, stage_trial  # noqa: E402

MS = {"dataset": 4.0, "transform Resize": 2.0, "transform Normalize": 6.0, "collate_fn": 2.0}
CALLS = {"dataset": 4, "transform Resize": 4, "transform Normalize": 4, "collate_fn": 1}


def shares(workers: int) -> Dict[str, float]:
    data = Items(2000, own_ms=1.0, transform=Compose([Resize(0.5), Normalize(1.5)]))
    made = instrument(dict(dataset=data, batch_size=4, num_workers=workers, collate_fn=SlowCollate(2.0)))
    source = BatchSource(lambda: iter(made.loader))
    try:
        found = [stage_trial("STAGES_WARMUP_1", True, 6, source.fetch, lambda b: len(b[0]), made)]
        found += [stage_trial(f"STAGES_{k}", False, 24, source.fetch, lambda b: len(b[0]), made) for k in (1, 2)]
    finally:
        try:
            source.close()
        except RuntimeError:
            pass
    report = analyse(found, in_order=has_in_order(), split=made.plan.split, free_cores=0.0)
    assert report is not None
    stages = [s for s in report.stages if s.where in ("workers", "main") and s.kind not in (*MAIN_WORK, StageKind.WAIT)]
    total = sum(s.seconds for s in stages)
    out = {s.name: s.seconds / total for s in stages}
    out["Normalize ms"] = 1e3 * next(s.seconds for s in stages if s.name == "transform Normalize")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = p.parse_args()
    nominal = {k: v / sum(MS.values()) for k, v in MS.items()}
    counted = {k: v / sum(CALLS.values()) for k, v in CALLS.items()}
    print("stage                 nominal  calls   " + "  ".join(f"w{w} median (min-max)" for w in args.workers))
    runs: Dict[int, List[Dict[str, Any]]] = {w: [shares(w) for _ in range(args.reps)] for w in args.workers}
    for name in [*MS, "Normalize ms"]:
        row = f"{name:<21} {nominal.get(name, 6.0 if name == 'Normalize ms' else 0):7.3f} {counted.get(name, 0):6.3f}  "
        for w in args.workers:
            xs = [r[name] for r in runs[w]]
            row += f"  {statistics.median(xs):7.3f} ({min(xs):.3f}-{max(xs):.3f})"
        print(row)


if __name__ == "__main__":
    main()
