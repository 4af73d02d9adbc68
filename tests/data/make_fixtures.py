"""Writes the made-up result files the command-line tests read (run it to regenerate them).

    python tests/data/make_fixtures.py

The files under ``results/`` are real runs (one per schema version, see its README); the files
written here take the real version-2 file as their template and replace each mode's trials
with chosen throughputs, so that ``compare`` and ``report`` have known answers:

* ``compare/``: a base, a FULL regression of -12.5 %, a FULL change of -3 % (significant but
  within a 5 % threshold) and a noise-level change;
* ``scaling/``: 1, 2 and 4 ranks with the same batch per rank; FULL speedups 1.9 and 3.6.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from benchy.core.stats import estimate  # noqa: E402

TEMPLATE = os.path.join(HERE, "results", "v2", "benchy_result.json")
NBATCHES = 50
BATCH = 32  # samples per rank per batch


def made(name: str, nranks: int, trials: Dict[str, List[float]], data_wait: Optional[float] = None) -> dict:
    with open(TEMPLATE, encoding="utf-8") as handle:
        doc = copy.deepcopy(json.load(handle))
    doc.update(
        run_name=name,
        nranks=nranks,
        verdict=None,
        decision=None,
        summary=None,
        steps_dir=None,
        IO_H2D=None,
        loader_startup=None,
        complete=True,
        exit_status=0,
    )
    doc["environment"].update(world_size=nranks, argv=["train.py"], host="fixture")
    samples = nranks * BATCH * NBATCHES
    for mode, values in trials.items():
        est = estimate(values)
        block = doc[mode]
        block.update(
            rates=None,
            avg_iter_throughput=list(values),
            trial_throughput=list(values),
            trial_time=[samples / v for v in values],
            trial_samples=[samples] * len(values),
            nbatches=[NBATCHES] * len(values),
            mean=est.mean,
            interval=est.half_width,
            n=est.n,
            steps=None,
            system=[None] * len(values),
        )
        block["warmup"] = {"trial_throughput": [], "trial_time": [], "trial_samples": [], "system": []}
        block.pop("ranks", None)
        if mode == "FULL":
            block["data_wait"] = (
                None
                if data_wait is None
                else {
                    "mean": data_wait,
                    "interval": 0.01,
                    "confidence": 0.95,
                    "trials": [data_wait] * len(values),
                    "labels": [f"FULL_{k + 1}" for k in range(len(values))],
                    "wait_median_s": [None] * len(values),
                    "step_median_s": [None] * len(values),
                }
            )
    return doc


def write(relative: str, doc: dict) -> None:
    path = os.path.join(HERE, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
        handle.write("\n")


def main() -> None:
    base = {"IO": [1000.0, 1010.0, 990.0], "SYNTHETIC": [2000.0, 2020.0, 1980.0], "FULL": [800.0, 802.0, 798.0]}
    write("compare/base.json", made("nightly 2026-11-21", 1, base, 0.30))
    write(
        "compare/regressed.json",
        made(
            "nightly 2026-11-22",
            1,
            {"IO": [1003.0, 995.0, 1008.0], "SYNTHETIC": [2010.0, 1990.0, 2004.0], "FULL": [700.0, 707.0, 693.0]},
            0.38,
        ),
    )
    write(
        "compare/slower.json",
        made(
            "nightly 2026-11-23",
            1,
            {"IO": [1001.0, 1009.0, 992.0], "SYNTHETIC": [2004.0, 2016.0, 1985.0], "FULL": [776.0, 778.0, 774.0]},
            0.31,
        ),
    )
    write(
        "compare/noise.json",
        made(
            "nightly 2026-11-24",
            1,
            {"IO": [1004.0, 985.0, 1002.0], "SYNTHETIC": [1995.0, 2025.0, 1990.0], "FULL": [801.0, 799.0, 803.0]},
            0.30,
        ),
    )
    for nranks, io, syn, full, wait in (
        (1, 400.0, 500.0, 100.0, 0.30),
        (2, 800.0, 980.0, 190.0, 0.35),
        (4, 1600.0, 1900.0, 360.0, 0.42),
    ):
        write(
            f"scaling/{nranks}rank.json",
            made(
                f"ddp {nranks} rank{'s' if nranks > 1 else ''}",
                nranks,
                {"IO": [io - 4, io, io + 4], "SYNTHETIC": [syn - 5, syn, syn + 5], "FULL": [full - 1, full, full + 1]},
                wait,
            ),
        )


if __name__ == "__main__":
    main()
