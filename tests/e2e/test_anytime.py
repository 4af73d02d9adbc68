"""A verdict from any run long enough to hold one: the default schedule's steps to a decided verdict, on loops whose
sides are sleeps of known length (``tests/scripts/ratio_loop.py``), under the one-line edit and ``benchy run``.

Sides 2x apart decide within 150 of the loop's steps, 1.3x apart (400 on a quiet machine: ``benchmarks/anytime.py``)
within the schedule or undecided under load, never the wrong side; a balanced loop (1.0x) is called
balanced or undecided, never a side. The steps counted are the JSON's ``schedule.decided_steps``: from the
benchmark's start to the end of the window that decided it (the trials that narrow the figures after it, to
``measuring_steps``, and the extras are not in them).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from helpers import ROOT, run_python, run_zero_edit

SCRIPT = ROOT / "tests" / "scripts" / "ratio_loop.py"


def run(tmp_path: Path, load_ms: float, step_ms: float, edit: str, *more: str) -> Tuple[dict, str]:
    """The script with benchy's defaults (64 batches an epoch, 40 epochs: longer than any schedule); its result."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.pop("BENCHY_CONFIG_FILE", None)
    args = ["--load_ms", str(load_ms), "--step_ms", str(step_ms), *more]
    if edit == "one-line":
        proc: subprocess.CompletedProcess = run_python(SCRIPT, [*args, "--enable_benchy"], tmp_path, env, 240)
    else:
        proc = run_zero_edit(str(SCRIPT), args, tmp_path, env, 240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((tmp_path / "benchy_result.json").read_text()), proc.stdout


CASES: List[Tuple[str, float, float, str, List[str], str, int]] = [
    # (id, loader ms a batch, step ms, edit, more arguments, the side, the most steps to decide)
    ("2x data", 8.0, 4.0, "one-line", [], "data-loading", 150),
    ("2x compute", 2.0, 4.0, "benchy run", [], "compute", 150),
    ("2x data, 2 workers", 16.0, 8.0, "benchy run", ["--workers", "2"], "data-loading", 150),
    ("1.3x data", 5.2, 4.0, "benchy run", [], "data-loading", 400),
    ("1.3x compute", 4.0, 5.2, "one-line", [], "compute", 400),
]


@pytest.mark.timing
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sides_apart_decide_within_their_steps(tmp_path: Path, case: Tuple[str, float, float, str, List[str], str, int]) -> None:
    _, load_ms, step_ms, edit, more, side, most = case
    doc, out = run(tmp_path, load_ms, step_ms, edit, *more)
    schedule = doc["schedule"]
    said = "\n".join(line for line in out.splitlines() if "SUMMARY::VERDICT" in line or "Schedule: done" in line)
    other = {"data-loading": "compute", "compute": "data-loading"}[side]
    # Never the wrong side, whatever the load: an oversleep ``o`` on each side's one sleep moves the ratio toward 1x
    # ((5.2 + o) / (4 + o)), never past it.
    assert doc["decision"]["outcome"] != other, said
    if most > 150 and schedule["stop"] != "decided":
        # 1.3x apart, the load's oversleeps (0.4 to 0.7 ms a sleep measured beside a load average of 5.5 on 2 cores)
        # bring the sides to about 1.2x, and its noise widens the intervals: undecided at the schedule's bound is
        # benchy's honest answer there. The steps it takes are measured by benchmarks/anytime.py (--ratios 1.3).
        assert doc["decision"]["outcome"] == "undecided", said
        return
    assert schedule["stop"] == "decided" and doc["decision"]["outcome"] == side, said
    # margin: 2x apart (1.8x with a 0.7 ms oversleep on each side) the verdict came in about 65 steps on a quiet
    # machine, 2.3x under the 150 asked; 1.3x apart the 400 is a quiet machine's figure, which the load's noise can
    # cross: asserted there only as the schedule's own bound (benchmarks/anytime.py measures it).
    assert schedule["decided_steps"] <= (most if most <= 150 else schedule["measuring_steps"]), (schedule["decided_steps"], said)
    assert schedule["decided_steps"] <= schedule["measuring_steps"]
    assert doc["complete"] is True and doc["exit_status"] == 0


@pytest.mark.timing
def test_a_balanced_loop_is_never_called_a_side(tmp_path: Path) -> None:
    # Both sides one 20 ms sleep (4 ms until now). margin: a side is called only where the whole interval of
    # SYNTHETIC/IO lies past 1 / 0.95; the loader's own code (8 items and their collation) took 0.25 to 0.5 ms of wall
    # time a batch beside a load average of 6 on 2 cores (0.1 to 0.17 ms of CPU): 12 % of a 4 ms side, a side called
    # by the load, 2.5 % of a 20 ms one; it fails only where that code takes over 1 ms a batch, steadily.
    doc, out = run(tmp_path, 20.0, 20.0, "one-line")
    assert doc["decision"]["outcome"] in ("balanced", "undecided"), [x for x in out.splitlines() if "VERDICT" in x]
    assert doc["complete"] is True  # the schedule ran to its end: the answer is what the evidence says


def test_a_short_run_gets_the_verdict_its_evidence_supports(tmp_path: Path) -> None:
    # One epoch of 90 batches, sides 2x apart: the script ends long before the schedule's bound, after the verdict
    # (about 65 steps on a quiet machine) and during the extras: the run is complete (the extras it did not reach
    # are named as not run), its verdict decided.
    doc, out = run(tmp_path, 8.0, 4.0, "one-line", "--epochs", "1", "--batches", "90")
    if doc["schedule"]["decided_steps"] is None:
        # A busy machine took more steps than the run had: said as such, with the steps a decision would likely take,
        # or, where the trials so far scatter too widely to say (a CI run: the suite's load), the schedule's bound.
        said = [x for x in out.splitlines() if "before the verdict was decided" in x or "SUMMARY::VERDICT" in x]
        assert doc["complete"] is False, said
        assert any("a decision would likely take about" in x or "too close to tell from the trials so far" in x for x in said), (
            said
        )
        return
    assert doc["complete"] is True and doc["decision"]["outcome"] == "data-loading"
    assert "USER::done" in out  # the script ended on its own, as it does without benchy
    not_run: Dict[str, str] = doc["schedule"]["extras_not_run"]
    assert all(why == "the script ended before it ran" for why in not_run.values()), not_run
    # Where the script ended while the figures were still narrowing, each figure wider than the precision says so, with
    # the steps that would likely settle it (or why none would).
    precision = [x for x in out.splitlines() if "SUMMARY::PRECISION" in x]
    for mode, wide in doc["schedule"]["imprecise"].items():
        line = next((x for x in precision if f"PRECISION {mode} " in x), None)
        assert line is not None, (mode, precision)
        assert ("more steps of the loop would likely bring it within +/-5 %" in line) == (wide["more_steps"] is not None)
