"""The run's ending stays the script's: its exit status and every exit handler, under the one-line edit and
under ``benchy run`` (a parent that waits for the script, passes signals on, and reports an incomplete run as
4); and a CI job's wrapper (``examples/ci_check.sh``) passes signals on too.

Every run here is a new interpreter (``tests/scripts/exit_handlers.py``), so that the script's first exit handler
is registered before benchy is imported, as in a user's script.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml
from helpers import ROOT, small_config

SCRIPT = ROOT / "tests" / "scripts" / "exit_handlers.py"
BOTH = ["after-start", "before-import"]  # handlers run last-registered first


def environment(tmp_path: Path, config: Optional[dict]) -> Dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    env.pop("BENCHY_CONFIG_FILE", None)
    if config is not None:
        (tmp_path / "benchy.yaml").write_text(yaml.safe_dump(config))
        env["BENCHY_CONFIG_FILE"] = str(tmp_path / "benchy.yaml")
    return env


def command(edit: str, *args: str) -> List[str]:
    script = [sys.executable, str(SCRIPT), *args]
    return [*script, "--enable_benchy"] if edit == "one-line" else [sys.executable, "-m", "benchy", "run", "--", *script]


def run(tmp_path: Path, edit: str, *args: str, config: Optional[dict] = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(edit, *args),
        cwd=tmp_path,
        env=environment(tmp_path, config),
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def handlers(tmp_path: Path) -> List[str]:
    path = tmp_path / "handlers.txt"
    return path.read_text().split() if path.exists() else []


def result(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "benchy_result.json").read_text())


# With the defaults, 2 epochs of 8 batches are far too few: the run is incomplete.
INCOMPLETE = [
    # (what the script does, its arguments, the status of the one-line edit's process, benchy run's status)
    ("returns", [], 0, 4),
    ("sys.exit(3)", ["--status", "3"], 3, 3),
    ("raises", ["--raise"], 1, 1),
]


@pytest.mark.parametrize("edit", ["one-line", "benchy run"])
@pytest.mark.parametrize("what, args, one_line, under_run", INCOMPLETE, ids=[c[0] for c in INCOMPLETE])
def test_an_incomplete_run_ends_as_the_script_ends_it(
    tmp_path: Path, edit: str, what: str, args: List[str], one_line: int, under_run: int
) -> None:
    proc = run(tmp_path, edit, *args)
    assert proc.returncode == (one_line if edit == "one-line" else under_run), proc.stdout[-3000:] + proc.stderr[-3000:]
    # Every exit handler ran, the one registered before benchy was imported too, and the script's own end.
    assert handlers(tmp_path) == BOTH, proc.stdout[-3000:]
    assert "USER::done" in proc.stdout
    doc = result(tmp_path)
    assert doc["complete"] is False and doc["exit_status"] == 4  # the status benchy advises for CI
    if what == "raises":
        assert proc.stderr.rstrip().endswith("RuntimeError: the script's own error")
    else:
        assert "incomplete run: the script's exit status and exit handlers stay its own" in proc.stdout


@pytest.mark.parametrize("edit", ["one-line", "benchy run"])
def test_a_complete_run_that_trains_on_ends_with_the_scripts_status(tmp_path: Path, edit: str) -> None:
    # (A complete run that ends with 0 ends with 0: the seeded runs of test_loops.py.)
    config = small_config(nbatches=4, ntrials=2, nwarmup=1, exit_after_tests=False)
    proc = run(tmp_path, edit, "--epochs", "30", "--status", "5", config=config)
    assert proc.returncode == 5, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert handlers(tmp_path) == BOTH and "USER::epoch 29" in proc.stdout
    assert result(tmp_path)["complete"] is True and result(tmp_path)["exit_status"] == 0


def test_a_complete_run_benchy_ends_runs_every_handler(tmp_path: Path) -> None:
    # exit_after_tests: true (the default): benchy ends the process at the schedule's end, inside the loop, as
    # it says at the start; every exit handler runs.
    proc = run(tmp_path, "one-line", "--epochs", "30", "--status", "5", config=small_config(nbatches=4, ntrials=2, nwarmup=1))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "At the schedule's end: the summary, then benchy ends the process (exit_after_tests: true)." in proc.stdout
    assert "USER::done" not in proc.stdout and handlers(tmp_path) == BOTH
    assert result(tmp_path)["complete"] is True and result(tmp_path)["exit_status"] == 0


def start(tmp_path: Path, argv: List[str]) -> subprocess.Popen:
    """``argv`` running, once the script said it is ready (its second epoch: the benchmark runs)."""
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=environment(tmp_path, None),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("USER::ready") or time.monotonic() > deadline:
            break
    assert seen and seen[-1].startswith("USER::ready"), "".join(seen)
    return proc


SIGNALS = [
    # (the signal sent to benchy run, the script's SIGTERM handler, benchy run's status, what was said, the exit
    # handlers that ran: as without benchy, none where the signal's default action ends the process)
    (signal.SIGTERM, True, 7, "USER::signal 15", BOTH),  # the script's own handler: its status, 7
    (signal.SIGTERM, False, -signal.SIGTERM, "SIGTERM received during trial", []),  # the default: ended by SIGTERM
    (signal.SIGINT, False, -signal.SIGINT, "KeyboardInterrupt", BOTH),  # not from a terminal: passed on
]


@pytest.mark.parametrize("signum, own, status, said, ran", SIGNALS, ids=["SIGTERM-handled", "SIGTERM", "SIGINT"])
def test_benchy_run_passes_signals_on_and_ends_as_the_script_ended(
    tmp_path: Path, signum: int, own: bool, status: int, said: str, ran: List[str]
) -> None:
    args = ["--epochs", "3", "--sleep", "60"] + (["--on_term"] if own else [])
    proc = start(tmp_path, command("benchy run", *args))
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, out[-3000:] + err[-3000:]
    assert said in out + err
    assert handlers(tmp_path) == ran


def test_the_ci_recipe_passes_a_signal_on_to_the_script(tmp_path: Path) -> None:
    env = dict(BENCHY=f"{sys.executable} -m benchy")
    argv = ["bash", str(ROOT / "examples" / "ci_check.sh"), "base.json", "--", sys.executable, str(SCRIPT)]
    proc = subprocess.Popen(
        [*argv, "--epochs", "3", "--sleep", "60", "--on_term"],
        cwd=tmp_path,
        env=dict(environment(tmp_path, None), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("USER::ready"):
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert "USER::signal 15" in out and proc.returncode == 7, out[-3000:] + err[-3000:]
    assert "ci: the benchmarked run ended with status 7" in err and handlers(tmp_path) == BOTH
