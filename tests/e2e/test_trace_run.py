"""A timeline as a user gets one: ``profiler: torch`` on a real training script (one extra FULL warm-up
profiled, never counted; the model's ops inside benchy's step ranges), then ``benchy trace`` of the
same run; and both on a two-rank torchrun."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

from helpers import ROOT, check_trace, small_config

SCRIPT = ROOT / "tests" / "scripts" / "compute_train.py"
DIST_SCRIPT = ROOT / "tests" / "scripts" / "dist_script.py"


def ranges(events: List[Dict[str, Any]], prefix: str) -> List[Dict[str, Any]]:
    return sorted(
        (e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith(prefix)), key=lambda e: float(e["ts"])
    )


def inside(outer: Dict[str, Any], inner: Dict[str, Any]) -> bool:
    # torch writes microseconds with three decimals: compared in nanoseconds.
    a, b = round(float(outer["ts"]) * 1000), round(float(inner["ts"]) * 1000)
    return a <= b and b + round(float(inner["dur"]) * 1000) <= a + round(float(outer["dur"]) * 1000)


def benchy_trace(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchy", "trace", "benchy_result.json", "-o", "trace.json"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_profiler_torch_profiles_an_extra_full_warmup_and_the_trace_holds_the_model_inside_steps(run_script) -> None:
    run = run_script(small_config(nbatches=10, ntrials=2, nwarmup=1, profiler="torch"), script=SCRIPT)
    assert run.returncode == 0, run
    assert "FULL 1 warm-up + 1 profiled warm-up + 2 x 10 batches" in run.stdout
    path = run.workdir / "benchy_result.profile" / "rank0.FULL_WARMUP_2.pt.trace.json"
    said = [x for x in run.stdout.splitlines() if x.startswith("BENCHY::INFO::Message: torch.profiler (rank 0)")]
    assert said == [
        f"BENCHY::INFO::Message: torch.profiler (rank 0): FULL_WARMUP_2 profiled (CPU; steps 2 to 6): {path}; an extra "
        f"warm-up, not counted. Open it in https://ui.perfetto.dev, chrome://tracing or TensorBoard's "
        f"profiler plugin."
    ], said
    doc = run.result()
    # The profiled warm-up is a warm-up: the counted FULL trials are the two asked for, whole.
    assert doc["FULL"]["n"] == 2 and doc["FULL"]["nbatches"] == [10, 10]
    assert len(doc["FULL"]["warmup"]["trial_throughput"]) == 2
    assert [e["trial"] for e in doc["timeline"]["trials"] if e["profiled"]] == ["FULL_WARMUP_2"]
    profiler = doc["profiler"]
    assert profiler["profiler"] == "torch" and profiler["capture"] == ["FULL"]
    assert profiler["torch_traces"] == ["rank0.FULL_WARMUP_2.pt.trace.json"]
    assert profiler["torch_trace_dir"] == "benchy_result.profile"
    assert 0 < profiler["torch_trace_write_s"]["FULL_WARMUP_2"] < 30  # margin: a trace of 5 steps, well under 1 s
    # The torch trace: steps 2 to 6 (the default 5 steps after the first two), each followed by the
    # fetch of the next batch, inside one range named after the trial; the model's matmuls in the steps.
    events = json.loads(path.read_text())["traceEvents"]
    (span,) = ranges(events, "benchy: FULL_WARMUP_2")
    assert span["name"] == "benchy: FULL_WARMUP_2 (steps 2 to 6 profiled)"
    steps = ranges(events, "benchy: step ")
    fetches = ranges(events, "benchy: fetch ")
    assert [e["name"] for e in steps] == [f"benchy: step {k}" for k in range(2, 7)]
    assert [e["name"] for e in fetches] == [f"benchy: fetch {k}" for k in range(3, 8)]
    assert all(inside(span, e) for e in steps + fetches)
    matmuls = [e for e in events if e.get("ph") == "X" and e.get("name") in ("aten::addmm", "aten::mm")]
    assert matmuls, sorted({e.get("name") for e in events})[:40]
    # Every matmul of the profiled span runs inside a step (forward and backward), none in a fetch.
    assert all(any(inside(s, m) for s in steps) for m in matmuls if inside(span, m))
    assert sum(any(inside(s, m) for m in matmuls) for s in steps) == 5  # each step has its matmuls
    # The same run as benchy's own trace: the profiled warm-up is marked on the FULL track.
    proc = benchy_trace(run.workdir)
    assert proc.returncode == 0, proc.stderr
    slices = check_trace((run.workdir / "trace.json").read_text())
    names = {s.event["name"] for items in slices.values() for s in items}
    assert {"FULL_WARMUP_1 (warm-up)", "FULL_WARMUP_2 (profiled warm-up)", "FULL_1", "FULL_2"} <= names


def test_two_ranks_under_torchrun_each_profile_and_save_their_steps(tmp_path: Path) -> None:
    from test_distributed import torchrun

    proc = torchrun(tmp_path, "--fetch_ms", "2", "--step_ms", "3", profiler="torch", profiler_mode="all", save_steps="all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    folder = tmp_path / "benchy_result.profile"
    assert sorted(p.name for p in folder.iterdir()) == ["rank0.FULL_WARMUP_2.pt.trace.json", "rank1.FULL_WARMUP_2.pt.trace.json"]
    for rank in (0, 1):
        events = json.loads((folder / f"rank{rank}.FULL_WARMUP_2.pt.trace.json").read_text())["traceEvents"]
        steps = ranges(events, "benchy: step ")
        assert len(steps) == 5
        # The step's all-reduce (gloo) runs inside benchy's step ranges.
        reduces = [e for e in events if e.get("ph") == "X" and "all_reduce" in str(e.get("name"))]
        assert reduces and all(
            any(inside(s, r) for s in steps)
            for r in reduces
            if float(r["ts"]) >= float(steps[0]["ts"]) and float(r["ts"]) < float(steps[-1]["ts"]) + float(steps[-1]["dur"])
        )
    assert (tmp_path / "benchy_result.steps" / "rank1" / "FULL_1.npy").exists()
    out = benchy_trace(tmp_path)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "trace.json").read_text()
    check_trace(text)
    meta = [e["args"]["name"] for e in json.loads(text)["traceEvents"] if e["name"] == "process_name"]
    assert meta == ["rank 0 (steps)", "rank 1 (steps)"]


def test_every_trace_holds_the_steps_its_range_names_where_windows_span_short_epochs(run_script) -> None:
    # Epochs of 6 batches and windows of 10 steps: every window spans epochs, so the profiled warm-ups' stretches
    # end at epochs' ends. Each trace's range names the steps it holds, and holds exactly those.
    import re

    config = small_config(nbatches=10, ntrials=1, nwarmup=1, profiler="torch", profiler_capture=["SYNTHETIC", "FULL"])
    run = run_script(config, "--samples", "24", "--batch_size", "4", "--epochs", "30")
    assert run.returncode == 0, run
    folder = run.workdir / "benchy_result.profile"
    traces = sorted(p.name for p in folder.iterdir())
    assert traces == ["rank0.FULL_WARMUP_2.pt.trace.json", "rank0.SYNTHETIC_WARMUP_2.pt.trace.json"], traces
    for name in traces:
        label = name.split(".")[1]
        events = json.loads((folder / name).read_text())["traceEvents"]
        (span,) = ranges(events, f"benchy: {label} (")
        first, last = map(int, re.fullmatch(rf"benchy: {label} \(steps (\d+) to (\d+) profiled\)", span["name"]).groups())
        held = [int(e["name"].rsplit(" ", 1)[1]) for e in ranges(events, "benchy: step ") if inside(span, e)]
        assert held == list(range(first, last + 1)), (name, span["name"], held)
        said = f"{label} profiled (CPU; steps {first} to {last}): {folder / name}"
        assert said in run.stdout, run
