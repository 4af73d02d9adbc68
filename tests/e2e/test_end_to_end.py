"""End to end: user-like scripts in subprocesses, checked by their output, JSON and exit status."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml
from helpers import ROOT, small_config

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
}  # small_config(): IO 1+2, SYNTHETIC 1+2, FULL 1+2 trials of 5 batches


def test_drop_in_loader_with_two_workers(run_script) -> None:
    run = run_script(small_config(), "--workers", "2", "--samples", "40", "--batch_size", "4")
    assert run.returncode == 0, run
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}
    assert all(hw is not None for _, hw in run.summary.values())
    assert set(run.trials) == ALL_TRIALS
    # exit_after_tests: the process ends where the last window ends, inside an epoch; the script never
    # finishes. Every epoch it finished had the loader's own 10 batches, and len() said so.
    assert "USER::done" not in run.stdout and run.epochs and set(run.epochs.values()) == {(10, 10)}
    doc = run.result()
    assert doc["complete"] is True and doc["nranks"] == 1 and doc["schema_version"] == 6
    assert doc["source"] == "run" and doc["run_name"].startswith("user_script 20")  # the script and its start time
    # SYNTHETIC's windows are the 5 batches asked for; with 2 workers, FULL's are whole rounds of them, at least 3 (6
    # batches); IO's too, less each period that holds a new pass's start-up (passes of 10) and the part rounds.
    assert doc["schedule"]["loader_round"] == 2
    for mode, periods in (("SYNTHETIC", {5}), ("FULL", {6}), ("IO", {2, 4, 6})):
        block = doc[mode]
        assert block["n"] == 2 and {len(r) for r in block["rates"]} <= periods, block["nbatches"]
        assert block["trial_samples"] == [4 * len(r) for r in block["rates"]]
        assert block["mean"] == pytest.approx(sum(block["trial_throughput"]) / 2)
        assert set(block) >= {"rates", "avg_iter_throughput", "trial_throughput", "trial_time", "mean", "interval"}
    assert doc["environment"]["torch_version"] and doc["environment"]["device"] == "cpu"
    assert doc["config"]["IO"]["nbatches"] == 5 and doc["epoch_length"] == 10
    assert "Tests completed" in run.stdout and "\x1b" not in run.stdout


def test_persistent_workers(run_script) -> None:
    run = run_script(small_config(), "--workers", "2", "--persistent", "--samples", "12", "--batch_size", "4", "--epochs", "40")
    assert run.returncode == 0, run
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}


@pytest.mark.parametrize("kind", ["tuple", "tensor", "dict", "dali"])
def test_generic_wrapper_batch_structures(run_script, kind: str) -> None:
    run = run_script(
        small_config(nbatches=4), "--loader", "generic", "--kind", kind, "--samples", "30", "--batch_size", "8", "--epochs", "40"
    )
    assert run.returncode == 0, run
    doc = run.result()
    # A pass is 8, 8, 8, 6 samples: every 4-batch IO trial holds one short batch and one new pass's first batch,
    # whose period holds the pass's start-up and is left out (8 + 8 + 6). The loop's epochs are 4 batches: a FULL
    # window measures the periods inside them (an epoch's first and last, which may hold no step or the next pass's
    # start, are left out), so the short last batch is not among them.
    assert doc["IO"]["trial_samples"] == [22, 22]
    assert doc["FULL"]["trial_samples"] == [32, 32]
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}


@pytest.mark.parametrize("kind", ["tensor", "dict"])
def test_drop_in_single_tensor_and_dict_batches(run_script, kind: str) -> None:
    run = run_script(small_config(), "--kind", kind, "--samples", "100", "--batch_size", "5")
    assert run.returncode == 0, run
    assert run.result()["SYNTHETIC"]["trial_samples"] == [25, 25]


def test_loader_shorter_than_a_trial(run_script) -> None:
    # 10 samples in batches of 4: a pass is 4, 4, 2, and the loop's epochs are those 3 batches. A 5-batch
    # window spans several of them; nothing restarts a pass the loop did not start.
    run = run_script(small_config(), "--samples", "10", "--batch_size", "4", "--epochs", "80")
    assert run.returncode == 0, run
    assert set(run.epochs.values()) == {(3, 3)}
    doc = run.result()
    assert doc["complete"] is True and doc["epoch_length"] == 3
    # FULL windows cross epochs (the periods at their ends left out, made up); IO's trials run across benchy's own
    # passes, and leave out the period that holds each new pass's start-up (its first batch: 4 samples), so 5 periods
    # of passes of 4, 4, 2 samples keep 10, 12 or 8 of them.
    assert all(s in (14, 16, 18, 20) for s in doc["FULL"]["trial_samples"]), doc["FULL"]["trial_samples"]
    assert all(s in (8, 10, 12) for s in doc["IO"]["trial_samples"]), doc["IO"]["trial_samples"]
    spans = [e["window"] for e in doc["timeline"]["trials"] if e["window"] is not None]
    assert spans and all(w["segments"] >= 2 and w["end_epoch"] > w["start_epoch"] for w in spans)


def test_transparent_after_the_schedule(run_script) -> None:
    run = run_script(small_config(exit_after_tests=False), "--samples", "24", "--batch_size", "4", "--epochs", "12")
    assert run.returncode == 0, run
    assert "USER::done" in run.stdout
    # Every epoch is the loader's own, full length, during the schedule and after it.
    assert [run.epochs[e] for e in range(12)] == [(6, 6)] * 12
    assert run.stdout.index("BENCHY::SUMMARY::FULL") < run.stdout.index("USER::epoch 11 ")
    assert run.result()["complete"] is True and run.result()["exit_status"] == 0  # the status advised for CI


def test_too_few_epochs_says_so_and_keeps_the_results(run_script) -> None:
    run = run_script(small_config(), "--epochs", "1")  # 16 batches; the schedule needs about 40 steps
    # The script's own status: benchy does not end a process it did not say it would end. The JSON says the
    # run is incomplete (exit_status 4: what benchy run and benchy check report to CI).
    assert run.returncode == 0, run
    doc = run.result()
    needed, epochs = doc["steps_needed"], doc["epochs_needed"]
    assert epochs == -(-needed // 16) and epochs > 1
    # Epoch 0: SYNTHETIC_WARMUP_1 (6 steps), FULL_WARMUP_1 (5), FULL_1 from step 11: its last period crosses the end.
    assert (
        f"the script stopped after 1 epoch(s), 16 step(s) since the benchmark started during trial FULL_1, "
        f"before the benchy schedule's end (about {needed} steps, {epochs} epoch(s) of 16 batches in all"
    ) in run.stdout
    assert f"Run it for {epochs} epochs in all ({epochs - 1} more than this run; the most it may take)" in run.stdout
    assert "incomplete run: the script's exit status and exit handlers stay its own; benchy run" in run.stdout
    assert run.summary["IO"][0] > 0
    assert "BENCHY::SUMMARY::FULL average trial throughput: n/a (no completed trial)" in run.stdout
    assert doc["complete"] is False and doc["epochs_started"] == 1
    assert doc["exit_status"] == 4
    lost = doc["interrupted"]
    assert lost[0] == {
        "trial": "FULL_1",
        "batches_done": 4,
        "nbatches": 5,
        "reason": "the script ended before the trial's window was complete",
    }
    assert all(i["reason"] == "not run: the script stopped after 1 epoch(s), 16 step(s)" for i in lost[1:])
    assert [i["trial"] for i in lost[1:]] == ["SYNTHETIC_1", "SYNTHETIC_2", "FULL_2"]
    assert doc["SYNTHETIC"]["n"] == 0 and doc["FULL"]["n"] == 0 and len(doc["FULL"]["warmup"]["trial_time"]) == 1


def test_exception_in_the_step_propagates_unchanged_and_results_are_kept(run_script) -> None:
    # 100 batches an epoch: SYNTHETIC_WARMUP_1 steps 0-5 (its first period left out), FULL_WARMUP_1 6-10, FULL_1
    # 11-15: its third step raises.
    run = run_script(small_config(), "--raise_at", "0:13", "--samples", "400")
    assert run.returncode == 1, run
    assert "RuntimeError: boom in the training step at epoch 0 step 13" in run.stderr
    assert run.stderr.strip().splitlines()[-1] == "RuntimeError: boom in the training step at epoch 0 step 13"
    assert 'user_script.py", line' in run.stderr
    doc = run.result()
    assert doc["complete"] is False
    assert doc["SYNTHETIC"]["n"] == 0 and doc["FULL"]["n"] == 0 and len(doc["FULL"]["warmup"]["trial_time"]) == 1
    # The loop received batches 11, 12 and 13 and raised in the step of batch 13: 2 periods measured.
    assert doc["interrupted"][0]["trial"] == "FULL_1" and doc["interrupted"][0]["batches_done"] == 2
    assert doc["interrupted"][0]["reason"] == "the script ended with RuntimeError: boom in the training step at epoch 0 step 13"
    assert (
        "the script ended with an uncaught exception (RuntimeError: boom in the training step at epoch 0 "
        "step 13) after 1 epoch(s), 14 step(s) since the benchmark started"
    ) in run.stdout
    assert doc["interrupted"][1]["reason"].startswith("not run: the script ended with RuntimeError: boom")


def test_a_loop_that_breaks_early_every_epoch_loses_no_trial(run_script) -> None:
    run = run_script(small_config(), "--break_at=-1:3", "--epochs", "60")  # receives batches 0..3, then breaks
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS and "did not count" not in run.stdout
    assert set(run.epochs.values()) == {(3, 16)}  # each epoch 3 steps (the 4th batch received, then the break)
    doc = run.result()
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["exit_status"] == 0
    assert doc["FULL"]["nbatches"] == [5, 5] and doc["SYNTHETIC"]["nbatches"] == [5, 5]


def test_loop_that_breaks_after_the_last_batch_counts_every_trial(run_script) -> None:
    # Breaking right after receiving batch 5 (a loop sized by a count of its own): every window counts.
    run = run_script(small_config(), "--break_at=-1:4", "--epochs", "60")
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS
    doc = run.result()
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["exit_status"] == 0
    assert doc["FULL"]["nbatches"] == [5, 5] and doc["IO"]["nbatches"] == [5, 5]


@pytest.mark.parametrize(
    "config, expected",
    [
        ("IO:\n  nbatch: 5\n", "IO.nbatch: unknown key (allowed: run_benchmark, nbatches, ntrials, nwarmup)"),
        ("full:\n  ntrials: -3\n", "full.ntrials: got -3 (int); expected an integer from 0 to 10000"),
        ("synthetic:\n  nbatches: 0\n", "synthetic.nbatches: got 0 (int); expected an integer from 1 to 1000000"),
        ("global:\n  profiler_mode: some\n", "global.profiler_mode: got 'some' (str); expected one of"),
        ("global:\n  exit_after_tests: 2\n", "global.exit_after_tests: got 2 (int); expected true or false"),
        ("IO: [1, 2\n", "malformed YAML at line"),
    ],
)
def test_bad_config_stops_before_any_trial(run_script, config: str, expected: str) -> None:
    run = run_script(config)
    assert run.returncode == 1, run
    assert expected in run.stderr and "benchy.ConfigError: benchy config " in run.stderr
    assert "BENCHY::IO" not in run.stdout and not run.json_path.exists()


def test_missing_config_file(run_script, tmp_path) -> None:
    missing = tmp_path / "missing.yaml"
    run = run_script(None, env={"BENCHY_CONFIG_FILE": str(missing)})
    assert run.returncode == 1 and f"benchy config {missing}: file not found" in run.stderr


def test_an_output_dir_that_cannot_be_created_is_a_config_error_before_any_trial(run_script, tmp_path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    run = run_script(small_config(output_dir=str(blocker / "sub")))
    assert run.returncode == 1, run
    assert (
        f"benchy.ConfigError: benchy config {tmp_path / 'benchy.yaml'}: global.output_dir: {blocker / 'sub'} "
        f"cannot be created: {blocker} is a file" in run.stderr
    )
    assert "BENCHY::" not in run.stdout and "USER::epoch" not in run.stdout  # nothing ran


@pytest.mark.parametrize("output_dir", [None, "results"])
def test_a_script_that_changes_directory_writes_where_benchy_checked(run_script, tmp_path, output_dir) -> None:
    elsewhere = tmp_path / "outputs" / "2026-11-25"  # as Hydra's job.chdir moves a run
    elsewhere.mkdir(parents=True)
    if output_dir:
        (tmp_path / output_dir).mkdir()
    run = run_script(small_config(**({"output_dir": output_dir} if output_dir else {})), "--chdir", str(elsewhere))
    assert run.returncode == 0, run
    written = tmp_path / (output_dir or "") / "benchy_result.json"
    assert written.is_file() and not (elsewhere / "benchy_result.json").exists()
    assert not (elsewhere / (output_dir or "x")).exists()
    assert json.loads(written.read_text())["config"]["global"]["output_dir"] == str(written.parent)


def test_a_json_write_that_fails_later_still_prints_the_numbers(run_script, tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # The directory is replaced by a file while the trials run (a cleaned scratch space, a full disk).
    run = run_script(small_config(output_dir=str(out)), "--spoil_output_dir_at", f"2:{out}")
    assert run.returncode == 0, run
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}
    assert f"cannot write the JSON result to {out / 'benchy_result.json'}" in run.stdout


def test_flag_switches_between_plain_and_benchmark(run_script) -> None:
    plain = run_script(small_config(), "--loader", "plain", "--epochs", "2")
    assert plain.returncode == 0 and "BENCHY::" not in plain.stdout and plain.epochs[0] == (16, 16)
    on = run_script(small_config(), "--loader", "plain", "--enable_benchy")
    assert on.returncode == 0 and set(on.summary) == {"IO", "SYNTHETIC", "FULL"}


def test_rich_console_draws_a_table_and_keeps_the_plain_lines(run_script) -> None:
    run = run_script(small_config(console="rich"), env={"COLUMNS": "80"})
    assert run.returncode == 0, run
    assert "benchy summary" in run.stdout and "+/-" in run.stdout
    assert "where a batch's time goes (stage trials" in run.stdout and "collate_fn" in run.stdout
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}
    # The modes' table and the answer last, in one screen of an 80 x 24 terminal.
    drawn = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout).splitlines()
    title = max(k for k, line in enumerate(drawn) if "benchy summary" in line)
    end = next(k for k in range(title, len(drawn)) if drawn[k].startswith("BENCHY::"))  # the JSON's line
    screen = drawn[title:end]
    assert any(line.startswith("verdict: ") for line in screen) and len(screen) <= 24, "\n".join(screen)


SAMPLE_PAGE = ROOT / "docs" / "guide" / "getting-started.md"


@pytest.mark.parametrize("bottleneck, verdict", [("data", "data loading"), ("compute", "compute")])
def test_the_demo_shows_its_bottleneck_on_a_busy_machine_too(run_script, bottleneck: str, verdict: str) -> None:
    # The demo as a user runs it (its own adaptive schedule), batches of 8 to keep it short; the suite's
    # other workers keep this machine busy. One side is about 3.5x the other by design (3.3 to 3.5x on an idle
    # machine); the bound asserted is the side alone (the ratio beyond 1x), which the load can cross only by slowing
    # one side 3.5x more than the other: a CI run with 1.37 of 2 cores taken by others read under 2x, undecided, below the
    # 2x this test once asked for, while still on the right side.
    run = run_script(
        None,
        "--enable_benchy",
        "--bottleneck",
        bottleneck,
        "--batch_size",
        "8",
        "--dataset_size",
        "512",
        script=ROOT / "examples" / "train_cnn.py",
        # margin: the default 180 s ran out beside a spinning core and other jobs (a load average of 6 to 7 on 2
        # cores, the data-bound demo); 600 s is over 3x that. A demo that never ends its schedule still fails.
        timeout=600,
    )
    assert run.returncode == 0, run
    found = re.search(rf"^BENCHY::SUMMARY::VERDICT {verdict} limits training: .*? ([0-9.]+)x ", run.stdout, re.M)
    if found is None:
        # Where the suite's other workers take most of the cores, trials swing (SYNTHETIC 73 to 893 samples/s in one
        # CI run, 1.86 of 2 cores taken by others) and after the adaptive schedule's 8 trials the ratio's interval can
        # reach within 5 % of 1x: then benchy must not decide. It says so, names the busy trials, and its ratio still
        # points the right way.
        ratio = run.undecided_ratio()
        assert (ratio > 1.0) if bottleneck == "data" else (ratio < 1.0), run
    else:
        assert float(found.group(1)) > 1.0, run
    # The getting-started page's sample of the demo's output holds every summary line the demo prints today
    # (BUSY only on a busy machine; PRECISION only where a figure's trials scatter past the schedule's bound).
    printed = set(re.findall(r"^BENCHY::SUMMARY::([A-Z_]+) ", run.stdout, re.M)) - {"BUSY", "PRECISION"}
    shown = set(re.findall(r"BENCHY::SUMMARY::([A-Z_]+) ", SAMPLE_PAGE.read_text()))
    assert printed <= shown, printed - shown


def test_examples_run(run_script) -> None:
    cfg = small_config(nbatches=3, ntrials=2, nwarmup=0)
    run = run_script(cfg, "--enable_benchy", "--nsamples", "300", script=ROOT / "examples" / "generic_iterator.py")
    assert run.returncode == 0, run
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}


def test_the_ci_recipe_writes_a_baseline_then_fails_on_a_regression_or_a_verdict(tmp_path) -> None:
    import subprocess
    import sys

    recipe = ROOT / "examples" / "ci_check.sh"
    script = ["--", sys.executable, str(ROOT / "tests" / "scripts" / "loops.py"), "--epochs", "200", "--step_ms", "5"]
    env = dict(os.environ, BENCHY=f"{sys.executable} -m benchy", PYTHONUNBUFFERED="1")
    env["BENCHY_CONFIG_FILE"] = str(tmp_path / "ci.yaml")
    (tmp_path / "ci.yaml").write_text(yaml.safe_dump(small_config(nbatches=10, ntrials=3, nwarmup=1, whatif=False)))

    def recipe_run(*extra: str, **changes: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(recipe), "base.json", *script, *extra],
            cwd=tmp_path,
            env=dict(env, **changes),
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = recipe_run()  # a 5 ms step, a loader of microseconds: not data loading
    assert first.returncode == 0, first.stdout + first.stderr
    assert re.search(r"^ci: IO=[0-9.]+ SYNTHETIC=[0-9.]+ FULL=[0-9.]+ samples/s$", first.stdout, re.M), first.stdout
    assert re.search(r"^ci: VERDICT ", first.stdout, re.M), first.stdout
    assert not re.search(r"^ci: VERDICT data loading limits training", first.stdout, re.M)  # the default fails on it
    assert "this run is written to base.json" in first.stdout and (tmp_path / "base.json").is_file()
    # A baseline ten times faster, with steady trials: the next run regresses against it, and the job fails.
    doc = json.loads((tmp_path / "base.json").read_text())
    for mode in ("IO", "SYNTHETIC", "FULL"):
        block = doc[mode]
        fast = 10 * block["mean"]
        block["trial_throughput"] = [fast * (1 + 0.001 * k) for k in range(len(block["trial_throughput"]))]
        block["mean"] = sum(block["trial_throughput"]) / len(block["trial_throughput"])
        block["interval"] = 0.002 * fast
    (tmp_path / "base.json").write_text(json.dumps(doc))
    second = recipe_run()
    assert second.returncode == 1 and "benchy check: REGRESSION: " in second.stdout, second.stdout + second.stderr
    assert "ci: benchy check failed with status 1" in second.stderr
    # The verdicts the job fails on are the caller's choice (a regular expression): here, any verdict.
    anything = "limits training|balanced|undecided|inconsistent"
    third = recipe_run(FAIL_ON_VERDICT=anything)
    assert third.returncode == 1 and f"the verdict matches --fail-on-verdict '{anything}'" in third.stdout, third.stdout
    # A run that ends before the schedule (too few epochs) fails the job with benchy run's status 4.
    short = subprocess.run(
        ["bash", str(recipe), "base.json", *script[:-4], "--epochs", "1", "--step_ms", "5"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert short.returncode == 4 and "ended with status 4" in short.stderr, short.stdout + short.stderr


def test_summary_command_reprints_a_result(run_script) -> None:
    import subprocess
    import sys

    run = run_script(small_config(), "--epochs", "1")
    assert run.returncode == 0 and run.result()["exit_status"] == 4, run  # incomplete: the script's status stays
    proc = subprocess.run(
        [sys.executable, "-m", "benchy", "summary", str(run.json_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    printed = [x for x in run.stdout.splitlines() if x.startswith("BENCHY::SUMMARY::")]
    assert proc.stdout.splitlines()[: len(printed)] == printed
    assert "holds an incomplete run" in proc.stdout
    # benchy check turns the file's advised status into CI's: 4, with how far the run got.
    check = subprocess.run(
        [sys.executable, "-m", "benchy", "check", str(run.json_path)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 4 and "holds an incomplete run (" in check.stdout, check.stdout + check.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "benchy", "summary", str(run.workdir / "nope.json")], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "cannot read" in bad.stderr


def test_stale_temporary_files_of_a_killed_run_are_removed_at_the_next_start(run_script, tmp_path) -> None:
    import os
    import time

    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".benchy-k1ll3d.json.tmp"  # a process killed while writing its JSON left it
    stale.write_text('{"half": ')
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = out / ".benchy-wr1t1ng.json.tmp"  # another run writing at this very moment
    fresh.write_text("{")
    mine = out / ".benchy-notes.txt"  # not a name benchy makes
    mine.write_text("keep")
    steps = out / "benchy_result.steps"  # per-step files: a killed writer's, a previous run's, the user's
    steps.mkdir()
    stale_steps = steps / ".benchy-k1ll3d.npy.tmp"
    stale_steps.write_bytes(b"\x93NUMPY")
    os.utime(stale_steps, (old, old))
    previous = steps / "FULL_9.npy"
    previous.write_bytes(b"\x93NUMPY")
    (steps / "notes.txt").write_text("keep")
    run = run_script(small_config(output_dir=str(out)))
    assert run.returncode == 0, run
    assert f"removed 2 stale temporary file(s) left by an interrupted benchy run: {stale}, {stale_steps}" in run.stdout
    assert not stale.exists() and fresh.exists() and mine.exists()
    # A normal run leaves no temporary file of its own (nor its writability probe).
    assert sorted(p.name for p in out.iterdir()) == [
        ".benchy-notes.txt",
        ".benchy-wr1t1ng.json.tmp",
        "benchy_result.json",
        "benchy_result.steps",
    ]
    # This run's trials replace a previous run's trial files; other files stay.
    assert sorted(p.name for p in steps.iterdir()) == sorted(
        [f"{label}{kind}.npy" for label in run.trials for kind in ("", ".system")] + ["notes.txt"]
    )


def sigterm_during_a_trial(tmp_path, *extra: str):
    """Run the user script, send SIGTERM in the middle of FULL_WARMUP_1, return (status, stdout, stderr)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml
    from helpers import USER_SCRIPT

    cfg = tmp_path / "benchy.yaml"
    cfg.write_text(yaml.safe_dump(small_config(nbatches=40, ntrials=2, nwarmup=1)))
    env = dict(os.environ, BENCHY_CONFIG_FILE=str(cfg), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, str(USER_SCRIPT), "--step_ms", "20", *extra],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    seen = []
    assert proc.stdout is not None
    for line in proc.stdout:  # FULL_WARMUP_1 is the epoch after SYNTHETIC_WARMUP_1: 40 steps of 20 ms
        seen.append(line)
        if line.startswith("BENCHY::SYNTHETIC_WARMUP_1::Trial Throughput"):
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, "".join(seen) + out, err


@pytest.mark.parametrize("repetition", [1, 2, 3])
def test_sigterm_in_a_trial_prints_and_writes_what_was_measured(run_script, tmp_path, repetition: int) -> None:
    import signal

    status, out, err = sigterm_during_a_trial(tmp_path)
    assert status == -signal.SIGTERM, (status, out, err)  # the signal's own status, as without benchy
    assert "BENCHY::WARNING::Message: SIGTERM received during trial FULL_WARMUP_1 (" in out, out
    assert "BENCHY::SUMMARY::IO average trial throughput" in out
    assert "BENCHY::SUMMARY::SYNTHETIC average trial throughput: n/a (no completed trial)" in out
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["complete"] is False and doc["IO"]["n"] == 2
    [item] = doc["interrupted"]
    assert item["trial"] == "FULL_WARMUP_1" and item["reason"].startswith("interrupted by SIGTERM after ")
    # margin: the signal comes 0.3 s after SYNTHETIC_WARMUP_1's line, in FULL_WARMUP_1's 40 steps of a 20 ms sleep
    # (0.8 s or more): it misses them only if the line's reading and the signal are delayed 0.5 s (milliseconds on a
    # loaded machine), or the window starts 0.3 s after that line; sleeps never end early.
    assert 0 < item["batches_done"] < 40


def test_sigterm_chains_the_scripts_own_handler(tmp_path) -> None:
    status, out, err = sigterm_during_a_trial(tmp_path, "--own_sigterm")
    assert status == 42, (status, out, err)  # the script's handler decides how the process ends
    assert out.index("BENCHY::SUMMARY::IO average") < out.index("USER::sigterm handler")
    assert json.loads((tmp_path / "benchy_result.json").read_text())["interrupted"][0]["trial"] == "FULL_WARMUP_1"
