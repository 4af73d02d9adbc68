"""`benchy run` / `benchy sweep`: an unmodified script (tests/scripts/plain_train.py, which never
imports benchy) with its training DataLoader benchmarked: one process (the command replaced by
the script's interpreter, and `python -m benchy run script.py` in-process), two ranks under
torchrun, a train and a val loader, argv / __main__ / isinstance / subclasses / exit status as
without benchy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
import yaml
from helpers import ROOT, free_port, small_config

SCRIPT = ROOT / "tests" / "scripts" / "plain_train.py"
TRAIN_LINE = next(k for k, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "train = cls(" in line)
VAL_LINE = next(k for k, line in enumerate(SCRIPT.read_text().splitlines(), 1) if "val = dataloader_module" in line)
CHOSEN = re.compile(
    r"^BENCHY::INFO::Message: benchy run: benchmarking the DataLoader created at (.+?):(\d+) \((.+?)\); "
    r"(\d+) other DataLoader\(s\) created so far stay plain\.$",
    re.M,
)
EPOCH = re.compile(r"^USER::epoch (\d+) steps (\d+) val (\d+)$", re.M)


def run(tmp_path: Path, command: List[str], config: dict, timeout: float = 240, **extra: str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "benchy.yaml"
    cfg.write_text(yaml.safe_dump(config))
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TMPDIR=str(tmp_path), **extra)
    env.pop("BENCHY_CONFIG_FILE", None)
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def config(**global_) -> dict:
    return small_config(nbatches=6, ntrials=2, nwarmup=1, exit_after_tests=False, **global_)


def test_run_replaces_the_command_and_benchmarks_the_training_loader(tmp_path: Path) -> None:
    args = [str(SCRIPT), "--exit_status", "3", "--peek"]
    proc = run(
        tmp_path, [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml", "--", sys.executable, *args], config()
    )
    # The script's own exit status, argv as `python plain_train.py ...` gives it.
    assert proc.returncode == 3, proc.stderr
    assert f"USER::argv {[str(SCRIPT), '--exit_status', '3', '--peek']}" in proc.stdout
    plain = subprocess.run([sys.executable, *args, "--epochs", "1"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 3 and plain.stdout.splitlines()[0] == f"USER::argv {[*args, '--epochs', '1']}"
    # The peek at the val loader (one batch) chose nothing; the train loader's first pass did.
    ((where, line, why, others),) = CHOSEN.findall(proc.stdout)
    assert where == str(SCRIPT) and int(line) == TRAIN_LINE and others == "2"
    assert why == (
        "the first whose iterator ran a loop: the loop asked its plain pass for more than 3 batches; the "
        "benchmark starts there, within that epoch"
    )
    epochs = [(int(e), int(s), int(v)) for e, s, v in EPOCH.findall(proc.stdout)]
    # Every epoch is the train loader's own 12 batches, during the schedule and after it; val untouched.
    assert [s for _, s, _ in epochs] == [12] * 12
    assert all(v == 16 for _, _, v in epochs) and "USER::done" in proc.stdout
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["complete"] is True and doc["loader"] == f"DataLoader created at {SCRIPT}:{TRAIN_LINE}"
    assert all(doc[m]["n"] == 2 for m in ("IO", "SYNTHETIC", "FULL"))


CHILD = """
import sys
print("USER::child started with", [m for m in ("torch", "benchy") if m in sys.modules])
from torch.utils.data import DataLoader
replaced = DataLoader is sys.modules["benchy.integrations.runner"].RunnerDataLoader
print("USER::child imported", DataLoader.__module__, DataLoader.__name__, "benchy's" if replaced else "torch's")
"""


def test_the_parent_that_waits_for_a_command_does_not_import_torch(tmp_path: Path) -> None:
    # `benchy run -- COMMAND` only waits for the command: without torch it starts in a fifth of a second and holds
    # some 40 MB, not 1.5 s and 230 MB (its imports are listed by -X importtime; the command's are not). So does
    # each Python process the command starts, until it imports torch: a launcher's agents, a shell script's helpers
    # and Ray's services start as they would without benchy. The import of torch ends with benchy's DataLoader in
    # place, before the code that asked for it runs on.
    child = [sys.executable, "-c", CHILD]
    proc = run(tmp_path, [sys.executable, "-X", "importtime", "-m", "benchy", "run", "--", *child], config())
    assert "USER::child started with []" in proc.stdout, proc.stdout + proc.stderr
    assert "USER::child imported torch.utils.data.dataloader DataLoader benchy's" in proc.stdout, proc.stderr
    imported = [line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "benchy.cli.child" in imported, imported  # the parent's imports were read
    assert not [name for name in imported if name == "torch" or name.startswith("torch.")], imported
    assert proc.returncode == 4  # nothing was benchmarked: the command made no DataLoader


def test_python_m_benchy_run_in_process_with_a_chosen_loader_and_a_subclass(tmp_path: Path) -> None:
    proc = run(
        tmp_path,
        [
            sys.executable,
            "-m",
            "benchy",
            "run",
            "--loader",
            "2",
            "--config",
            "benchy.yaml",
            str(SCRIPT),
            "--subclass",
            "--epochs",
            "4",
        ],
        small_config(nbatches=3, ntrials=2, nwarmup=1, exit_after_tests=False),
    )
    # 4 passes of the 4-batch val loader do not finish the schedule: an incomplete run, which benchy run (here
    # the process itself, the script run in it) ends with status 4, said so.
    assert proc.returncode == 4, proc.stderr
    assert "Run it for " in proc.stdout and "incomplete run: the script's exit status and exit handlers" in proc.stdout
    assert "USER::MyLoader of 48 samples" in proc.stdout  # the script's subclass works as before
    ((where, line, why, _),) = CHOSEN.findall(proc.stdout)
    assert where == str(SCRIPT) and int(line) == VAL_LINE and why == "--loader 2"
    epochs = EPOCH.findall(proc.stdout)
    # The train loader stays plain (12 batches every epoch); the val loader, chosen at its first
    # iter() (epoch 0's validation), runs the windows in its own passes of 4 batches, each whole.
    assert all(s == "12" for _, s, _ in epochs)
    assert [v for _, _, v in epochs] == ["16"] * 4
    assert "BENCHY::SUMMARY::FULL average trial throughput: " in proc.stdout


def test_the_scripts_own_error_and_exit_status_come_through(tmp_path: Path) -> None:
    proc = run(
        tmp_path,
        [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml", str(SCRIPT), "--raise_at_end", "--epochs", "8"],
        config(),
    )
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith("RuntimeError: the script's own error")
    assert "BENCHY::SUMMARY::IO average trial throughput" in proc.stdout  # measured before the error


@pytest.mark.parametrize("form", ["torchrun -m benchy run", "benchy run -- torchrun"])
def test_two_ranks_under_torchrun(tmp_path: Path, form: str) -> None:
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
    ]
    runner = [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml"]
    script = [str(SCRIPT), "--ddp", "--epochs", "16"]
    command = (
        [*launcher, "-m", "benchy", "run", "--config", "benchy.yaml", *script]
        if form.startswith("torchrun")
        else [*runner, "--", *launcher, *script]
    )
    proc = run(tmp_path, command, config(), timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(CHOSEN.findall(proc.stdout)) == 1  # rank 0 says which loader
    assert proc.stdout.count("BENCHY::SUMMARY::FULL average trial throughput") == 1
    assert proc.stdout.count("USER::done") == 2
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["nranks"] == 2 and doc["complete"] is True and int(doc["loader"].rsplit(":", 1)[1]) == TRAIN_LINE


def test_benchy_sweep_runs_the_script_with_a_worker_sweep(tmp_path: Path) -> None:
    # The environment's own sitecustomize (shadowed by benchy's on PYTHONPATH) still runs.
    own = tmp_path / "site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("print('USER::own sitecustomize', flush=True)\n")
    proc = run(
        tmp_path,
        [
            sys.executable,
            "-m",
            "benchy",
            "sweep",
            "--config",
            "benchy.yaml",
            "--",
            sys.executable,
            str(SCRIPT),
            "--fetch_ms",
            "2",
            "--epochs",
            "8",
        ],
        config(),
        PYTHONPATH=str(own),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("USER::own sitecustomize\n")
    assert "BENCHY::SUMMARY::SWEEP best num_workers=" in proc.stdout
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    cores = len(os.sched_getaffinity(0))
    from benchy.core.sweep import auto_workers

    assert [s["settings"]["num_workers"] for s in doc["sweep"]["settings"]] == auto_workers(cores)
    assert all(s["error"] is None and s["n"] == 2 for s in doc["sweep"]["settings"])


def test_bad_runner_arguments_are_named(tmp_path: Path) -> None:
    proc = run(tmp_path, [sys.executable, "-m", "benchy", "run", "--loader", "0", str(SCRIPT)], config())
    assert proc.returncode == 2
    assert (
        "benchy run: --loader: got '0'; expected 'first' (the first DataLoader whose iterator runs a loop) or N >= 1"
        in proc.stderr
    )
    proc = run(tmp_path, [sys.executable, "-m", "benchy", "run"], config())
    assert proc.returncode == 2 and "benchy run: no command" in proc.stderr
    proc = run(tmp_path, [sys.executable, "-m", "benchy", "run", "missing.py"], config())
    assert proc.returncode == 2 and proc.stderr == "benchy run: missing.py: no such script\n"
    (tmp_path / "bad.yaml").write_text("IO: {nbatches: 0}\n")
    proc = run(
        tmp_path, [sys.executable, "-m", "benchy", "run", "--config", "bad.yaml", "--", sys.executable, str(SCRIPT)], config()
    )
    assert proc.returncode == 2 and "IO.nbatches: got 0 (int); expected an integer from 1" in proc.stderr
    assert "USER::argv" not in proc.stdout  # the script did not start
    proc = run(tmp_path, [sys.executable, "-m", "benchy", "run", "--", "no-such-program-xyz"], config())
    assert proc.returncode == 2 and "benchy run: cannot run no-such-program-xyz" in proc.stderr


def test_spawned_loader_workers_skip_the_patch(tmp_path: Path) -> None:
    script = ROOT / "tests" / "scripts" / "spawn_train.py"
    cfg = {
        "global": {"exit_after_tests": False, "report_freq": 0},
        "IO": {"run_benchmark": False},
        "synthetic": {"run_benchmark": False},
        "full": {"nbatches": 4, "ntrials": 1, "nwarmup": 0},
    }
    proc = run(
        tmp_path, [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml", "--", sys.executable, str(script)], cfg
    )
    assert proc.returncode == 0, proc.stderr
    workers = re.findall(r"^USER::worker \d benchy loaded: (\w+)$", proc.stdout, re.M)
    assert workers == ["False"] * 4  # two workers in each of two epochs, none importing benchy
    assert "USER::main benchy loaded: True" in proc.stdout and "BENCHY::FULL_1::Trial Throughput" in proc.stdout


def test_a_loader_peeked_before_every_epoch_is_still_chosen(tmp_path: Path) -> None:
    # Each epoch starts with next(iter(train)): the first plain pass is a one-batch peek, the loop is the second.
    proc = run(
        tmp_path,
        [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml", str(SCRIPT), "--peek_each_epoch", "--epochs", "14"],
        config(),
    )
    assert proc.returncode == 0, proc.stderr
    chosen = CHOSEN.search(proc.stdout)
    assert chosen is not None and int(chosen.group(2)) == TRAIN_LINE, proc.stdout
    assert chosen.group(3).startswith("the first whose iterator ran a loop: the loop asked its plain pass for more")
    assert "BENCHY::SUMMARY::FULL average trial throughput" in proc.stdout and "nothing was benchmarked" not in proc.stdout


def test_nothing_chosen_is_said_at_exit(tmp_path: Path) -> None:
    # No epoch: no loop asks a loader for batches, so nothing is benchmarked.
    proc = run(
        tmp_path, [sys.executable, "-m", "benchy", "run", "--config", "benchy.yaml", str(SCRIPT), "--epochs", "0"], config()
    )
    assert proc.returncode == 4 and "USER::done" in proc.stdout  # nothing measured: a failing status for CI
    message = (
        "BENCHY::WARNING::Message: benchy run: nothing was benchmarked: no DataLoader's plain pass was asked "
        "for more than 3 batches (no training loop ran, or it ran over a loader that benchy run does not see). "
        "Pick one with --loader N (the N-th DataLoader created; 3 were). benchy run reports status 4, as for an "
        "incomplete run, where the script ends with 0."
    )
    assert message in proc.stdout and message in proc.stderr
    proc = run(
        tmp_path,
        [sys.executable, "-m", "benchy", "run", "--loader", "7", "--config", "benchy.yaml", str(SCRIPT), "--epochs", "2"],
        config(),
    )
    assert proc.returncode == 4
    assert "nothing was benchmarked: the script created 3 DataLoader(s), fewer than --loader 7" in proc.stdout
