"""User code after the benchmark behaves as without benchy: persistent workers, copies and pickles."""

from __future__ import annotations

import json
import re

import pytest
from helpers import ROOT, small_config

SCRIPTS = ROOT / "tests" / "scripts"


def _epochs(stdout: str) -> dict:
    found = re.findall(r"^USER::epoch (\d+) steps (\d+) samples (\d+) distinct (\d+) len (\d+) workers (\S+)$", stdout, re.M)
    return {int(e): (int(b), int(s), int(d), int(n), w) for e, b, s, d, n, w in found}


@pytest.mark.parametrize("sweep", [False, True], ids=["plain", "sweep"])
def test_persistent_workers_serve_every_epoch_after_the_benchmark(run_script, sweep: bool) -> None:
    config = small_config(nbatches=3, exit_after_tests=False)
    if sweep:
        config["sweep"] = {"num_workers": [0, 1]}
    run = run_script(config, "9", script=SCRIPTS / "persistent_train.py")
    assert run.returncode == 0, run
    assert "is closed" not in run.stderr, run
    epochs = _epochs(run.stdout)
    assert sorted(epochs) == list(range(9)), run
    assert all(e[0] == 12 and e[3] == 12 for e in epochs.values()), epochs  # every epoch whole, len() its own
    # The epochs after the one the last window ended in are plain passes of every sample.
    ended = max(e["window"]["end_epoch"] for e in run.result()["timeline"]["trials"] if e["window"])
    after = [epochs[e] for e in range(ended, 9)]
    assert len(after) >= 2 and [a[:4] for a in after] == [(12, 48, 48, 12)] * len(after), run.stdout
    # The same two workers the user asked for make every later epoch: the pool was kept, not rebuilt.
    pools = {a[4] for a in after}
    assert len(pools) == 1 and len(pools.pop().split(",")) == 2, after
    children = re.search(r"^USER::children (.*)$", run.stdout, re.M).group(1).split(",")
    assert sorted(children) == sorted(after[0][4].split(",")), (children, after)  # sweep loaders' workers are gone
    # Dropped, the loader goes at once with its workers, as a plain DataLoader (no cycle keeps it alive).
    assert "USER::children after the loader is dropped 0" in run.stdout, run
    assert run.result()["complete"] is True


@pytest.mark.parametrize("how", ["deepcopy", "copy", "pickle"])
@pytest.mark.parametrize("generic", [False, True], ids=["dataloader", "generic"])
def test_a_copy_made_before_training_runs_the_benchmark_and_trains_as_the_original(run_script, how: str, generic: bool) -> None:
    args = ["--copy", how, "--epochs", "8", "--after"] + (["--generic"] if generic else [])
    run = run_script(small_config(exit_after_tests=False), *args, script=SCRIPTS / "copied_train.py")
    assert run.returncode == 0, run
    assert "Error" not in run.stderr, run
    assert set(run.trials) >= {"IO_1", "IO_2", "SYNTHETIC_1", "SYNTHETIC_2", "FULL_1", "FULL_2"}, run
    assert run.result()["complete"] is True
    assert "(a copy)" in run.result()["loader"]
    # Epochs after the schedule are full plain passes of the copy, and a copy of the finished copy is plain.
    ended = max(e["window"]["end_epoch"] for e in run.result()["timeline"]["trials"] if e["window"])
    for tag, epoch in [("copy", e) for e in range(ended, 8)] + [("after", 0), ("after", 1)]:
        assert f"USER::{tag} epoch {epoch} samples 40 distinct 40 len 10" in run.stdout, run
    assert run.stdout.count("BENCHY::SUMMARY::FULL average trial throughput") == 1
    assert "measured nothing" not in run.stdout


def test_a_loop_over_a_temporary_wrapper_keeps_it_while_its_epoch_runs(tmp_path) -> None:
    """``for x in Wrapper(loader)``: nothing else holds the wrapper, yet its epoch may need it (benchy's own
    passes between windows); it is kept while the epoch is out, and freed with it."""
    import gc

    import torch
    from torch.utils.data import DataLoader, TensorDataset

    from benchy.torch import BenchmarkGenericIteratorWrapper

    def alive() -> int:
        gc.collect()
        # type(), not isinstance(): a dead weakref.proxy among the objects raises on isinstance().
        return sum(1 for o in gc.get_objects() if issubclass(type(o), BenchmarkGenericIteratorWrapper))

    plain = DataLoader(TensorDataset(torch.arange(24.0)), batch_size=4)  # 6 batches a pass
    cfg = {
        "global": {"exit_after_tests": False, "report_freq": 0, "console": "plain", "output_dir": str(tmp_path)},
        "IO": {"run_benchmark": False},
        "synthetic": {"run_benchmark": False},
        "full": {"nbatches": 2, "ntrials": 1, "nwarmup": 0},
    }
    before = alive()
    seen = []
    for _ in BenchmarkGenericIteratorWrapper(plain, benchy_config=cfg):
        seen.append(alive() - before)
    assert seen == [1] * 6 and alive() == before
    doc = json.loads((tmp_path / "benchy_result.json").read_text())
    assert doc["FULL"]["n"] == 1 and doc["interrupted"] == []
