"""A GPU-shaped loop (``tests/scripts/bursty_train.py``: 8 workers in step handing over their batches in bursts, a
2 ms step) under ``benchy run`` with the defaults, against the same loop unwrapped and its loader alone, run before
and after it in the same test.

On such a loop short windows caught a burst half-way: FULL read -28 % to +23 % with intervals to +/-257 %. IO trials
and FULL windows are now whole rounds of the workers, and the lead-in before FULL meets the loop's own pace; the
bounds here are generous (a shared 2-core machine runs 8 workers and the suite beside them), the real figures are
``benchmarks/fidelity.py``'s.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Dict

import pytest
from helpers import ROOT, run_python, run_zero_edit

SCRIPT = ROOT / "tests" / "scripts" / "bursty_train.py"
# % against the nearer of the truths before and after. margin: not measured beside a spinning core for this loop (8
# workers' CPU on 2 cores); sleep-based loops read up to 9.9 % from the plain loops around them beside a load average
# of 5.5 (tests/e2e/test_accuracy.py), past the 8 % once asked. 20 % still fails on the -28 % and +23 % of windows
# that caught a burst half-way, the bug this test was written for.
BOUND = 20.0


def truth(tmp_path: Path, env: Dict[str, str], mode: str) -> float:
    proc = run_python(SCRIPT, ["--mode", mode, "--epochs", "6"], tmp_path, env, 120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r"USER::STEADY ([0-9.]+)", proc.stdout)
    assert found is not None, proc.stdout[-2000:]
    return float(found.group(1))


@pytest.mark.timing
def test_a_gpu_shaped_loop_reads_its_own_rates_with_the_defaults(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.pop("BENCHY_CONFIG_FILE", None)
    before = {"FULL": truth(tmp_path, env, "train"), "IO": truth(tmp_path, env, "loader")}
    proc = run_zero_edit(str(SCRIPT), ["--epochs", "60"], tmp_path, env, 240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = {"FULL": truth(tmp_path, env, "train"), "IO": truth(tmp_path, env, "loader")}
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    # margin: the 8 workers make a batch in 16 sleeps of 2 ms, 4 ms a batch for the pool, against a 2 ms step: an
    # oversleep ``o`` on each sleep reads (4 + 2 o) / (2 + o), 2x whatever ``o`` is.
    assert doc["complete"] is True and doc["decision"]["outcome"] == "data-loading"
    schedule = doc["schedule"]
    assert schedule["loader_round"] == 8 and schedule["decided_steps"] <= schedule["measuring_steps"]
    for mode in ("IO", "FULL"):
        assert all(n % 8 == 0 for n in doc[mode]["nbatches"]), doc[mode]["nbatches"]  # whole rounds
    errors = {m: min((100 * (doc[m]["mean"] / t[m] - 1) for t in (before, after)), key=abs) for m in ("IO", "FULL")}
    said = [line for line in proc.stdout.splitlines() if "SUMMARY::" in line and "average trial throughput" in line]
    precision = [line for line in proc.stdout.splitlines() if "SUMMARY::PRECISION" in line]
    print(f"error % against the unwrapped loop and its loader alone: {errors}; {said}; {precision}")
    assert all(abs(e) <= BOUND for e in errors.values()), (errors, before, after, said)
    # No loop is faster than its loader: FULL is never above IO beyond what their intervals allow.
    assert doc["FULL"]["mean"] - doc["FULL"]["interval"] <= doc["IO"]["mean"] + doc["IO"]["interval"], said
    # Each figure within the figure precision (+/-5 % of its mean), or a PRECISION line that says it is not (and why).
    assert schedule["figure_precision"] == 0.05
    for mode in ("IO", "SYNTHETIC", "FULL"):
        wide = doc[mode]["interval"] > 0.05 * doc[mode]["mean"]
        assert wide == (mode in schedule["imprecise"]) == any(f"PRECISION {mode} " in x for x in precision), (mode, said)
