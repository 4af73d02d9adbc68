"""``benchy trace``: a stored run as a Chrome trace, checked against the trace-event format's rules and
against the run's own files (every trial on its mode's track, every step inside its trial, FULL's
wait split, the readings as counters, one process per rank, the bound on huge runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict

import numpy as np
import pytest
from helpers import ROOT, check_trace, children

from benchy.results import steps as step_files

RESULTS = Path(__file__).resolve().parent.parent / "data" / "results"


def trace(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchy", "trace", str(path), "-o", str(out), *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def tracks(text: str) -> Dict[int, Dict[str, int]]:
    """Process -> thread name -> tid."""
    out: Dict[int, Dict[str, int]] = {}
    for e in json.loads(text)["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            out.setdefault(e["pid"], {})[e["args"]["name"]] = e["tid"]
    return out


@pytest.mark.parametrize("stored", ["v3", "v4", "v5", "v6"])
def test_a_stored_run_becomes_a_trace_of_its_trials_steps_waits_and_readings(tmp_path: Path, stored: str) -> None:
    run_dir = RESULTS / stored
    out = tmp_path / "trace.json"
    proc = trace(run_dir / "benchy_result.json", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}: ") and "every step a slice" in proc.stdout
    assert "https://ui.perfetto.dev" in proc.stdout and "chrome://tracing" in proc.stdout
    text = out.read_text()
    slices = check_trace(text)
    doc = json.loads((run_dir / "benchy_result.json").read_text())
    files = step_files.load(str(run_dir / "benchy_result.steps"))
    threads = tracks(text)[1]
    assert set(threads) == {"IO", "SYNTHETIC", "FULL", "loader start-up"} | ({"loader stages"} if stored != "v3" else set())
    origin = min([e["started"] for e in doc["timeline"]["trials"]] + doc["loader_startup"]["started"])
    for entry in doc["timeline"]["trials"]:
        label, mode = entry["trial"], entry["mode"]
        name = f"{label} (warm-up)" if entry["warmup"] else label
        if entry["group"] == "stages":  # the stage trials, on their own track, not counted
            (trial,) = [s for s in slices[(1, threads["loader stages"])] if s.event["name"] == name]
            assert trial.event["args"]["counted"] is False and "window" not in trial.event["args"]
            continue
        on_track = slices[(1, threads[mode])]
        (trial,) = [s for s in on_track if s.event["name"] == name]
        assert trial.event["cat"] == ("warmup" if entry["warmup"] else "trial")
        assert trial.event["args"]["counted"] is (not entry["warmup"] and entry["group"] == "schedule")
        window = entry.get("window")  # schema 4: where a SYNTHETIC or FULL trial ran in the loop
        assert (window is not None) == (stored != "v3" and mode != "IO")
        if window:
            said = trial.event["args"]["window"]
            assert said.startswith(
                f"epoch {window['start_epoch']}, step {window['start_step']} to epoch "
                f"{window['end_epoch']}, step {window['end_step']}"
            )
            assert ("2 stretches" in said) is (window["segments"] == 2)
        assert abs(trial.start - round((entry["started"] - origin) * 1e9)) <= 1
        if not entry["steps_file"]:  # a side trial saved without its steps (the emulated-step check, PARTS_1)
            continue
        inside = children(on_track, trial)
        data = files[label]
        top = [s for s in inside if s.event["cat"] == "step"]
        if mode == "FULL":  # batch = step + data wait, as the file splits it
            batches = [s for s in top if s.event["name"] == "batch"]
            assert len(batches) == len(data) == entry["nbatches"]
            for k, batch in enumerate(batches):
                parts = children(inside, batch)
                assert [p.event["name"] for p in parts] == ["step", "data wait"]
                assert parts[0].start == batch.start and parts[1].end == batch.end
                assert abs(parts[1].dur - data["wait"][k] * 1e9) <= 1 + data["wait"][k] * 1e-6
                assert batch.event["args"] == {"i": k, "samples": int(data["samples"][k])}
        else:
            assert len(top) == len(data) == entry["nbatches"]
            assert [s.event["name"] for s in top] == ["fetch" if mode == "IO" else "step"] * len(top)
        # Steps are laid end to end from the trial's start, each as long as the file says.
        steps = sorted(
            (s for s in top if s.event["name"] == {"IO": "fetch", "SYNTHETIC": "step"}.get(mode, "batch")), key=lambda s: s.start
        )
        assert steps[0].start == trial.start
        assert all(a.end == b.start for a, b in zip(steps, steps[1:]))
        assert [s.dur for s in steps] == [round(x * 1e9) for x in data["seconds"]]
    # The loader's passes on their own track; the system readings as counters.
    startup = slices[(1, threads["loader start-up"])]
    assert len(startup) == len(doc["loader_startup"]["started"]) and startup[0].event["name"] == "start-up (pass 1)"
    counters = {e["name"] for e in json.loads(text)["traceEvents"] if e["ph"] == "C"}
    assert counters == {"CPU cores busy", "RSS (MB)"}  # no GPU on the machine that ran it
    other = json.loads(text)["otherData"]
    assert other["benchy_run"] == f"sample {stored}" and other["steps_per_slice"] == 1
    spans = [e for e in doc["timeline"]["trials"] if (e.get("window") or {}).get("segments", 1) > 1]
    assert stored == "v3" or spans  # the v4 run's windows cross epochs: the trace says how it draws them
    assert other["notes"] == (
        [
            "a trial whose window spans an epoch's end is drawn from its start with its counted "
            "steps end to end; the time between its stretches (the epoch's end, the next iter(), "
            "whatever the loop does there) is not in it"
        ]
        if spans
        else []
    )


def test_two_ranks_are_two_processes_each_from_its_own_files(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(RESULTS / "v3-2ranks", run_dir)
    out = tmp_path / "trace.json"
    proc = trace(run_dir / "benchy_result.json", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    slices = check_trace(text)
    meta = [e for e in json.loads(text)["traceEvents"] if e["name"] == "process_name"]
    assert [e["args"]["name"] for e in meta] == ["rank 0 (steps)", "rank 1 (steps)"]
    doc = json.loads((run_dir / "benchy_result.json").read_text())
    origin = min([min(e["rank_started"]) for e in doc["timeline"]["trials"]] + doc["loader_startup"]["started"])
    rank1 = step_files.load(str(run_dir / "benchy_result.steps" / "rank1"))
    full = tracks(text)[2]["FULL"]
    for entry in doc["timeline"]["trials"]:
        if entry["mode"] != "FULL" or entry["warmup"]:
            continue
        (trial,) = [s for s in slices[(2, full)] if s.event["name"] == entry["trial"]]
        assert abs(trial.start - round((entry["rank_started"][1] - origin) * 1e9)) <= 1
        batches = [s for s in children(slices[(2, full)], trial) if s.event["name"] == "batch"]
        assert [b.dur for b in batches] == [round(x * 1e9) for x in rank1[entry["trial"]]["seconds"]]
    # Without rank 1's files: its trials only, and the trace says whose steps it has.
    shutil.rmtree(run_dir / "benchy_result.steps" / "rank1")
    proc = trace(run_dir / "benchy_result.json", out)
    assert proc.returncode == 0 and "per-step slices are rank 0's only" in proc.stdout
    text = out.read_text()
    slices = check_trace(text)
    meta = [e for e in json.loads(text)["traceEvents"] if e["name"] == "process_name"]
    assert [e["args"]["name"] for e in meta] == ["rank 0 (steps)", "rank 1 (trials only)"]
    assert all(s.event["cat"] in ("trial", "warmup") for key, items in slices.items() if key[0] == 2 for s in items)
    assert "rank 0's only" in json.loads(text)["otherData"]["notes"][0]


def test_a_run_of_hundreds_of_thousands_of_steps_is_drawn_in_blocks_within_the_bound(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(RESULTS / "v3", run_dir)
    n = 300_000
    big = np.zeros(n, dtype=step_files.WAIT_DTYPE)
    big["seconds"], big["samples"], big["wait"] = 0.001, 8, 0.0004
    big["seconds"][12_345] = 0.5  # one stall: the block that holds it shows it as its slowest step
    np.save(run_dir / "benchy_result.steps" / "FULL_3.npy", big)  # the run's last trial: nothing after it
    out = tmp_path / "trace.json"
    proc = trace(run_dir / "benchy_result.json", out)
    assert proc.returncode == 0, proc.stderr
    assert "5 steps a slice (over --max-events)" in proc.stdout, proc.stdout
    assert out.stat().st_size < 40e6
    text = out.read_text()
    slices = check_trace(text)
    full = tracks(text)[1]["FULL"]
    (trial,) = [s for s in slices[(1, full)] if s.event["name"] == "FULL_3"]
    blocks = [s for s in children(slices[(1, full)], trial) if s.event["cat"] == "steps"]
    assert len(blocks) == n // 5 and blocks[0].event["name"] == "batches 0 to 4"
    assert sum(b.event["args"]["steps"] for b in blocks) == n
    assert sum(b.event["args"]["samples"] for b in blocks) == 8 * n
    stall = [b for b in blocks if float(b.event["args"]["slowest_ms"]) == 500.0]
    assert len(stall) == 1 and stall[0].event["args"]["first"] == 12_345 // 5 * 5
    assert float(blocks[0].event["args"]["data_wait_share"]) == pytest.approx(0.4, abs=1e-3)
    other = json.loads(text)["otherData"]
    assert other["steps_per_slice"] == 5 and "block of 5 consecutive steps" in other["notes"][0]
    # A smaller bound on request: larger blocks, the same total.
    proc = trace(run_dir / "benchy_result.json", out, "--max-events", "10000")
    assert proc.returncode == 0 and json.loads(out.read_text())["otherData"]["steps_per_slice"] > 5


def test_runs_without_a_timeline_are_refused_with_the_reason(tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    proc = trace(RESULTS / "v2" / "benchy_result.json", out)
    assert proc.returncode == 2 and not out.exists()
    assert "has no timeline: it was written with schema version 2, before benchy recorded when each trial started" in proc.stderr
    proc = trace(tmp_path / "missing.json", out)
    assert proc.returncode == 2 and "missing.json: cannot read it" in proc.stderr
