"""The loader shapes users bring, each run through the public surface: benchy never takes a batch the loop would have
had, and every step on which the loop does not get its own batch lies inside an entry of the JSON's timeline."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def received(stdout: str) -> List[List[int]]:
    return [json.loads(line.split(" ", 1)[1]) for line in stdout.splitlines() if line.startswith("RECEIVED ")]


def windows(doc: Dict[str, Any]) -> List[Tuple[str, Tuple[int, int], Tuple[int, int]]]:
    """Each timeline entry that ran in the loop: its trial and its first and last (epoch from 1, step from 0)."""
    found = []
    for entry in doc["timeline"]["trials"]:
        w = entry.get("window")
        if w is not None:
            found.append((entry["trial"], (w["start_epoch"], w["start_step"]), (w["end_epoch"], w["end_step"])))
    return found


def not_its_own(got: List[List[int]], plain: List[List[int]]) -> List[Tuple[int, int]]:
    """(epoch from 1, step) of every step whose batch is not the one the plain run got there."""
    return [(e + 1, s) for e, (a, b) in enumerate(zip(got, plain)) for s, (x, y) in enumerate(zip(a, b)) if x != y]


@pytest.mark.parametrize("shape", ["self", "stored"])
def test_a_loader_that_shares_one_iterator_loses_no_batch_to_benchy(run_script, shape: str) -> None:
    script = SCRIPTS / "shared_iterator.py"
    plain = run_script(None, "--plain", "--shape", shape, script=script)
    assert plain.returncode == 0, plain
    run = run_script({"global": {"exit_after_tests": False}}, "--shape", shape, script=script)
    assert run.returncode == 0, run
    got, want = received(run.stdout), received(plain.stdout)
    assert [len(e) for e in got] == [len(e) for e in want] == [120] * 4, [len(e) for e in got]
    # No IO trial of benchy's own: it would have taken the loop's batches; the output and the JSON say why.
    assert "IO trials: not run: the loader hands out one iterator that the loop reads too" in run.stdout
    doc = run.result()
    assert "hands out one iterator" in doc["io_skipped"] and doc["IO"] is None
    assert not any(e["mode"] == "IO" for e in doc["timeline"]["trials"])
    # The loop's own batches, in its order, wherever benchy did not hand it the cached one: inside a timeline window.
    spans = windows(doc)
    outside = [step for step in not_its_own(got, want) if not any(a <= step <= b for _, a, b in spans)]
    assert outside == [], (outside[:10], spans)
    assert doc["SYNTHETIC"]["n"] >= 2 and doc["FULL"]["n"] >= 2


def seeded_steps(stdout: str) -> List[List[str]]:
    """Each epoch's batches as ``seeded_train.py`` printed them (``#OBJECT INDICES``), in order."""
    found: Dict[int, List[str]] = {}
    for epoch, obj, indices in re.findall(r"^USER::batch (\d+) \d+ (#\d+) (\S+) \S+$", stdout, re.M):
        found.setdefault(int(epoch), []).append(f"{obj} {indices}")
    return [found[e] for e in sorted(found)]


@pytest.mark.parametrize("workers", [0, 2])
def test_every_step_of_a_default_run_without_its_own_batch_is_in_the_timeline(run_script, workers: int) -> None:
    # The defaults but windows of at most 16 batches (the schedule ends within the epochs, on a busy machine too),
    # training going on after it: the cached batch goes to SYNTHETIC windows, to the contention window's untimed
    # steps after its fork, and to the FLOPs' count; each lies in a timeline entry.
    script = SCRIPTS / "seeded_train.py"
    args = ("--workers", str(workers), "--samples", "480", "--epochs", "5")
    plain = run_script(None, *args, script=script)
    config = {"global": {"exit_after_tests": False}, **{m: {"nbatches": 16} for m in ("IO", "synthetic", "full")}}
    run = run_script(config, *args, "--enable_benchy", script=script)
    assert plain.returncode == 0 and run.returncode == 0, (plain, run)
    want, got = seeded_steps(plain.stdout), seeded_steps(run.stdout)
    assert [len(e) for e in got] == [len(e) for e in want] == [120] * 5
    doc = run.result()
    assert doc["complete"] is True and doc["diagnostics"]["trials"], doc["diagnostics"]
    spans = windows(doc)
    moved = [
        (e + 1, s)
        for e, (a, b) in enumerate(zip(got, want))
        for s, (x, y) in enumerate(zip(a, b))
        if x.split()[1] != y.split()[1]
    ]
    outside = [step for step in moved if not any(a <= step <= b for _, a, b in spans)]
    assert moved and outside == [], (outside[:10], spans)
    assert any(e["trial"] == "FLOPS_1" and e["window"] for e in doc["timeline"]["trials"])
