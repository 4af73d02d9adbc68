"""System metrics per trial: the sampler tells a CPU-bound loader from one that waits (sleeps)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from helpers import small_config, trial_result, until_done, verdict_of

from benchy import Mode, load_config
from benchy.core.results import SystemFigures
from benchy.core.verdict import system_means
from benchy.measure.system import SystemSampler, available_cores
from benchy.torch import BenchmarkDataLoader


class Work(torch.utils.data.Dataset):
    """Each batch costs ``seconds`` in the worker: spinning on the CPU, or asleep (like I/O)."""

    def __init__(self, seconds: float, spin: bool) -> None:
        self.seconds, self.spin = seconds, spin

    def __len__(self) -> int:  # 64 batches of 4: the loop's epochs end soon after the schedule
        return 256

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.zeros(2)

    def __getitems__(self, indices: List[int]) -> List[torch.Tensor]:
        if self.spin:
            end = time.perf_counter() + self.seconds
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(self.seconds)
        return [torch.zeros(2) for _ in indices]


def run(tmp_path: Path, spin: bool, seconds: float = 0.016, io_batches: int = 20, **global_: Any) -> Any:
    mode = {"nbatches": 20, "ntrials": 3, "nwarmup": 1}
    g: Dict[str, Any] = {"exit_after_tests": False, "output_dir": str(tmp_path), "console": "plain", "report_freq": 0}
    g.update(global_)
    loader = BenchmarkDataLoader(
        Work(seconds, spin),
        batch_size=4,
        num_workers=2,
        persistent_workers=True,
        benchy_config={"global": g, "IO": dict(mode, nbatches=io_batches), "synthetic": mode, "full": mode},
    )
    until_done(loader, lambda: time.sleep(0.001))
    assert loader.benchy.done
    # The loop stops mid-epoch: its persistent workers are shut down here, as a finished loop's are. Left to the
    # garbage collector (the loader is in reference cycles), they were shut down in whichever later test its
    # collection fell, where the suite's worker twice stalled 10 and 20 s in torch's 5 s worker joins.
    iterator = loader._iterator
    if iterator is not None:
        iterator._shutdown_workers()
    return loader


@pytest.mark.timing
def test_the_sampler_tells_a_cpu_bound_loader_from_a_waiting_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # IO trials long enough (80 batches, 0.64 s or more) for the kernel's counters to tell what other processes
    # took of the cores, which the loader is judged against: trials of 20 (0.2 s) could not, and on a shared
    # machine the spinning loader was judged against both cores and found not CPU-bound.
    spinning = run(tmp_path / "spin", spin=True, io_batches=80)
    out_spin = capsys.readouterr().out
    # Asleep longer per batch: fewer batches per second, so less of the loader's own machinery
    # (pickling, shared memory) on the CPU, far from the 50 % line on a loaded machine.
    sleeping = run(tmp_path / "sleep", spin=False, seconds=0.032)
    out_sleep = capsys.readouterr().out
    busy = system_means(spinning.benchy.results.measured(Mode.IO))
    idle = system_means(sleeping.benchy.results.measured(Mode.IO))
    assert busy is not None and idle is not None
    others = f"{busy['other_cores_busy']:.2f}" if "other_cores_busy" in busy else "unknown"
    with capsys.disabled():
        print(
            f"IO trials: spinning loader {busy['cpu_cores_busy']:.2f} cores busy, sleeping loader "
            f"{idle['cpu_cores_busy']:.2f} (of {busy['cpu_cores']:g}; others took {others}); processes {busy['processes']:g}"
        )
    assert busy["processes"] >= 3  # the process and its 2 workers
    # Against the cores other processes left (a shared machine): a spinning loader keeps them busy.
    left = busy["cpu_cores"] - busy.get("other_cores_busy", 0.0)  # absent: trials too short to tell
    # margin: against the cores others left, read over the same trial (others 1.22 cores, the loader 0.77 of the 0.78
    # left beside two busy loops); the sleeping loader sleeps 32 ms a batch, its CPU a few per cent of a core, which a
    # CPU slowed 2x by load leaves far under half.
    assert busy["cpu_cores_busy"] >= 0.85 * left and idle["cpu_util"] < 0.5, (busy, idle)
    verdict_spin, verdict_sleep = verdict_of(out_spin), verdict_of(out_sleep)
    assert "data loading limits training" in verdict_spin and "the loader is CPU-bound" in verdict_spin, verdict_spin
    assert "the loader is neither CPU- nor storage-bound here" in verdict_sleep, verdict_sleep
    assert any(x.startswith("BENCHY::SUMMARY::SYSTEM IO CPU ") for x in out_spin.splitlines())


def test_system_metrics_false_samples_nothing(tmp_path: Path) -> None:
    loader = run(tmp_path, spin=False, system_metrics=False)
    assert all(t.system is None for t in loader.benchy.results.trials)


def test_system_metrics_settings_are_checked() -> None:
    with pytest.raises(Exception, match=r"global.system_metrics_hz: got 0 \(int\); expected a number of readings"):
        load_config(overrides={"global": {"system_metrics_hz": 0}})


@pytest.mark.timing
def test_a_sampler_counts_the_cpu_time_of_its_process() -> None:
    import os

    sampler = SystemSampler(hz=50)
    before, wall = os.times(), time.perf_counter()
    sampler.start()
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        pass
    figures = sampler.stop()
    after, wall = os.times(), time.perf_counter() - wall
    # A Python loop holding the GIL leaves the thread few readings; CPU time is a difference of
    # cumulative counters, so it does not depend on how many readings there were.
    assert figures is not None and figures.readings is not None and figures.readings >= 1
    # One thread spinning: the cores it kept busy are what the process's own CPU time says (a core on
    # a quiet machine, less where other processes took their share), whatever the machine's load.
    own = (after.user + after.system - before.user - before.system) / wall
    # margin: both are this process's CPU time over the same 0.3 s (the sampler's first and last readings against
    # os.times around it): they part only by the few milliseconds between the readings, whatever the load.
    assert 0.7 * own <= (figures.cpu_cores_busy or 0) <= 1.3 * own + 0.05, (figures, own)
    assert figures.rss_max_bytes > 10_000_000 and sampler.stop() is None


def test_gpu_readings_are_averaged_over_the_trial_and_shown() -> None:
    from benchy.results.summary import system_text

    class FakeGpu:
        def __init__(self) -> None:
            self.k = 0

        def read(self) -> Dict[str, float]:
            self.k += 1
            return {"gpu_util": 0.5 if self.k % 2 else 0.7, "gpu_memory_bytes": 2e9, "gpu_power_w": 200.0}

        def energy_mj(self) -> None:  # a device without an energy counter
            return None

    sampler = SystemSampler(hz=100, gpu=FakeGpu)
    sampler.start()
    time.sleep(0.1)
    figures = sampler.stop()
    assert figures is not None and 0.5 <= (figures.gpu_util or 0) <= 0.7 and figures.gpu_power_w == 200.0
    text = system_text(Mode.FULL, {**figures.numbers(), "gpu_util": 0.6})
    assert text.endswith(", GPU 60 % busy, 2.0 GB, 200 W (means over its trials)")


def test_with_several_ranks_the_data_wait_and_h2d_are_rank_0s_own() -> None:
    import dataclasses

    from benchy.core.results import RunResults
    from benchy.results.schema import h2d_block

    own = trial_result(Mode.FULL, 1, 32, 1.0, wait_seconds=0.5)
    # Combined over 2 ranks: all samples over the slowest rank's 2 s; the step data stay rank 0's.
    combined = dataclasses.replace(own, samples=64, seconds=2.0, rank_samples=(32, 32), rank_seconds=(1.0, 2.0))
    assert combined.data_wait == pytest.approx(0.5) and combined.own_throughput == pytest.approx(32.0)
    io = [
        trial_result(Mode.IO, k, 64, 4.0, rank_samples=(32, 32), rank_seconds=(1.0, 4.0)) for k in (1, 2)
    ]  # the job: 64 samples in 4 s, 16/s; rank 0 alone: 32/s
    h2d = [trial_result(Mode.IO, k, 16, 1.0, variant="H2D") for k in (1, 2)]
    results = RunResults(io, h2d=h2d, h2d_device="cuda:0")
    assert h2d_block(results).vs_io == pytest.approx(0.5)  # 16/s against rank 0's 32/s, not the job's 16/s
    assert h2d[0].label == "H2D_1"


def burn(n: int) -> List[subprocess.Popen]:
    """``n`` processes spinning on the CPU: another job on the machine (not the script's children). At the lowest
    priority (nice 19, which benchy counts as busy like any other work): they take what the machine leaves idle,
    a core each when it is otherwise quiet, and little from the suite's other tests beside this one, which keep
    the cores busy themselves then."""
    spin = "import os\nos.nice(19)\nwhile True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]


# Not a timing test: more load beside it only makes the trials busier, so a failure is never the machine's (a timing
# test's failure on a busy machine is a skip, and the suite keeps the machine busy: it would never fail there).
def test_trials_on_a_busy_machine_are_flagged_and_the_verdict_says_so(run_script) -> None:
    config = small_config(nbatches=40)
    args = ["--fetch_ms", "10", "--step_ms", "20", "--samples", "800", "--epochs", "3"]  # trials of 0.4 s (IO) to 1.2 s (FULL)
    burners = burn(max(1, available_cores() // 2))  # half the cores: busy beyond busy_machine_share (a quarter)
    try:
        time.sleep(0.5)
        busy = run_script(config, *args)
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()
    assert busy.returncode == 0, busy
    doc = busy.result()
    counted = [label for label in busy.trials if "WARMUP" not in label]
    assert sorted(doc["disturbed"]) == sorted(counted), doc["disturbed"]
    for mode in ("IO", "SYNTHETIC", "FULL"):
        share = 0.25 * available_cores()  # busy_machine_share of the cores
        assert all(s["disturbed"] and s["other_cores_busy"] > share for s in doc[mode]["system"]), doc[mode]["system"]
    warned = [
        x
        for x in busy.stdout.splitlines()
        if x.startswith("BENCHY::WARNING::Message: trial ") and "ran on a busy machine: other processes kept" in x
    ]
    # Every trial with system figures says so, warm-ups too: the counted ones, and the emulated-step trials and
    # the step-parts window that check the what-if model. The stage trials have none. CONTENTION_1's window (20
    # steps, 0.4 s) runs four processes (the script's, the loader's copy and its two workers): on fewer than 4
    # cores, too many for the counters' ticks to tell the other processes' share in that time (no figure, no
    # warning); on more, it has its figure and says so.
    measured = [
        label for label in re.findall(r"BENCHY::([A-Z0-9_]+)::Trial Throughput", busy.stdout) if not label.startswith("STAGES")
    ]
    named = [x.split("trial ", 1)[1].split(" ", 1)[0] for x in warned]
    assert len(busy.trials) == 9 and len(measured) == 14 and "CONTENTION_1" in measured, measured
    assert len(named) == len(set(named)) and set(measured) - {"CONTENTION_1"} <= set(named) <= set(measured), (named, measured)
    summary = next(x for x in busy.stdout.splitlines() if x.startswith("BENCHY::SUMMARY::BUSY "))
    assert summary.startswith(f"BENCHY::SUMMARY::BUSY {len(counted)} of {len(counted)} trials ran on a busy machine")
    verdict = verdict_of(busy.stdout)
    assert (
        f"{len(counted)} of the {len(counted)} trials it rests on ran on a busy machine" in verdict
        and "rerun on a quiet machine, or with ntrials: auto" in verdict
    ), verdict

    # The same run alone, when this machine is otherwise idle (measured here as benchy does:
    # the machine's busy CPU time less the script's own), says nothing of a busy machine. Not run where a
    # second's look finds the machine busy already (other tests beside this one): it could not be checked.
    import psutil

    before = sum(psutil.cpu_times()[:3])
    time.sleep(1.0)
    if sum(psutil.cpu_times()[:3]) - before >= 0.1 * available_cores():
        print("the machine was not idle before the quiet run: not run")
        return
    machine, children, start = sum(psutil.cpu_times()[:3]), os.times(), time.monotonic()
    # A new interpreter, this process's child (not the fork server's), so that its CPU time is told from the
    # machine's other work.
    quiet = run_script(config, *args, env={"BENCHY_TEST_NEW_INTERPRETER": "1"})
    after = os.times()
    own = (after.children_user + after.children_system) - (children.children_user + children.children_system)
    others = (sum(psutil.cpu_times()[:3]) - machine - own) / (time.monotonic() - start)
    assert quiet.returncode == 0, quiet
    if others < 0.1 * available_cores():
        assert quiet.result()["disturbed"] == [], (others, quiet.stdout)
        assert "BUSY" not in quiet.stdout and "busy machine" not in quiet.stdout
    else:
        print(f"the machine was not idle during the quiet run (other processes: {others:.2f} cores): not checked")


def test_a_busy_machine_in_numbers(tmp_path: Path) -> None:
    from benchy.measure.system import TICK_S, disturbed

    base = {"seconds": 1.0, "cpu_cores": 4, "processes": 3}
    slack = 2 * TICK_S * (4 + 3)  # one tick per core and per process read, at each end of the trial
    assert disturbed(SystemFigures(**{**base, "other_cores_busy": 1.0 + slack + 0.01}), 0.25)
    assert not disturbed(SystemFigures(**{**base, "other_cores_busy": 1.0 + slack - 0.01}), 0.25)  # not certain
    assert not disturbed(SystemFigures(**{**base, "seconds": 0.01, "other_cores_busy": 3.0}), 0.25)  # too short
    assert not disturbed(SystemFigures(0.0, cpu_cores=4), 0.25)  # nothing read
    assert not disturbed(SystemFigures(**{**base, "other_cores_busy": None}), 0.25)  # a trial too short to tell
    with pytest.raises(Exception, match=r"global.busy_machine_share: got 0 \(int\); expected a share of the cores"):
        load_config(overrides={"global": {"busy_machine_share": 0}})
