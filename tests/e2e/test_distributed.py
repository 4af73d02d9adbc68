"""Distributed runs: 2-rank gloo jobs under torch.distributed.run, and faults under a bare launcher."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml
from helpers import ROOT, SUMMARY_RE, Ranks, free_port, launch_ranks, run_torchrun, small_config

SCRIPT = ROOT / "tests" / "scripts" / "dist_script.py"


def write_config(tmp_path: Path, **global_) -> Dict[str, str]:
    cfg = tmp_path / "benchy.yaml"
    cfg.write_text(yaml.safe_dump(small_config(nbatches=10, ntrials=2, nwarmup=1, **global_)))
    env = dict(
        os.environ, BENCHY_CONFIG_FILE=str(cfg), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TMPDIR=str(tmp_path)
    )  # torchrun keeps its logs under TMPDIR
    return env


def torchrun(tmp_path: Path, *args: str, timeout: float = 240, **global_) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(SCRIPT),
        *args,
    ]
    return run_torchrun(cmd, tmp_path, write_config(tmp_path, **global_), timeout)


def summary(out: str) -> Dict[str, float]:
    return {m: float(v) for m, v, _ in SUMMARY_RE.findall(out)}


def result(tmp_path: Path) -> dict:
    import json

    return json.loads((tmp_path / "benchy_result.json").read_text())


@pytest.mark.timing
def test_two_ranks_one_summary_global_throughput_and_clean_exit(tmp_path: Path) -> None:
    proc = torchrun(tmp_path, "--fetch_ms", "2", "--step_ms", "3")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert len(SUMMARY_RE.findall(out)) == 3, out  # rank 0 prints the summary once
    assert out.count("Tests completed") == 1 and "2 ranks: each measures its own trials" in out
    assert "USER::rank 0 done" not in out and "USER::rank 1 done" not in out  # both ended by benchy
    # Per-rank figures (data wait, steps, system, start-up) are rank 0's own, and say so.
    own = [
        x
        for x in out.splitlines()
        if x.startswith(("BENCHY::SUMMARY::DATA_WAIT", "BENCHY::SUMMARY::STEPS", "BENCHY::SUMMARY::STARTUP"))
    ]
    assert len(own) == 5 and all(x.endswith(" [rank 0]") for x in own), own
    doc = result(tmp_path)
    assert doc["nranks"] == 2 and doc["environment"]["world_size"] == 2 and doc["complete"] is True
    assert doc["compute"]["skipped"].startswith("not counted with 2 ranks")
    for mode in ("IO", "SYNTHETIC", "FULL"):
        ranks = doc[mode]["ranks"]
        assert len(ranks["trial_throughput"]) == 2 and all(len(r) == 2 for r in ranks["trial_throughput"])
        assert all(s == [40, 40] for s in ranks["trial_samples"])  # no step counted with several ranks
        assert all(x is not None and x >= 0 for x in ranks["spread"])
        # Global = samples of all ranks / slowest rank's time: about twice one rank's.
        for k, global_rate in enumerate(doc[mode]["trial_throughput"]):
            per_rank = ranks["trial_throughput"][k]
            assert global_rate == pytest.approx(sum(ranks["trial_samples"][k]) / max(ranks["trial_time"][k]))
            # margin: none; arithmetic on the same trial's figures (each rank counts 40 samples: the global rate is
            # 80 / the slowest time, between 2x the slowest rank's 40 / time and 2x the fastest's), no load moves it.
            assert 1.8 * min(per_rank) <= global_rate <= 2.0 * max(per_rank) + 1e-9
    # IO involves no collective: two ranks load at about twice one rank's nominal 4 samples / 2 ms.
    # margin: a sleep never ends early, so the upper bound holds under any load; the lower (half the nominal) fails
    # only if each 2 ms fetch oversleeps 2 ms on average (0.27 ms measured beside a load average of 5.5 on 2 cores;
    # the 0.7 this test once asked for fell at 0.86 ms). It still fails where IO's time holds the 3 ms step or a
    # collective (4 samples / 5 ms a rank: 0.4 of the nominal).
    io = summary(out)["IO"]
    assert 0.5 * (2 * 4 / 0.002) <= io <= 1.05 * (2 * 4 / 0.002), f"IO {io:.1f} samples/s, expected about 4000"


@pytest.mark.timing
def test_straggler_is_named(tmp_path: Path) -> None:
    proc = torchrun(tmp_path, "--slow_rank", "1", "--slow_factor", "1.6", "--no_allreduce")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = re.findall(r"^BENCHY::SUMMARY::STRAGGLER (\w+): rank (\d) is ([0-9.]+) % slower", proc.stdout, re.M)
    assert {mode for mode, _, _ in lines} == {"IO", "SYNTHETIC", "FULL"}, proc.stdout
    # Rank 1's fetch and step sleep 1.6x rank 0's: 60 % slower. margin: an oversleep ``o`` a sleep, the same on both
    # ranks, reads IO's (3.2 + o) / (2 + o): under the lower bound 25 % only at o > 3 ms on average (0.27 ms measured
    # beside a load average of 5.5 on 2 cores; the 40 % this test once asked for fell at o = 1 ms); above 80 % only
    # if rank 1 alone is descheduled an eighth of its time more than rank 0. Fails where the slower rank is not the
    # one named, or no rank is (0 %).
    assert all(rank == "1" and 25.0 < float(pct) < 80.0 for _, rank, pct in lines), lines
    assert "rank 1 is" in result(tmp_path)["FULL"]["ranks"]["straggler"]


def test_barrier_and_transparent_epochs(tmp_path: Path) -> None:
    proc = torchrun(tmp_path, "--epochs", "8", use_distributed_barrier=True, exit_after_tests=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "USER::rank 0 done" in proc.stdout and "USER::rank 1 done" in proc.stdout
    assert len(SUMMARY_RE.findall(proc.stdout)) == 3


def test_adaptive_schedule_ranks_agree_on_warmups_and_stopping(tmp_path: Path) -> None:
    # Rank 1's step settles over its first epochs, rank 0's is steady from the start: the ranks
    # must still run the same trials (the slowest-settling rank decides), or they would deadlock.
    auto = {"nbatches": 10, "ntrials": "auto", "nwarmup": "auto"}
    cfg = tmp_path / "auto.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {"global": {"report_freq": 0, "dist_timeout": 30}, "IO": {"ntrials": "auto"}, "synthetic": auto, "full": auto}
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(SCRIPT),
        "--decay_rank",
        "1",
        "--epochs",
        "30",
    ]
    env = dict(
        os.environ, BENCHY_CONFIG_FILE=str(cfg), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TMPDIR=str(tmp_path)
    )  # torchrun keeps its logs under TMPDIR
    proc = run_torchrun(cmd, tmp_path, env, 240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = result(tmp_path)
    assert doc["complete"] is True and doc["nranks"] == 2
    assert doc["schedule"]["warmups"]["SYNTHETIC"] >= 2, doc["schedule"]  # rank 1's decay decided
    # How warm-up ended is said, whichever way: steady, over with a small rise (noise), or not steady.
    assert re.search(r"SYNTHETIC warm-up: (steady|over|not steady) after", proc.stdout), proc.stdout
    assert doc["schedule"]["stop_reason"] is not None


def bare_launch(
    tmp_path: Path, args: List[str], timeout_s: float, rank_env: Optional[List[Dict[str, str]]] = None, nranks: int = 2, **global_
) -> Ranks:
    """Ranks started as Slurm's srun would: no agent that kills the others on a failure, rank 0's process holding
    the job's store (``helpers.launch_ranks``)."""
    env = write_config(tmp_path, dist_timeout=timeout_s, **global_)
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(nranks))
    envs = [dict(env, RANK=str(rank), LOCAL_RANK=str(rank), **(rank_env[rank] if rank_env else {})) for rank in range(nranks)]
    return launch_ranks(SCRIPT, args, tmp_path, envs)


def test_killed_rank_ends_the_job_with_a_clear_error_within_the_bounded_wait(tmp_path: Path) -> None:
    # Epochs of 100 batches: SYNTHETIC_WARMUP_1 takes steps 0-10 (from the epoch's step 0 its first period is
    # left out), FULL_WARMUP_1 11-20, FULL_1 21-30, SYNTHETIC_1 31-40; rank 1 dies at step 22, FULL_1's
    # second. Rank 0 must not hang.
    start = time.monotonic()
    procs = bare_launch(tmp_path, ["--die_rank", "1", "--die_at", "0:22", "--no_allreduce"], timeout_s=5)
    rank0, rank1 = procs.finish(120)
    elapsed = time.monotonic() - start
    code, out, err = rank0
    assert code == 1, out + err
    assert "benchy.DistributedError: benchy: trial FULL_1: the exchange of the ranks' trial results failed after" in err, err
    assert "(bounded wait: dist_timeout = 5 s); rank(s) 1 did not report" in err
    assert elapsed < 60  # margin: the bounded wait is 5 s (dist_timeout) plus start-up: seconds of load would not cross 60
    assert rank1[0] == -9
    doc = result(tmp_path)  # what was measured before the fault is kept
    assert doc["complete"] is False and doc["IO"]["n"] == 2 and doc["SYNTHETIC"]["n"] == 0
    # ... and printed, as a single-rank run prints it.
    assert set(summary(out)) == {"IO"}, out
    assert "BENCHY::SUMMARY::SYNTHETIC average trial throughput: n/a (no completed trial)" in out
    assert "BENCHY::SUMMARY::FULL average trial throughput: n/a (no completed trial)" in out
    assert "trial FULL_1 did not count" in out and "the ranks could not exchange its results" in out


@pytest.mark.parametrize("lists", [64, 2], ids=["all-gather", "tree summary"])
def test_a_killed_rank_among_eight_is_named_by_every_survivor_within_the_bounded_wait(tmp_path: Path, lists: int) -> None:
    # Eight ranks on two cores; rank 5 dies at FULL_1's second step. Every other rank stops within
    # dist_timeout (failures cascade: the last ranks learn of it when their wait runs out) plus the
    # second it may take to read the missing ranks, each naming rank 5, the one rank that never entered
    # the exchange (found by halving the range). With per-rank lists (an all-gather ring) and past
    # dist_rank_lists (the tree of point-to-point messages).
    start = time.monotonic()
    procs = bare_launch(
        tmp_path, ["--die_rank", "5", "--die_at", "0:22", "--no_allreduce"], timeout_s=10, nranks=8, dist_rank_lists=lists
    )
    outs = procs.finish(240)
    elapsed = time.monotonic() - start
    assert outs[5][0] == -9
    for rank, (code, out, err) in enumerate(outs):
        if rank == 5:
            continue
        assert code == 1, (rank, out[-2000:], err[-2000:])
        what = "trial results" if lists == 64 else "trial summaries"
        assert f"trial FULL_1: the exchange of the ranks' {what} failed after" in err, (rank, err[-2000:])
        took = float(err.split(f"the exchange of the ranks' {what} failed after ")[1].split(" s ")[0])
        # dist_timeout, plus reading who is missing (at most 2.5 s), plus slack. margin: both are deadlines on the
        # clock, not CPU work; 1.5 s is left for a rank to be scheduled among 8 idle waiters (milliseconds under load).
        assert took <= 14, (rank, took)
        assert "(bounded wait: dist_timeout = 10 s); rank(s) 5 did not report" in err, (rank, err[-2000:])
    assert elapsed < 200, elapsed  # margin: eight start-ups (seconds each under load) and a 10 s wait: several times over
    assert result(tmp_path)["nranks"] == 8


def test_past_the_rank_lists_bound_the_ranks_reduce_a_summary_and_the_slowest_is_named(tmp_path: Path) -> None:
    # Four ranks with dist_rank_lists: 2: each trial is reduced up and down a binomial tree instead of
    # gathered; rank 2 loads three times slower (IO shows it: no collective in its loop).
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "4",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(SCRIPT),
        "--fetch_ms",
        "2",
        "--step_ms",
        "3",
        "--slow_rank",
        "2",
        "--slow_factor",
        "3",
    ]
    proc = run_torchrun(cmd, tmp_path, write_config(tmp_path, dist_rank_lists=2), 300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = result(tmp_path)
    assert doc["nranks"] == 4 and doc["complete"] is True
    for mode in ("IO", "SYNTHETIC", "FULL"):
        ranks = doc[mode]["ranks"]
        assert ranks["summarised"] is True and len(ranks["trials"]) == 2
        for k, trial in enumerate(ranks["trials"]):
            assert trial["ranks"] == 4 and trial["fastest_time"] <= trial["mean_time"] <= trial["slowest_time"]
            # Global throughput: the samples of all ranks over the slowest rank's time.
            assert doc[mode]["trial_samples"][k] == 4 * 4 * 10
            assert doc[mode]["trial_time"][k] == pytest.approx(trial["slowest_time"])
    assert all(t["slowest_rank"] == 2 for t in doc["IO"]["ranks"]["trials"])
    assert doc["IO"]["ranks"]["straggler"].startswith("IO: rank 2 is ")
    assert "BENCHY::SUMMARY::STRAGGLER IO: rank 2 is " in proc.stdout
    # Each rank's start is not listed past the bound: the timeline holds rank 0's, and the trace says so.
    assert all(e["rank_started"] is None for e in doc["timeline"]["trials"])
    trace = subprocess.run(
        [sys.executable, "-m", "benchy", "trace", "benchy_result.json", "-o", "t.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert trace.returncode == 0 and "note: rank 0's trials only: the run's 4 ranks are past dist_rank_lists" in trace.stdout, (
        trace.stdout + trace.stderr
    )


def test_rank_leaving_the_schedule_early_is_named(tmp_path: Path) -> None:
    # Epochs of 12 batches: rank 1 stops after 2 epochs (24 steps), inside FULL_1.
    procs = bare_launch(tmp_path, ["--leave_rank", "1", "--leave_after", "2", "--batches", "12", "--no_allreduce"], timeout_s=5)
    rank0, rank1 = procs.finish(120)
    assert rank1[0] == 0  # it simply stopped asking for epochs: an incomplete run on that rank, its status its own
    assert rank0[0] == 1 and "trial FULL_1" in rank0[2] and "rank(s) 1 did not report" in rank0[2], rank0[2][-3000:]


def test_killed_rank_under_torchrun_fails_the_job(tmp_path: Path) -> None:
    start = time.monotonic()
    proc = torchrun(tmp_path, "--die_rank", "1", "--die_at", "0:32", "--no_allreduce", timeout=120, dist_timeout=5)
    assert proc.returncode != 0
    assert "USER::rank 1 killing itself" in proc.stdout
    assert time.monotonic() - start < 90  # margin: torchrun's start-up and a 5 s wait (about 20 s under load): 4x


def test_ddp_example_under_torchrun(tmp_path: Path) -> None:
    env = write_config(tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        str(ROOT / "examples" / "ddp_train.py"),
        "--enable_benchy",
        "--dataset_size",
        "512",
        "--batch_size",
        "8",
    ]
    proc = run_torchrun(cmd, tmp_path, env, 300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(summary(proc.stdout)) == {"IO", "SYNTHETIC", "FULL"}
    assert result(tmp_path)["nranks"] == 2


def test_ranks_with_different_schedules_stop_before_any_trial(tmp_path: Path) -> None:
    envs = []
    for rank, (nbatches, ntrials) in enumerate([(10, 2), (20, 3)]):
        cfg = tmp_path / f"rank{rank}.yaml"
        cfg.write_text(
            yaml.safe_dump(
                dict(
                    small_config(nbatches=nbatches, ntrials=ntrials, nwarmup=1),
                    **{"global": {"report_freq": 0, "dist_timeout": 20}},
                )
            )
        )
        envs.append({"BENCHY_CONFIG_FILE": str(cfg)})
    procs = bare_launch(tmp_path, ["--no_allreduce"], timeout_s=20, rank_env=envs)
    outs = procs.finish(120)
    for code, stdout, stderr in outs:
        assert code == 1, stdout + stderr
        assert "benchy.DistributedError: benchy: the ranks were given different schedules: " in stderr, stderr
        assert "IO.nbatches (rank 0: 10, rank 1: 20)" in stderr and "IO.ntrials (rank 0: 2, rank 1: 3)" in stderr
        assert "Trial Throughput" not in stdout  # nothing was measured, nothing combined


def test_a_rank_whose_step_raises_is_named_by_the_ranks_the_launcher_stops(tmp_path: Path) -> None:
    # Rank 1's step raises at step 22 (FULL_1's second); torchrun then stops rank 0 with SIGTERM. Before it
    # ended, rank 1 said so in the job's store: rank 0 names it in its warning and in the JSON.
    proc = torchrun(
        tmp_path, "--raise_rank", "1", "--die_at", "0:22", "--no_allreduce", "--step_ms", "20", timeout=120, dist_timeout=20
    )
    assert proc.returncode != 0
    reason = "RuntimeError: rank 1's step failed at epoch 0 step 22"
    assert reason in proc.stderr
    # Rank 0 is in FULL_1, or between FULL_WARMUP_1 and FULL_1 (it writes the JSON there, rank 1 does not).
    warning = re.search(
        r"^BENCHY::WARNING::Message: SIGTERM received (during trial FULL_1 \(\d+ of 10 steps measured\): it "
        r"is not counted\.|between trials\.) (.*)$",
        proc.stdout,
        re.M,
    )
    assert warning is not None, proc.stdout[-3000:]
    assert warning.group(2) == (
        f"Rank 1 failed first ({reason}); the launcher stopped the others. The results measured so far follow."
    )
    doc = result(tmp_path)
    assert doc["failed_ranks"] == [{"rank": 1, "reason": reason}] and doc["complete"] is False
    if warning.group(1).startswith("during"):
        (lost,) = [i for i in doc["interrupted"] if i["trial"] == "FULL_1"]
        assert lost["reason"].startswith("interrupted by SIGTERM after ") and f"rank 1 failed first ({reason})" in lost["reason"]
