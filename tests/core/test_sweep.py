"""Loader sweep: the settings tried, the choice of best and recommended, and real sweeps of a
DataLoader in a user's script (throughput growing with workers, a failing setting, sweep_apply,
no worker left behind)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import List

import pytest
from helpers import check_trace, children, small_config, trial_result

from benchy import ConfigError, Mode, load_config
from benchy.core.results import RunResults
from benchy.core.sweep import (
    Setting,
    SettingResult,
    apply_cap,
    auto_workers,
    best,
    cheapest_enough,
    expand,
    feed,
    memory_cap,
    smallest_within,
)
from benchy.results.schema import sweep_block
from benchy.results.summary import sweep_line


def result(setting: Setting, rates: List[float]) -> SettingResult:
    trials = [trial_result(Mode.IO, k, int(rate), 1.0, variant="SWEEP1") for k, rate in enumerate(rates, 1)]
    return SettingResult(setting, trials)


def test_auto_workers_go_up_to_the_usable_cores() -> None:
    assert auto_workers(1) == [0, 1]
    assert auto_workers(2) == [0, 1, 2]
    assert auto_workers(6) == [0, 1, 2, 4, 6]
    assert auto_workers(16) == [0, 1, 2, 4, 8, 16]


def test_expand_orders_by_cost_and_drops_prefetch_without_workers() -> None:
    config = load_config(
        overrides={"sweep": {"num_workers": [2, 0], "pin_memory": [True, False], "prefetch_factor": [4, 2]}}, environ={}
    ).sweep
    settings = expand(config, Setting(0, False, None), cores=2)
    assert [s.words() for s in settings] == [
        "num_workers=0, pin_memory=False",
        "num_workers=0, pin_memory=True",
        "num_workers=2, pin_memory=False, prefetch_factor=2",
        "num_workers=2, pin_memory=False, prefetch_factor=4",
        "num_workers=2, pin_memory=True, prefetch_factor=2",
        "num_workers=2, pin_memory=True, prefetch_factor=4",
    ]
    # Keys left out keep the loader's own values.
    only = load_config(overrides={"sweep": {"num_workers": "auto"}}, environ={}).sweep
    assert expand(only, Setting(4, True, 3), cores=2) == [Setting(0, True, None), Setting(1, True, 3), Setting(2, True, 3)]


def test_best_smallest_within_and_cheapest_that_feeds() -> None:
    results = [
        result(Setting(0, False, None), [100, 102]),
        result(Setting(1, False, 2), [180, 182]),
        result(Setting(2, False, 2), [196, 198]),
        result(Setting(4, False, 2), [200, 202]),
    ]
    failed = SettingResult(Setting(8, False, 2), error="OSError: no shared memory")
    results.append(failed)
    assert best(results).setting == Setting(4, False, 2)  # type: ignore[union-attr]
    assert smallest_within(results).setting == Setting(2, False, 2)  # type: ignore[union-attr]  # 197 >= 0.95 x 201
    assert cheapest_enough(results, synthetic=150.0).setting == Setting(1, False, 2)  # type: ignore[union-attr]
    assert cheapest_enough(results, synthetic=190.0) is None  # 1.1 x 190 = 209 > 201
    assert sweep_line(results) == (
        "best num_workers=4, pin_memory=False, prefetch_factor=2: "
        "201.000 +/- 12.706 samples/s; smallest within 5 % of best: num_workers=2, "
        "pin_memory=False, prefetch_factor=2"
    )
    fed = feed(results, 150.0)
    assert fed is not None and fed.found is not None and fed.found.setting == Setting(1, False, 2)
    assert "is num_workers=1, pin_memory=False, prefetch_factor=2 (181.000 +/- 12.706 samples/s, 1.21x)" in fed.words()
    starved = feed(results, 190.0)
    assert starved is not None and starved.found is None and starved.best is not None
    assert "none of the swept loader settings feeds the step" in starved.words()
    assert sweep_line([failed]) is None and feed([failed], 100.0) is None


def test_settings_whose_workers_do_not_fit_the_memory_cap_are_never_recommended() -> None:
    results = [
        result(Setting(1, False, 2), [180, 182]),
        result(Setting(2, False, 2), [196, 198]),
        result(Setting(4, False, 2), [200, 202]),
    ]
    for r, mb in zip(results, (300, 600, 1200)):
        r.memory = mb * 10**6
    # 8 GB available, 16 GB in all, the trainer at 1 GB: room for it is 10 % of 16 GB, so 6.4 GB for the workers.
    assert memory_cap(8 * 10**9, 16 * 10**9, 10**9) == 8 * 10**9 - int(1.6e9)
    assert memory_cap(8 * 10**9, 16 * 10**9, 5 * 10**9) == 3 * 10**9  # as much again as the trainer holds
    apply_cap(results, 10**9)
    assert [r.over_cap for r in results] == [False, False, True]
    assert best(results).setting == Setting(2, False, 2)  # type: ignore[union-attr]
    assert cheapest_enough(results, synthetic=150.0).setting == Setting(1, False, 2)  # type: ignore[union-attr]
    line = sweep_line(results, 10**9)
    assert line is not None and line.endswith(
        "left out over the workers' memory cap of 1.00 GB (available memory "
        "less room for the training process): num_workers=4, "
        "pin_memory=False, prefetch_factor=2"
    )
    block = sweep_block(RunResults(sweep=results))
    assert block is not None and block.settings[2].over_memory_cap is True and block.settings[2].workers_memory_bytes == 12e8


@pytest.mark.parametrize(
    "sweep,expected",
    [
        ({"num_workers": [1, 1]}, "sweep.num_workers: got [1, 1] (list); expected a list of distinct worker counts"),
        ({"num_workers": "all"}, "sweep.num_workers: got 'all' (str)"),
        ({"pin_memory": ["yes"]}, "sweep.pin_memory: got ['yes'] (list); expected a list of distinct booleans"),
        ({"prefetch_factor": [0]}, "sweep.prefetch_factor: got [0] (list); expected a list of distinct integers from 1"),
        (
            {"persistent_workers": [True]},
            "sweep.persistent_workers: unknown key (allowed: num_workers, pin_memory, prefetch_factor)",
        ),
    ],
)
def test_bad_sweep_settings_are_named(sweep: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides={"sweep": sweep}, environ={})
    assert expected in str(err.value)


ROW = re.compile(
    r"^BENCHY::SWEEP::(num_workers=\d+, pin_memory=\w+(?:, prefetch_factor=\d+)?) +([0-9.]+) +([0-9.]+)"
    r" +(\d+) +(\d+) *(.*)$",
    re.M,
)


@pytest.mark.timing
def test_sweep_of_a_loader_whose_throughput_grows_with_workers(run_script) -> None:
    # 4 samples x 6 ms of sleep per batch: workers overlap the sleeps, even on 2 cores.
    config = dict(small_config(nbatches=12, ntrials=3, nwarmup=1), sweep={"num_workers": [0, 1, 2]})
    run = run_script(config, "--fetch_ms", "6", "--step_ms", "1", "--samples", "400", "--print_children", "--epochs", "8")
    assert run.returncode == 0, run
    rows = {m[0]: (float(m[1]), float(m[2]), int(m[3]), m[5]) for m in ROW.findall(run.stdout)}
    assert list(rows) == [
        "num_workers=0, pin_memory=False",
        "num_workers=1, pin_memory=False, prefetch_factor=2",
        "num_workers=2, pin_memory=False, prefetch_factor=2",
    ], run.stdout
    doc = run.result()["sweep"]
    # Each setting's workers' own memory (unique set sizes), and the cap they are held to.
    memory = {s["settings"]["num_workers"]: s["workers_memory_bytes"] for s in doc["settings"]}
    assert memory[0] == 0 and 0 < memory[1] < memory[2], memory
    assert doc["memory_cap_bytes"] > 0 and not any(s["over_memory_cap"] for s in doc["settings"])
    means = {s["settings"]["num_workers"]: s["mean"] for s in doc["settings"]}
    assert all(len(s["trial_throughput"]) == 3 and len(s["warmup"]["trial_throughput"]) == 1 for s in doc["settings"])
    # The table, the summary line and the JSON say the same, and agree with the measured numbers.
    top = max(means, key=lambda k: means[k])
    assert doc["best"]["num_workers"] == top
    floor = 0.95 * means[top]
    assert doc["smallest_within_5pct"]["num_workers"] == min(k for k, v in means.items() if v >= floor)
    for name, (mean, _, n, note) in rows.items():
        k = int(name.split(",")[0].split("=")[1])
        assert abs(mean - means[k]) < 0.001 and n == 3
        assert ("best" in note) == (k == top)
    line = next(x for x in run.stdout.splitlines() if x.startswith("BENCHY::SUMMARY::SWEEP "))
    assert line.startswith(f"BENCHY::SUMMARY::SWEEP best num_workers={top},")
    # Two workers sleep in parallel: clearly faster than loading in the main process.
    # margin: 2x by design, both settings' loading four 6 ms sleeps a batch (an oversleep lengthens both alike); the
    # 1.4x fails only if the two workers lose 30 % of their pace to receiving and scheduling that one process does not.
    assert means[2] > 1.4 * means[0], f"IO by workers: {means}"
    # Every sweep worker is gone before the schedule's first epoch (the script's loader has none).
    assert re.findall(r"^USER::children (\d+) num_workers (\d+)$", run.stdout, re.M)[0] == ("0", "0")
    # The verdict says which setting feeds the step, against the SYNTHETIC measured after the sweep.
    synthetic = run.result()["SYNTHETIC"]["mean"]
    enough = [k for k in sorted(means) if means[k] >= 1.1 * synthetic]
    verdict = run.result()["verdict"]
    if enough:
        assert f"feeds the step (IO at least 1.1x SYNTHETIC) is num_workers={enough[0]}," in verdict
    else:
        assert "none of the swept loader settings feeds the step" in verdict
    assert doc["applied"] is None and doc["own"] == {"num_workers": 0, "pin_memory": False, "prefetch_factor": None}
    # On the timeline: each setting's 4 trials, and on the trace each setting's slice around them.
    swept = [e for e in run.result()["timeline"]["trials"] if e["group"] == "sweep"]
    assert len(swept) == 12 and [e["setting"]["num_workers"] for e in swept] == [0] * 4 + [1] * 4 + [2] * 4
    trace = subprocess.run(
        [sys.executable, "-m", "benchy", "trace", str(run.json_path), "-o", "trace.json"],
        cwd=run.workdir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert trace.returncode == 0, trace.stderr
    slices = check_trace((run.workdir / "trace.json").read_text())
    sweep_track = next(items for items in slices.values() if any(s.event["cat"] == "sweep" for s in items))
    settings = [s for s in sweep_track if s.event["cat"] == "sweep"]
    assert [s.event["name"] for s in settings] == [
        "num_workers=0, pin_memory=False",
        "num_workers=1, pin_memory=False, prefetch_factor=2",
        "num_workers=2, pin_memory=False, prefetch_factor=2",
    ]
    assert all(len(children(sweep_track, s)) == 4 for s in settings)


def test_sweep_apply_continues_with_the_recommended_setting_and_a_failing_one_is_skipped(run_script) -> None:
    # Workers with id >= 1 fail at start: the 2-worker setting cannot run; 1 worker can.
    config = dict(
        small_config(nbatches=8, ntrials=2, nwarmup=0, sweep_apply=True), sweep={"num_workers": [1, 2], "prefetch_factor": [2]}
    )
    run = run_script(
        config, "--fetch_ms", "2", "--samples", "200", "--print_children", "--fail_worker_from", "1", "--epochs", "6"
    )
    assert run.returncode == 0, run
    assert (
        "BENCHY::WARNING::Message: sweep: setting num_workers=2, pin_memory=False, prefetch_factor=2 failed "
        "(OSError: Caught OSError in DataLoader worker process 1.); skipped."
    ) in run.stdout
    doc = run.result()["sweep"]
    assert [s["error"] is None for s in doc["settings"]] == [True, False]
    assert doc["applied"] == {"num_workers": 1, "pin_memory": False, "prefetch_factor": 2}
    assert (
        "BENCHY::INFO::Message: sweep_apply: the schedule continues with num_workers=1, pin_memory=False, "
        "prefetch_factor=2 (the smallest setting within 5 % of the best)."
    ) in run.stdout
    # The script's own loader now runs with one worker: one child process while it iterates.
    assert re.findall(r"^USER::children (\d+) num_workers (\d+)$", run.stdout, re.M)[0] == ("1", "1")


def test_a_generic_iterator_is_not_swept(run_script) -> None:
    config = dict(small_config(nbatches=4, ntrials=2, nwarmup=0), sweep={"num_workers": [0, 1]})
    run = run_script(config, "--loader", "generic", "--epochs", "6")
    assert run.returncode == 0, run
    assert (
        "BENCHY::WARNING::Message: sweep: only a BenchmarkDataLoader knows the settings to vary; this loader is not swept."
    ) in run.stdout
    assert run.result()["sweep"] is None


@pytest.mark.timing
def test_a_swept_setting_that_feeds_the_step_becomes_the_advice(run_script) -> None:
    # Loading 24 ms per batch in the main process (~165 samples/s), two workers ~330; the step
    # takes 16 ms (~250 samples/s): loading limits training, and two workers would feed the step.
    config = dict(small_config(nbatches=12, ntrials=3, nwarmup=1), sweep={"num_workers": [0, 2]})
    run = run_script(config, "--fetch_ms", "6", "--step_ms", "16", "--samples", "400", "--epochs", "8")
    assert run.returncode == 0, run
    doc = run.result()
    means = {s["settings"]["num_workers"]: s["mean"] for s in doc["sweep"]["settings"]}
    synthetic = doc["SYNTHETIC"]["mean"]
    # margin: 24 ms of loading against a 16 ms step (1.5x) and against the 12 ms of two workers (1.33x, of the 1.1x
    # asked): with an oversleep ``o`` on each sleep the right side holds while 1.1 (24 + 4 o) < 2 (16 + o), o < 2.3 ms
    # on average (0.4 to 0.7 ms measured beside a load average of 5.5 on 2 cores); the left while 24 + 4 o > 16 + o.
    assert means[0] < synthetic < means[2] / 1.1, f"IO by workers {means}, SYNTHETIC {synthetic:.1f}"
    verdict = doc["verdict"]
    assert verdict.startswith("data loading limits training")
    assert doc["sweep"]["feeds_synthetic"] == {"num_workers": 2, "pin_memory": False, "prefetch_factor": 2}
    assert "the cheapest swept loader setting that feeds the step (IO at least 1.1x SYNTHETIC) is num_workers=2" in verdict
    assert re.search(
        r"; most likely to help: the loader setting num_workers=2, pin_memory=False, prefetch_factor=2 "
        r"\(the sweep measured IO at [0-9.]+x SYNTHETIC\)$",
        verdict,
    ), verdict
