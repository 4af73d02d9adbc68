"""All of benchy's own measurements, one command: overhead, the hot loops against their floor,
growth, fidelity, steps to a verdict, long runs (memory and checkpoints), the system-metrics
sampler's cost, benchy's own distributed exchange with 2 to 32 ranks.

    python benchmarks/run.py            # about 27 minutes on a 2-core machine
    python benchmarks/run.py --quick    # about 6 minutes: fewer batches and repetitions

Each part is also a script of its own in this folder (see its docstring).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import os

    print(
        f"# benchy benchmarks, {datetime.date.today().isoformat()}, {platform.node()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}\n",
        flush=True,
    )
    parts = [
        ("overhead", ["--nbatches", "20000" if args.quick else "100000", "--runs", "3" if args.quick else "5"]),
        ("floor", ["--loader", "generic", "--reps", "3" if args.quick else "9"]),
        ("growth", []),
        ("fidelity", ["--reps", "2" if args.quick else "10"]),
        ("anytime", ["--reps", "1" if args.quick else "3", "--step_ms", "4", "20"]),
        ("longrun", ["--nbatches", "50000" if args.quick else "200000"]),
        ("sampler", ["--reps", "1" if args.quick else "3"]),
        ("ranks", ["--ranks", "2", "4", "8"] + ([] if args.quick else ["16", "32"]) + ["--trials", "5" if args.quick else "20"]),
    ]
    status = 0
    for name, extra in parts:
        print(f"## {name}", flush=True)
        status |= subprocess.call([sys.executable, str(HERE / f"{name}.py"), *extra])
        print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
