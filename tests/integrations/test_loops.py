"""The loops people use, with the default configuration, zero edit (``benchy run``) and one-line edit alike.

Each runs for real in a subprocess (small models, generated data, the CPU) and must give the three
summary lines with numbers, a verdict, no lost trial and the exit status of a complete run, with the
loop's epochs of the loader's own length. Then a seeded run, batch by batch against the same run
without benchy (item 2 of the issue that made benchy's trials windows of steps).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import yaml
from helpers import ROOT, SUMMARY_RE, run_python, run_zero_edit

SCRIPTS = ROOT / "tests" / "scripts"
VERDICT = re.compile(r"BENCHY::SUMMARY::VERDICT (data loading|compute) limits training", re.M)
ANY_VERDICT = re.compile(r"BENCHY::SUMMARY::VERDICT \S", re.M)


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess, workdir: Path, seconds: float) -> None:
        self.proc, self.workdir, self.seconds = proc, workdir, seconds
        self.returncode, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr

    def doc(self) -> dict:
        return json.loads((self.workdir / "benchy_result.json").read_text())

    def __repr__(self) -> str:
        return f"Ran(rc={self.returncode})\n--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-4000:]}"


def launch(
    tmp_path: Path,
    script: str,
    *args: str,
    zero_edit: bool = True,
    config: Optional[dict] = None,
    timeout: float = 300,
    own_tmpdir: bool = True,
) -> Ran:
    """``benchy run -- python SCRIPT ARGS`` (zero edit) or ``python SCRIPT ARGS --enable_benchy`` (the
    one-line edit), in ``tmp_path``, with the defaults unless ``config`` says otherwise; ``own_tmpdir``: its
    temporary files there too (not for Ray, whose socket paths under it would pass the length Unix allows)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    if own_tmpdir:
        env["TMPDIR"] = str(tmp_path)
    env.pop("BENCHY_CONFIG_FILE", None)
    if config is not None:
        (tmp_path / "benchy.yaml").write_text(yaml.safe_dump(config))
        env["BENCHY_CONFIG_FILE"] = str(tmp_path / "benchy.yaml")
    path = str(SCRIPTS / script)
    command = (
        [sys.executable, "-m", "benchy", "run", "--", sys.executable, path, *args]
        if zero_edit
        else [sys.executable, path, *args, "--enable_benchy"]
    )
    start = time.monotonic()
    if zero_edit and script in FORKED:
        proc = run_zero_edit(path, list(args), tmp_path, env, timeout)
    elif zero_edit:  # the frameworks' scripts: through the real command, in new interpreters
        proc = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    else:
        proc = run_python(path, [*args, "--enable_benchy"], tmp_path, env, timeout)
    return Ran(proc, tmp_path, time.monotonic() - start)


# Plain PyTorch scripts: their zero-edit runs fork from the suite's server (``helpers.run_zero_edit``); the
# frameworks' (Lightning, Accelerate, the Hugging Face Trainer, Ray) run through the real command.
FORKED = ("loops.py", "seeded_train.py")

SUMMARY_ANYWHERE = re.compile(SUMMARY_RE.pattern.lstrip("^"), re.M)  # Ray prefixes its workers' lines


def complete(ran: Ran, status: int = 0, decided: bool = True) -> dict:
    """The run gave the three lines with numbers and a verdict (``decided``: data loading or compute), lost no
    trial, and ended as a complete run."""
    assert ran.returncode == status, ran
    found = {mode: float(mean) for mode, mean, _ in SUMMARY_ANYWHERE.findall(ran.stdout)}
    assert set(found) == {"IO", "SYNTHETIC", "FULL"} and all(v > 0 for v in found.values()), ran
    assert (VERDICT if decided else ANY_VERDICT).search(ran.stdout), ran
    doc = ran.doc()
    assert doc["complete"] is True and doc["interrupted"] == [], ran
    assert all(doc[m]["n"] == 3 for m in ("IO", "SYNTHETIC", "FULL")), ran  # the defaults: 3 trials a mode
    return doc


def epochs(stdout: str) -> List[Tuple[int, int]]:
    """(steps, len) of each epoch a script said (``USER::epoch E steps S len L``)."""
    return [(int(s), int(n)) for s, n in re.findall(r"USER::(?:rank 0 )?epoch \d+ steps (\d+) len (-?\d+)", stdout)]


def distinct(stdout: str) -> List[int]:
    """The samples each epoch saw, each once (``loops.py``)."""
    return [int(d) for d in re.findall(r"USER::epoch \d+ steps \d+ len -?\d+ distinct (\d+)", stdout)]


# --- plain PyTorch loops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("zero_edit", [True, False], ids=["benchy run", "one-line"])
@pytest.mark.parametrize(
    "pattern, args",
    [
        ("for", ["--epochs", "40"]),
        ("steps", ["--max_steps", "900"]),  # for step in range(max_steps): next(it), it cycling the loader
        # With 2 workers a batch crosses processes (about a millisecond on a busy machine): a 10 ms step keeps
        # compute the clear limit there too.
        ("infinite", ["--max_steps", "900", "--workers", "2", "--step_ms", "10"]),  # over an endless IterableDataset
        ("break", ["--take", "7", "--epochs", "200"]),  # breaks out after 7 of 24 batches every epoch
        ("iterable", ["--workers", "2", "--epochs", "60", "--step_ms", "10"]),  # across 2 workers, no len()
        ("persistent", ["--workers", "2", "--epochs", "40", "--step_ms", "10"]),
        ("for", ["--samples", "24", "--epochs", "200"]),  # an epoch of 6 batches, shorter than a trial of 50
    ],
    ids=["for", "steps-cycle", "infinite", "break", "iterable", "persistent", "short-epoch"],
)
def test_plain_loops(tmp_path: Path, pattern: str, args: List[str], zero_edit: bool) -> None:
    # A 4 ms step (10 ms with workers) against a loader of microseconds a batch: compute limits training, clearly.
    ran = launch(tmp_path, "loops.py", "--pattern", pattern, "--step_ms", "4", *args, zero_edit=zero_edit)
    complete(ran)
    seen = epochs(ran.stdout)
    if pattern == "break":
        assert seen and set(seen) == {(7, 24)}, seen  # the loop's own 7 steps, len() the loader's 24
    elif pattern == "iterable":
        # Without a length, a pass ends where the stream ends: it holds all of its samples, and the steps that
        # got the cached batch besides (documented: such an epoch is longer by its SYNTHETIC steps).
        assert seen and all(length == -1 and steps >= 24 for steps, length in seen), seen
        assert set(distinct(ran.stdout)) == {96}, distinct(ran.stdout)
    else:
        assert all(steps == length for steps, length in seen), seen


@pytest.mark.parametrize("zero_edit", [True, False], ids=["benchy run", "one-line"])
def test_the_epochs_the_script_must_run_are_said_right_and_a_short_run_exits_4(tmp_path: Path, zero_edit: bool) -> None:
    # Under benchy run the benchmark begins a few batches into the first epoch (a plain pass until then):
    # the epochs said are the script's own, counted from its first (the most the schedule may take). Fewer
    # ends incomplete, with status 4 and how many more it needed; as many completes, with status 0.
    small = {
        "IO": {"nbatches": 10, "ntrials": 1, "nwarmup": 0},
        "synthetic": {"nbatches": 10, "ntrials": 1, "nwarmup": 1},
        "full": {"nbatches": 10, "ntrials": 1, "nwarmup": 1},
    }
    args = ["--samples", "40", "--step_ms", "1"]  # 10 batches an epoch
    for name in ("short", "enough"):
        (tmp_path / name).mkdir()
    short = launch(tmp_path / "short", "loops.py", *args, "--epochs", "2", zero_edit=zero_edit, config=small)
    assert short.returncode == 4, short
    doc = short.doc()
    needed = doc["epochs_needed"]
    assert doc["complete"] is False and doc["exit_status"] == 4 and doc["epochs_started"] == 2 and needed > 2, doc
    said = re.search(r"(\d+) epoch\(s\) of 10 batches in all are enough, counting the one running now", short.stdout)
    assert said and int(said.group(1)) == needed, short
    assert f"Run it for {needed} epochs in all ({needed - 2} more than this run; the most it may take)" in short.stdout
    assert "USER::done" in short.stdout  # the script's own end ran: only then did the status change
    enough = launch(tmp_path / "enough", "loops.py", *args, "--epochs", str(needed), zero_edit=zero_edit, config=small)
    assert enough.returncode == 0, enough
    # The epochs it took (the last window's, counted from the script's first epoch) are within those said.
    last = max(t["window"]["end_epoch"] for t in enough.doc()["timeline"]["trials"] if t["window"] is not None)
    assert 2 < last <= needed, (last, needed)
    assert enough.doc()["complete"] is True and enough.doc()["exit_status"] == 0


def test_a_ten_thousand_batch_epoch_costs_the_trials_steps_not_epochs(tmp_path: Path) -> None:
    # 40 000 samples in batches of 4: the default schedule runs inside the first epoch, in about its
    # windows' steps (8 x 50, and the 2 diagnostic windows of 25) plus the untimed ones, and benchy ends the
    # process there.
    ran = launch(tmp_path, "loops.py", "--samples", "40000", "--epochs", "2", "--step_ms", "1")
    doc = complete(ran)
    assert doc["epoch_length"] == 10_000 and doc["epochs_started"] == 1 and doc["epochs_needed"] == 1
    spans = [e["window"] for e in doc["timeline"]["trials"] if e["window"] is not None]
    first, last = min(w["start_step"] for w in spans), max(w["end_step"] for w in spans)
    # benchy run chose the loader when its loop asked for a 4th batch: the windows ran from step 3 on.
    assert first == 3 and last + 1 - first <= doc["steps_needed"] <= 8 * 50 + 2 * 25 + 10, (first, last, doc["steps_needed"])
    assert "USER::epoch" not in ran.stdout  # no epoch ended: the schedule took 400-odd of its 10 000 steps
    print(f"10 000-batch epoch: the schedule ended at step {last} of epoch 1, the run took {ran.seconds:.1f} s")


# --- frameworks ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [],  # epochs: 30 of 24 batches, 2 workers
        ["--max_steps", "800"],
        ["--accum", "2", "--workers", "0", "--group"],  # gradient accumulation, the length-grouped sampler, 0 workers
    ],
    ids=["epochs", "max_steps", "accum-group-0-workers"],
)
def test_hugging_face_trainer_as_it_is(tmp_path: Path, args: List[str]) -> None:
    ran = launch(tmp_path, "hf_trainer.py", *args)
    doc = complete(ran, decided=False)  # the framework's run is what is tested
    assert "hf_trainer.py" in doc["loader"] or "transformers" in doc["loader"]
    accum = 2 if "--accum" in args else 1
    assert all(steps == -(-length // accum) and length == 24 for steps, length in epochs(ran.stdout)), epochs(ran.stdout)
    assert doc["compute"]["flops_per_step"] > 0  # one real step counted: GPT-2's matmuls


def test_lightning_as_it_is(tmp_path: Path) -> None:
    ran = launch(tmp_path, "lightning_script.py", "--samples", "96", "--epochs", "40")
    complete(ran, decided=False)  # the framework's run is what is tested
    found = [int(n) for n in re.findall(r"USER::rank 0 epoch \d+ batches (\d+)", ran.stdout)]
    assert found and set(found) == {24}, found


def test_accelerate_as_it_is(tmp_path: Path) -> None:
    ran = launch(tmp_path, "accelerate_script.py", "--samples", "96", "--epochs", "40")
    complete(ran, decided=False)  # the framework's run is what is tested
    found = [int(n) for n in re.findall(r"USER::epoch \d+ samples (\d+)", ran.stdout)]
    assert found and set(found) == {96}, found


def test_ray_train_torch_trainer_as_it_is(tmp_path: Path) -> None:
    pytest.importorskip("ray.train")
    config = {"global": {"output_dir": str(tmp_path), "report_freq": 0}}  # Ray's workers run elsewhere
    ran = launch(tmp_path, "ray_train.py", "--epochs", "16", config=config, timeout=420, own_tmpdir=False)
    assert ran.returncode == 0, ran  # Ray reports a training whose workers benchy ended as failed
    assert "USER::result True" in ran.stdout, ran
    assert ran.stdout.count("BENCHY::SUMMARY::FULL average trial throughput") == 1  # rank 0 for both
    assert "benchy does not end this process, a Ray Train worker" in ran.stdout
    # Ray's two workers share the two cores with the suite's other tests: the verdict may be undecided there
    # (a trial of a few steps at 5x the others'); what is tested is that Ray's job runs and reports whole.
    doc = complete(ran, decided=False)
    assert doc["nranks"] == 2
    per_rank = [(int(s), int(n)) for s, n in re.findall(r"USER::rank \d epoch \d+ steps (\d+) len (\d+)", ran.stdout)]
    assert per_rank and set(per_rank) == {(32, 32)}  # half of 512 samples in batches of 8, each epoch whole


# --- the training is the user's own -------------------------------------------------------------------------


def batches(stdout: str) -> Dict[int, List[str]]:
    found: Dict[int, List[str]] = {}
    for epoch, _, digest in re.findall(r"^USER::batch (\d+) (\d+) (.*)$", stdout, re.M):
        found.setdefault(int(epoch), []).append(digest)
    return found


@pytest.mark.parametrize("zero_edit", [True, False], ids=["benchy run", "one-line"])
@pytest.mark.parametrize("workers", [0, 2])
def test_a_seeded_run_sees_the_batches_it_sees_without_benchy(tmp_path: Path, workers: int, zero_edit: bool) -> None:
    mode = {"nbatches": 5, "ntrials": 2, "nwarmup": 1}
    config = {"global": {"exit_after_tests": False, "report_freq": 0}, "IO": mode, "synthetic": mode, "full": mode}
    args = ["--workers", str(workers), "--epochs", "14"]
    plain = run_python(SCRIPTS / "seeded_train.py", args, tmp_path, dict(os.environ, OMP_NUM_THREADS="1"), 120)
    assert plain.returncode == 0, plain.stderr
    ran = launch(tmp_path, "seeded_train.py", *args, zero_edit=zero_edit, config=config)
    assert ran.returncode == 0 and "USER::done" in ran.stdout, ran
    doc = ran.doc()
    assert doc["complete"] is True
    # The epoch the last window ended in (the benchmark's epoch 1 is the script's epoch 0): every later
    # epoch sees exactly the plain run's batches, their order and their workers' random augmentation.
    ended = max(e["window"]["end_epoch"] for e in doc["timeline"]["trials"] if e["window"])
    after = range(ended, 14)
    assert len(after) >= 4, ended
    want, got = batches(plain.stdout), batches(ran.stdout)
    assert [got[e] for e in after] == [want[e] for e in after]
    # Every epoch has the loader's own length and len(); every batch the loop got was made under the
    # epoch it is in, but the one cached SYNTHETIC batch.
    said = re.findall(r"^USER::epoch (\d+) steps (\d+) len (\d+) stale (\d+)$", ran.stdout, re.M)
    assert len(said) == 14 and all(s == n == "12" for _, s, n, _ in said), said
    assert all(int(k) <= 1 for *_, k in said), said
