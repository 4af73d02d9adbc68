"""Real frameworks, as the manual's recipes use them (docs/guide/frameworks.md): PyTorch Lightning and HF Accelerate.

Both are test extras (``.[test]``), installed with torch pinned to the CPU build; these
tests run them for real in subprocesses, as a user's script would.
"""

from __future__ import annotations

import re

from helpers import ROOT, small_config

LIGHTNING = ROOT / "tests" / "scripts" / "lightning_script.py"
ACCELERATE = ROOT / "tests" / "scripts" / "accelerate_script.py"
ALL_TRIALS = {
    "IO_WARMUP_1",
    "IO_1",
    "IO_2",
    "SYNTHETIC_WARMUP_1",
    "SYNTHETIC_1",
    "SYNTHETIC_2",
    "FULL_WARMUP_1",
    "FULL_1",
    "FULL_2",
}


def epochs_of(stdout: str, rank: int = 0) -> list:
    # Not anchored: two ranks share stdout, and their lines can run into each other.
    return [int(n) for n in re.findall(rf"USER::rank {rank} epoch \d+ batches (\d+)", stdout)]


def test_lightning_trainer_with_len_equal_to_nbatches(run_script) -> None:
    # 20 samples in batches of 4: the loader's own length is nbatches, so each epoch is a window's length;
    # the fit loop sizes its epochs by len() once, and they stay 5 batches through the schedule.
    run = run_script(small_config(), "--enable_benchy", "--samples", "20", "--epochs", "40", "--step_ms", "5", script=LIGHTNING)
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS, run
    assert epochs_of(run.stdout) and set(epochs_of(run.stdout)) == {5}
    assert "USER::rank 0 done" not in run.stdout  # exit_after_tests ended the Trainer's run
    doc = run.result()
    assert doc["complete"] is True and doc["exit_status"] == 0
    assert "lightning_script.py" in doc["loader"]  # the script's line, not Lightning's wrapper


def test_lightning_trainer_with_a_longer_loader_and_after_the_schedule(run_script) -> None:
    config = small_config(exit_after_tests=False)
    run = run_script(config, "--enable_benchy", "--samples", "80", "--epochs", "8", "--step_ms", "5", script=LIGHTNING)
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS, run
    # Lightning reads len() once; benchy never changes it: 20 batches every epoch, then and after.
    assert epochs_of(run.stdout) == [20] * 8 and "USER::rank 0 done" in run.stdout
    doc = run.result()
    assert doc["FULL"]["trial_samples"] == [20, 20] and doc["complete"] is True
    assert "fetches one batch ahead" not in run.stdout


def test_lightning_ddp_with_the_injected_distributed_sampler(run_script) -> None:
    run = run_script(
        small_config(),
        "--enable_benchy",
        "--devices",
        "2",
        "--samples",
        "80",
        "--epochs",
        "20",
        "--step_ms",
        "5",
        script=LIGHTNING,
        timeout=240,
    )
    assert run.returncode == 0, run
    assert run.stdout.count("BENCHY::SUMMARY::FULL average") == 1
    assert set(epochs_of(run.stdout, 0)) == {10} and set(epochs_of(run.stdout, 1)) == {10}  # half of 20 each
    doc = run.result()
    assert doc["complete"] is True and doc["nranks"] == 2
    # Each rank's sampler holds half the data; every window measures 5 batches of 4 on each rank.
    assert doc["FULL"]["ranks"]["trial_samples"] == [[20, 20], [20, 20]]
    assert doc["other_loaders"] == [] or all("never" not in x for x in doc["other_loaders"])
    assert "never iterated" not in run.stdout


def test_lightning_with_benchy_off_is_plain(run_script) -> None:
    run = run_script(None, "--samples", "20", "--epochs", "2", script=LIGHTNING)
    assert run.returncode == 0, run
    assert "BENCHY::" not in run.stdout and "USER::rank 0 done" in run.stdout


def test_accelerate_prepare_replacing_the_loader_is_said_loudly(run_script) -> None:
    run = run_script(small_config(), "--enable_benchy", "--recipe", "naive", "--epochs", "2", script=ACCELERATE)
    assert run.returncode == 0, run
    for stream in (run.stdout, run.stderr):
        assert "benchy measured nothing: BenchmarkDataLoader created at" in stream, run
        assert "accelerate_script.py" in stream and "was never iterated" in stream
        assert "BenchmarkGenericIteratorWrapper(accelerator.prepare(loader))" in stream
    assert not run.json_path.exists()


def test_accelerate_recipe_wraps_the_prepared_loader(run_script) -> None:
    run = run_script(small_config(), "--enable_benchy", "--recipe", "wrap", "--epochs", "10", script=ACCELERATE)
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS, run
    doc = run.result()
    assert doc["complete"] is True and doc["FULL"]["trial_samples"] == [20, 20]
    assert "never iterated" not in run.stdout
