"""NVTX for real: a recorder attached through NVTX_INJECTION64_PATH logs every push and pop.

The recorder (tests/nvtx/recorder.c) is built by the ``nvtx_recorder`` fixture; these tests
check the exact range tree of small runs, including the cut-short cases.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Tuple

import pytest
from helpers import small_config

from benchy.measure.profiling import nvtx_ranges

Event = Tuple[str, str, str]  # ("PUSH", message, payload) or ("POP", "", "")


def read_events(path: Path) -> List[Event]:
    events: List[Event] = []
    for line in path.read_text().splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "PUSH":
            domain, message, payload = rest.split("\t")
            assert domain == "benchy", line
            events.append(("PUSH", message, payload))
        else:
            assert line == "POP benchy", line
            events.append(("POP", "", ""))
    return events


def assert_balanced(events: List[Event]) -> None:
    depth = 0
    for kind, _, _ in events:
        depth += 1 if kind == "PUSH" else -1
        assert depth >= 0, "a POP without a PUSH"
        assert depth <= 3, "ranges nest at most trial > step|fetch"
    assert depth == 0, f"{depth} range(s) left open"


def fetch(k: int) -> List[Event]:
    return [("PUSH", "fetch", str(k)), ("POP", "", "")]


def step(k: int) -> List[Event]:
    return [("PUSH", "step", str(k)), ("POP", "", "")]


def io_trial(label: str, n: int) -> List[Event]:
    body = [e for k in range(n + 1) for e in fetch(k)]
    return [("PUSH", label, "")] + body + [("POP", "", "")]


def synthetic_trial(label: str, n: int) -> List[Event]:
    body = fetch(0) + [e for k in range(n) for e in step(k)]
    return [("PUSH", label, "")] + body + [("POP", "", "")]


def full_trial(label: str, n: int) -> List[Event]:
    body = fetch(0) + [e for k in range(n) for e in step(k) + fetch(k + 1)]
    return [("PUSH", label, "")] + body + [("POP", "", "")]


def expected_prefix(n: int) -> List[Event]:
    # Warm-ups first (SYNTHETIC, FULL), then the measured trials S F F S ...
    return (io_trial("IO_WARMUP_1", n) + io_trial("IO_1", n)
            + synthetic_trial("SYNTHETIC_WARMUP_1", n) + full_trial("FULL_WARMUP_1", n)
            + synthetic_trial("SYNTHETIC_1", n))


N = 3
CONFIG = small_config(nbatches=N, ntrials=1, nwarmup=1)


@pytest.fixture
def run_recorded(run_script, nvtx_recorder: Path, tmp_path: Path):
    def run(*args: str, config=CONFIG):
        record = tmp_path / "ranges.txt"
        env = {"NVTX_INJECTION64_PATH": str(nvtx_recorder), "NVTX_RECORD_FILE": str(record)}
        result = run_script(config, "--samples", "40", "--batch_size", "4", *args, env=env)
        return result, read_events(record)

    return run


def test_exact_range_tree_of_a_full_run(run_recorded) -> None:
    run, events = run_recorded()
    assert run.returncode == 0, run
    assert "NVTX: a tool is attached" in run.stdout
    assert events == expected_prefix(N) + full_trial("FULL_1", N)
    assert_balanced(events)
    assert run.result()["profiler"]["nvtx_tool_attached"] is True


def test_exception_in_the_step_closes_the_step_and_trial(run_recorded) -> None:
    run, events = run_recorded("--raise_at", "3:1")  # epoch 3 is FULL_1; the step of batch 1 raises
    assert run.returncode == 1 and "RuntimeError: boom" in run.stderr
    tail = [("PUSH", "FULL_1", "")] + fetch(0) + step(0) + fetch(1) + step(1) + [("POP", "", "")]
    assert events == expected_prefix(N) + tail
    assert_balanced(events)


def test_loop_breaking_out_closes_the_step_and_trial(run_recorded) -> None:
    run, events = run_recorded("--break_at=3:2", "--epochs", "4")
    assert run.returncode == 0, run
    tail = [("PUSH", "FULL_1", "")] + fetch(0) + step(0) + fetch(1) + step(1) + fetch(2) + step(2) + [("POP", "", "")]
    assert events == expected_prefix(N) + tail
    assert_balanced(events)


def test_loader_raising_closes_the_fetch_and_trial(run_recorded) -> None:
    # Batches read before FULL_WARMUP_1's fetch 2: IO_WARMUP_1 N + 1, IO_1 N (it opens with the
    # batch kept from IO_WARMUP_1), none for SYNTHETIC_WARMUP_1 (it yields the one batch cached
    # from IO_1's kept batch), FULL_WARMUP_1 two. The loader fails on the first sample after those.
    # The stage trials read the same dataset (through a copy of the loader): off, so the count holds.
    failing_sample = 4 * ((N + 1) + N + 2) + 1
    run, events = run_recorded("--loader_raise_after", str(failing_sample),
                               config=small_config(nbatches=N, ntrials=1, nwarmup=1, stages=False))
    assert run.returncode == 1 and "OSError: cannot read sample" in run.stderr
    tail = [("PUSH", "FULL_WARMUP_1", "")] + fetch(0) + step(0) + fetch(1) + step(1) + [("PUSH", "fetch", "2"),
                                                                                        ("POP", "", ""), ("POP", "", "")]
    prefix = io_trial("IO_WARMUP_1", N) + io_trial("IO_1", N) + synthetic_trial("SYNTHETIC_WARMUP_1", N)
    assert events == prefix + tail
    assert_balanced(events)
    assert "trial FULL_WARMUP_1 stopped after 2 of 3 batches: the data loader raised OSError" in run.stdout


def test_no_tool_attached_means_no_annotated_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NVTX_INJECTION64_PATH", raising=False)
    assert nvtx_ranges(True) is None
    assert nvtx_ranges(False) is None


def test_nvtx_off_by_config_even_with_a_tool(run_script, nvtx_recorder: Path, tmp_path: Path) -> None:
    record = tmp_path / "ranges.txt"
    env = {"NVTX_INJECTION64_PATH": str(nvtx_recorder), "NVTX_RECORD_FILE": str(record)}
    run = run_script(small_config(nbatches=N, ntrials=1, nvtx=False), env=env)
    assert run.returncode == 0, run
    assert not record.exists() or read_events(record) == []
