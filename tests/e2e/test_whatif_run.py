"""What-if as a user meets it: the WHATIF line, the emulated-step trials, the JSON, contention in the verdict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import small_config

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "whatif_train.py"


@pytest.mark.timing
def test_a_compute_bound_loop_gets_predictions_checked_by_an_emulated_faster_step(run_script) -> None:
    # Loading 4 ms a batch in each of 2 workers (2 ms a batch for the pool), the step 6 ms: compute limits
    # until the faster step and the main process's receiving of each batch meet the pool's pace.
    run = run_script(small_config(nbatches=30, ntrials=2, nwarmup=1), "--item-ms", "1", "--step-ms", "6", script=SCRIPT)
    assert run.returncode == 0, run
    assert "Emulated-step trials (what-if check): 1 warm-up + 2 trials of 30 batches" in run.stdout
    for label in ("EMULATED_WARMUP_1", "EMULATED_1", "EMULATED_2"):
        assert f"BENCHY::{label}::Trial Throughput:" in run.stdout
    text = run.summary_line("WHATIF")
    assert "loading starts to limit FULL at a step" in text and "model from the stage trials" in text
    assert "EMULATED (the real loader, a step" in text and "FULL predicted" in text
    doc = run.result()
    w = doc["whatif"]
    # Where receiving (0.5 to 1.5 ms here) and the step meet the pool. margin: 6 ms of sleep against the pool's 2 ms a
    # batch (3x); under 1.2x only if the pool's pace fell to 5 ms a batch, above 10x only if the step's sleep were
    # under 0.6 ms: neither a sleep nor a spinning core moves them so far.
    assert 1.2 <= w["flip_speedup"] <= 10, w["flip_speedup"]
    # how sure: the flip and each faster step's workers at the two ends of the measured intervals, on the line too
    lo, hi = w["flip_speedup_interval"]
    assert lo <= w["flip_speedup"] <= hi and f"{lo:.2g}x to {hi:.2g}x; model from the stage trials" in text
    for need in w["needs"]:
        fewest, most = need["workers_interval"]
        assert fewest <= need["workers"] <= most, need
    # the simulation of the pipeline knows the loader's queue: 2 workers x prefetch_factor 2
    assert w["inputs"]["queue_depth"] == 4
    # and the loading alone on the training thread, for the changes to no workers (STAGES_ALONE: 4 x 1 ms a batch)
    assert "Stage trials at another setting (for the what-if model): 1 warm-up + 1 IO trial of 15 batches" in run.stdout
    assert "BENCHY::STAGES_ALONE_1::Trial Throughput:" in run.stdout
    # margin: four 1 ms sleeps a batch never end early (lower bound 3 ms); the upper 11 ms fails only if they
    # oversleep 1.75 ms each on average, the CPU part aside (0.21 ms measured beside a load average of 5.5 on
    # 2 cores; the 8 ms this test once allowed was 0.5 ms with the CPU part doubled). Still fails on the pool's
    # 2 ms a batch or a sample's 1 ms read as a batch's.
    assert w["inputs"]["other_workers"] == 0 and 0.003 < w["inputs"]["other_worker_seconds_per_batch"] < 0.011
    assert doc["EMULATED"]["speedup"] == w["flip_speedup"] and doc["EMULATED"]["n"] == 2
    (check,) = w["checks"]
    assert check["kind"] == "FULL" and check["measured"] == doc["EMULATED"]["mean"]
    # Generous: at the knee the two sides queue for each other. margin: the prediction and the emulated trial are
    # both sleeps of the same run (the emulated step a sleep of the predicted length) beside the same load; 35 %
    # is 3.5x the 10 % the what-if page measured at the knee (5 of 5); not measured beside a spinning core here.
    assert abs(check["error"]) < 0.35, (check, run.stdout)
    # Every change the issue names is predicted: 0 to twice the cores' workers, 1/2/4/10x steps, each stage made free.
    cores = w["inputs"]["cores"]
    found = {(p["workers"], p["speedup"]) for p in w["predictions"] if p["cores"] == cores and p["free_stage"] is None}
    assert {(n, k) for n in range(0, int(2 * cores) + 1) for k in (1.0, 2.0, 4.0, 10.0)} <= found
    assert {p["free_stage"] for p in w["predictions"]} >= {None, "dataset", "collate_fn", "receive"}
    assert "accelerator utilization" in run.summary_line("DATA_WAIT")
    assert 0 < w["accelerator_utilization"] <= 1


def test_whatif_false_runs_no_emulated_trial_and_prints_no_whatif(run_script) -> None:
    config = small_config(nbatches=8, ntrials=2, nwarmup=1, whatif=False)
    run = run_script(config, "--item-ms", "0.5", "--step-ms", "2", script=SCRIPT)
    assert run.returncode == 0, run
    assert "EMULATED" not in run.stdout and "WHATIF" not in run.stdout
    doc = run.result()
    assert doc["whatif"] is None and doc["EMULATED"] is None


def test_a_loader_without_workers_is_modelled_one_after_the_other_and_its_workers_measured(run_script) -> None:
    config = small_config(nbatches=10, ntrials=2, nwarmup=1)
    run = run_script(config, "--workers", "0", "--item-ms", "1", "--step-ms", "2", script=SCRIPT)
    assert run.returncode == 0, run
    w = run.result()["whatif"]
    assert "price_per_hour" not in w and "wait_cost_per_1000_steps" not in w  # cut: a sum a user does in their head
    # Without workers the loading and the step run one after the other: the model says so, the naive reading not.
    # The model's FULL is batch / (loading + step), the naive one batch / max(loading, step): below it for any
    # positive times, whatever the machine's load does to them (no timing ratio is asserted).
    own = w["own"]
    assert own["limit"] == "the loading and the step one after the other"
    assert own["full"][1] < own["naive_full"]
    # what workers cost, which a loader without workers does not show: the stage trial with two workers (one on a
    # single core), STAGES_WORKER, and the step beside them (CONTENTION_1 on a copy of the loader with them)
    two = min(2, len(os.sched_getaffinity(0)))
    assert "BENCHY::STAGES_WORKER_1::Trial Throughput:" in run.stdout
    assert w["inputs"]["other_workers"] == two and w["inputs"]["other_main_seconds_per_batch"] > 0
    assert "BENCHY::CONTENTION_1::Trial Throughput:" in run.stdout
    beside = run.result()["diagnostics"]["contention"]
    assert beside["loader_workers"] == two and beside["loader_batches"] > 0, beside
    assert w["inputs"]["contention_loader_rate"] == pytest.approx(beside["loader_batches_per_second"])


def test_a_loader_that_fails_in_a_worker_costs_only_the_other_setting_s_figure_and_says_so(run_script) -> None:
    # Without workers the loader works; the stage trials at the other setting (one worker) raise in the worker.
    config = small_config(nbatches=10, ntrials=2, nwarmup=1)
    run = run_script(config, "--workers", "0", "--item-ms", "0.5", "--step-ms", "2", "--fail-in-workers", script=SCRIPT)
    assert run.returncode == 0, run
    said = [line for line in run.stdout.splitlines() if "stage trials at another setting: stopped:" in line]
    assert len(said) == 1, run.stdout
    assert (
        "Caught RuntimeError in DataLoader worker process 0. ... RuntimeError: this dataset cannot run in a loader worker"
        in said[0]
    )
    assert "STAGES_WORKER" in said[0] and "own loader costs for the changes across no workers" in said[0], said
    doc = run.result()
    assert doc["complete"] is True and doc["exit_status"] == 0
    assert "this dataset cannot run in a loader worker" in doc["stages"]["other_skipped"]
    assert doc["stages"]["period_seconds"] > 0  # the run's own stage trials stand
    w = doc["whatif"]
    assert w["inputs"]["other_workers"] is None and w["predictions"]  # the model does without, and still predicts
    assert "WHATIF" in run.stdout


def test_the_step_parts_and_the_step_beside_the_loader_are_measured_in_windows_of_their_own(run_script) -> None:
    run = run_script(small_config(nbatches=24, ntrials=2, nwarmup=1), "--model", "--step-ms", "2", script=SCRIPT)
    assert run.returncode == 0, run
    assert "then the extras, most useful first: FLOPS, STAGES, H2D, PARTS, CONTENTION, EMULATED" in run.stdout
    for label in ("CONTENTION_1", "PARTS_1"):
        assert f"BENCHY::{label}::Trial Throughput:" in run.stdout
    parts = run.summary_line("PARTS")
    assert parts.startswith("SYNTHETIC step ") and "forward" in parts and "optimizer step" in parts
    doc = run.result()
    block = doc["diagnostics"]
    assert sorted(t["label"] for t in block["trials"]) == ["CONTENTION_1", "PARTS_1"] and block["skipped"] == []
    # Each as long as half the longest SYNTHETIC window (12 steps), after the verdict, in its order for it.
    assert all(len(t["rates"]) == 12 for t in block["trials"]) if "rates" in block["trials"][0] else True
    p = block["parts"]
    assert p["forwards"] >= 12 and p["backwards"] >= 12 and p["optimizer_steps"] >= 12
    # The sleep of 2 ms a step is none of forward, backward or the optimizer step: it is the rest of the loop.
    assert p["rest_seconds"] > 0.0015  # margin: a 2 ms sleep never ends early; load only lengthens it
    assert 0 < doc["whatif"]["inputs"]["step_fixed_share"] < 1
    c = block["contention"]
    assert c["loader_batches"] > 0 and c["slowdown"] is not None
    # The counted trials are as before: 2 of each mode.
    assert doc["SYNTHETIC"]["n"] == 2 and doc["FULL"]["n"] == 2


@pytest.mark.timing
def test_cpu_bound_workers_beside_a_cpu_bound_step_show_contention_and_the_model_s_full_holds(run_script) -> None:
    # 2 workers of CPU work (6 ms a batch) beside a CPU-bound step of 6 ms on a machine of few cores.
    config = small_config(nbatches=40, ntrials=3, nwarmup=1)
    run = run_script(config, "--cpu", "--model", "--item-ms", "1.5", "--step-ms", "6", script=SCRIPT, timeout=300)
    assert run.returncode == 0, run
    doc = run.result()
    c = doc["diagnostics"]["contention"]
    assert c["loader_batches"] > 10 and c["slowdown"] is not None, c
    inputs = doc["whatif"]["inputs"]
    assert inputs["full_loader_rate"] > 0 and inputs["contention_loader_rate"] > 0
    # The model's FULL at the run's own setting against the measured FULL (within 10 % on a quiet 2-core
    # machine: the measured pages, benchmarks/whatif.py). margin: CPU work on both sides, which a spinning core slows
    # by up to 2x, but the model's inputs (the contention window, the stage trials) and the FULL it is checked
    # against are read in the same run beside the same load; the 20 % once asked left 2x the quiet error, 35 % 3.5x.
    # A model without the contention (the loader's rate alone, on cores the step shares) still reads far above.
    own, measured = doc["whatif"]["own"]["full"][1], doc["FULL"]["mean"]
    assert abs(own / measured - 1) < 0.35, (own, measured, run.summary_line("WHATIF"))
