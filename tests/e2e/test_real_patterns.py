"""Ordinary script patterns that used to lose or miscount trials, end to end.

Each runs ``tests/scripts/user_script.py`` in a subprocess, as a user's script, and checks that
every scheduled trial counted (or that each one that did not is named with its reason), that the
loop's epochs kept the loader's own length, and that the exit status says whether every mode has
its numbers.
"""

from __future__ import annotations

import pytest
from helpers import small_config

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


def test_steps_per_epoch_loop_sized_by_len_counts_every_trial(run_script) -> None:
    # 20 samples / 4 = 5 batches: the loop takes exactly len(loader) batches and never asks for one more.
    run = run_script(small_config(), "--loop", "steps", "--samples", "20", "--epochs", "40")
    assert run.returncode == 0, run
    assert "StopIteration" not in run.stderr
    assert set(run.trials) == ALL_TRIALS
    assert set(run.epochs.values()) == {(5, 5)}
    doc = run.result()
    assert doc["complete"] is True and doc["exit_status"] == 0 and doc["interrupted"] == []
    assert doc["SYNTHETIC"]["nbatches"] == [5, 5] and doc["FULL"]["trial_samples"] == [20, 20]
    # The loop never asks past an epoch's end: each epoch's last period is left out, and the windows span epochs.
    spans = [e["window"] for e in doc["timeline"]["trials"] if e["window"] is not None and e["group"] != "flops"]
    assert all(w["left_out"] >= 1 for w in spans)


def test_len_is_the_loaders_own_before_during_and_after_the_schedule(run_script) -> None:
    run = run_script(small_config(exit_after_tests=False), "--loop", "steps", "--samples", "64", "--epochs", "9")
    assert run.returncode == 0, run
    assert [run.epochs[e] for e in range(9)] == [(16, 16)] * 9
    assert run.result()["complete"] is True


def test_a_peek_inside_the_loop_is_served_plain_and_loses_no_trial(run_script) -> None:
    run = run_script(small_config(), "--peek_at=-1:2")
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS
    assert run.stdout.count("was served by the plain loader (a peek such as next(iter(loader))") == 1
    assert all(steps == 16 for steps, _ in run.epochs.values())
    doc = run.result()
    assert doc["complete"] is True and doc["side_iterators"] >= 1


def test_a_discarded_iter_costs_no_trial(run_script) -> None:
    run = run_script(small_config(), "--discard_iter_at", "1", "--epochs", "8")
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS and "did not count" not in run.stdout
    doc = run.result()
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["rerun"] == []


@pytest.mark.parametrize("before", [0, -1])
def test_a_peek_before_the_first_or_every_epoch_costs_no_trial(run_script, before: int) -> None:
    # next(iter(loader)) before training (shape inference), or at every epoch's start as PyTorch's DDP
    # tutorial does (b_sz = len(next(iter(self.train_data))[0])): each takes one batch and drops its iterator.
    run = run_script(small_config(), "--peek_before", str(before), "--epochs", "12")
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS and "did not count" not in run.stdout
    assert all(steps == 16 for steps, _ in run.epochs.values())  # every epoch of the script is whole
    doc = run.result()
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["rerun"] == []
    assert doc["peeks"] >= 1 and (before == -1 or doc["peeks"] == 1)
    assert [doc[m]["n"] for m in ("IO", "SYNTHETIC", "FULL")] == [2, 2, 2]


def test_a_loop_that_breaks_out_once_loses_no_trial_its_window_goes_on(run_script) -> None:
    run = run_script(small_config(), "--break_at", "0:8", "--epochs", "12")  # epoch 0: SYNTHETIC_WARMUP_1 ...
    assert run.returncode == 0, run
    assert set(run.trials) == ALL_TRIALS and "did not count" not in run.stdout and "runs again" not in run.stdout
    assert run.epochs[0] == (8, 16) and all(run.epochs[e] == (16, 16) for e in run.epochs if e)
    doc = run.result()
    assert doc["complete"] is True and doc["interrupted"] == [] and doc["rerun"] == []


def test_a_window_part_way_in_the_script_s_last_epoch_is_lost(run_script) -> None:
    run = run_script(small_config(), "--break_at", "0:8", "--epochs", "1")
    assert run.returncode == 0, run  # the script's own status
    doc = run.result()
    assert doc["complete"] is False and doc["exit_status"] == 4 and doc["rerun"] == []
    assert doc["interrupted"][0]["reason"] == "the script ended before the trial's window was complete"
    # 9 batches handed out (the 9th received, then the break): the steps benchy counts.
    assert all(i["reason"] == "not run: the script stopped after 1 epoch(s), 9 step(s)" for i in doc["interrupted"][1:])
    assert "the script stopped after 1 epoch(s), 9 step(s) since the benchmark started during trial" in run.stdout


def test_a_second_wrapped_loader_is_plain_named_and_overwrites_nothing(run_script) -> None:
    run = run_script(small_config(), "--val_loader")
    assert run.returncode == 0, run
    assert run.stdout.count("BENCHY::SUMMARY::FULL average") == 1
    assert set(run.trials) == ALL_TRIALS
    assert "user_script.py" in run.stdout and "is the plain loader: a process runs one benchmark at a time" in run.stdout
    assert all(line == "USER::val batches 3" for line in run.stdout.splitlines() if line.startswith("USER::val"))
    doc = run.result()
    assert doc["complete"] is True and doc["FULL"]["n"] == 2
    assert len(doc["other_loaders"]) == 1 and "user_script.py" in doc["other_loaders"][0]


def test_a_tuple_of_dicts_is_one_batch_not_two_devices(run_script) -> None:
    run = run_script(small_config(), "--kind", "dictpair")  # batches of 4
    assert run.returncode == 0, run
    doc = run.result()
    for mode in ("IO", "SYNTHETIC", "FULL"):
        assert doc[mode]["trial_samples"] == [20, 20], (mode, doc[mode]["trial_samples"])
    assert doc["counting"] == (
        "leading dimension of batch[0]['pixels']; the batch sampler makes 4 per batch, so "
        "only the last batch of each pass is counted in the trials"
    )


def test_a_dataloader_batch_sampler_counts_the_short_last_batch_of_each_pass(run_script) -> None:
    # 22 samples in batches of 4: a pass is 4 4 4 4 4 2, so any 6 consecutive batches of IO's own passes
    # hold 22, less a new pass's first (4), whose period holds its start-up and is left out: 18. The loop's epochs
    # are those 6 batches: a FULL window measures the periods inside them (an epoch's last, which ends in the next
    # epoch, is left out), so it holds the full batches only.
    run = run_script(small_config(nbatches=6), "--samples", "22", "--epochs", "40")
    assert run.returncode == 0, run
    doc = run.result()
    assert "only the last batch of each pass is counted" in doc["counting"]
    assert doc["IO"]["trial_samples"] == [18, 18] and doc["IO"]["warmup"]["trial_samples"] in ([18], [22])
    assert doc["FULL"]["trial_samples"] == [24, 24] and doc["FULL"]["warmup"]["trial_samples"] == [24]


def test_dataclass_batches_of_variable_size_are_counted_as_received(run_script) -> None:
    run = run_script(small_config(nbatches=4), "--kind", "dataclass", "--variable", "--samples", "200")
    assert run.returncode == 0, run
    doc = run.result()
    # Sizes cycle 4, 8, 16, 2 (30 per 4 batches); every 4-batch window holds one of each.
    for mode in ("IO", "FULL"):
        assert doc[mode]["trial_samples"] == [30, 30], (mode, doc[mode]["trial_samples"])
    assert doc["counting"] == "leading dimension of batch.inputs"
    # SYNTHETIC yields one cached batch in every warm-up and trial: its size is recorded.
    size = doc["SYNTHETIC"]["batch_samples"]
    assert size in (4, 8, 16, 2)
    assert doc["SYNTHETIC"]["trial_samples"] == [4 * size, 4 * size]
    assert doc["SYNTHETIC"]["warmup"]["trial_samples"] == [4 * size]


def test_objects_holding_tensors_are_counted(run_script) -> None:
    run = run_script(small_config(), "--kind", "object", "--samples", "22")  # a pass: 4 4 4 4 4 2
    assert run.returncode == 0, run
    doc = run.result()
    assert doc["counting"] == "leading dimension of batch.inputs"
    assert all(s in (18, 20) for s in doc["FULL"]["trial_samples"]), doc["FULL"]["trial_samples"]


def test_falling_back_to_batch_size_is_said_once(run_script) -> None:
    run = run_script(small_config(), "--loader", "generic", "--kind", "opaque", "--batch_size", "8")
    assert run.returncode == 0, run
    assert run.stdout.count("hold no tensor or array to count; each is counted as batch_size = 8 samples") == 1
    assert run.result()["FULL"]["trial_samples"] == [40, 40]


def test_a_loader_rebuilt_every_epoch_is_named_as_the_cause(tmp_path, run_script) -> None:
    script = tmp_path / "rebuild.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.data import TensorDataset\n"
        "from benchy.torch import BenchmarkDataLoader\n"
        "data = TensorDataset(torch.randn(40, 4))\n"
        "for epoch in range(10):\n"
        "    loader = BenchmarkDataLoader(data, batch_size=4)  # re-created every epoch\n"
        "    for (x,) in loader:\n"
        "        pass\n"
    )
    run = run_script(small_config(), script=script)
    assert run.returncode == 0, run  # the schedule never finishes: an incomplete run, the script's status its own
    assert run.stdout.count("a loader re-created every epoch never finishes the schedule") == 1, run  # said once
    assert "a script that builds a new loader every epoch never finishes the schedule" in run.stdout  # and at exit
    assert "rebuild.py:6" in run.stdout
    assert run.result()["complete"] is False and run.result()["exit_status"] == 4


@pytest.mark.timing
def test_a_loop_that_fetches_one_batch_ahead_is_detected_and_not_biased(run_script) -> None:
    # A 20 ms step and 5-batch trials: counting the prefetcher's first period of an epoch, which holds
    # no step, would show SYNTHETIC 5/4 of the plain loop's.
    rates = {}
    for loop in ("for", "prefetch"):
        run = run_script(small_config(), "--loop", loop, "--step_ms", "20")
        assert run.returncode == 0, run
        doc = run.result()
        assert doc["complete"] is True and doc["lookahead"] is (loop == "prefetch"), run
        rates[loop] = doc["SYNTHETIC"]["mean"]
        if loop == "prefetch":
            assert run.stdout.count("it fetches one batch ahead") == 1
            assert doc["SYNTHETIC"]["nbatches"] == [5, 5] and doc["FULL"]["trial_samples"] == [20, 20]
            # The FLOPs are counted in a step of their own window (FLOPS_1), after the schedule: a step, not the
            # prefetcher's fetch. This step sleeps: 0 FLOPs, said as such.
            assert doc["compute"]["counted_in"] == "FLOPS_1" and doc["compute"]["flops_per_step"] == 0, doc["compute"]
    # margin: both runs' steps are the same 20 ms sleep, which CPU load does not slow; they part by 15 % only if one
    # run's steps oversleep 3 ms more on average than the other's (0.4 to 0.7 ms mean oversleep measured beside a
    # load average of 5.5 on 2 cores; the 10 % this test once allowed is 2 ms). The bias it catches is 25 %.
    assert rates["prefetch"] == pytest.approx(rates["for"], rel=0.15), rates


def test_an_empty_loader_is_named_as_what_ended_the_benchmark(tmp_path, run_script) -> None:
    script = tmp_path / "empty.py"
    script.write_text(
        "from benchy.torch import BenchmarkGenericIteratorWrapper\n"
        "loader = BenchmarkGenericIteratorWrapper([], batch_size=4)\n"
        "for epoch in range(6):\n"
        "    for batch in loader:\n"
        "        pass\n"
    )
    run = run_script(small_config(), script=script)
    assert run.returncode == 1 and "EmptyLoaderError" in run.stderr, run
    assert "the benchmark ended when trial IO_WARMUP_1 raised (the data loader raised EmptyLoaderError" in run.stdout
    assert "the script stopped after" not in run.stdout  # it did not stop: its loader was empty
    doc = run.result()
    assert doc["interrupted"][0]["trial"] == "IO_WARMUP_1"
    assert all(i["reason"] == "not run: trial IO_WARMUP_1 raised" for i in doc["interrupted"][1:])
