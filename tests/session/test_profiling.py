"""The cudaProfilerStart/Stop window (with a recording stand-in for CUDA) and no CUDA on CPU."""

from __future__ import annotations

from typing import List

import pytest
from helpers import FakeClock, Made, make_session, small_config, until_done

from benchy import Mode, Schedule, load_config
from benchy.core import machine as m
from benchy.measure.profiling import ProfilerWindow


class FakeApi:
    def __init__(self, available: bool = True) -> None:
        self.calls: List[str] = []
        self.is_available = available

    def available(self) -> bool:
        return self.is_available

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")


FIXED = {mode: {"ntrials": 3, "nwarmup": 1} for mode in ("IO", "synthetic", "full")}


def order():
    """The trials of the original's schedule (1 warm-up and 3 trials a mode), in the order they run: IO's, then the
    windows S F F S ... (the last SYNTHETIC_3, after FULL_3)."""
    s = Schedule.from_config(load_config(overrides=FIXED, environ={}))
    return [a.spec for a, _ in m.longest_run(s) if isinstance(a, (m.RunIO, m.OpenWindow))]


def walk(window: ProfilerWindow, api: FakeApi) -> List[str]:
    """Run the window through the default schedule; return (call, trial) pairs."""
    seen = []
    specs = order()
    for k, spec in enumerate(specs):
        before = len(api.calls)
        window.before_trial(spec)
        seen += [f"{c} before {spec.label}" for c in api.calls[before:]]
        before = len(api.calls)
        window.after_trial(spec, any(s.mode in window.kinds for s in specs[k + 1 :]))
        seen += [f"{c} after {spec.label}" for c in api.calls[before:]]
    return seen


def test_single_mode_on_rank_0_wraps_the_whole_benchmark() -> None:
    api = FakeApi()
    w = ProfilerWindow("single", 0, list(Mode), api=api)
    assert walk(w, api) == ["start before IO_WARMUP_1", "stop after SYNTHETIC_3"]
    assert w.events == ["cudaProfilerStart before IO_WARMUP_1", "cudaProfilerStop after SYNTHETIC_3"]


@pytest.mark.parametrize("mode, rank", [("single", 1), ("none", 0)])
def test_ranks_not_chosen_make_no_call(mode: str, rank: int) -> None:
    api = FakeApi()
    w = ProfilerWindow(mode, rank, list(Mode), api=api)
    assert walk(w, api) == [] and not w.wanted
    w.close()
    assert api.calls == []


def test_all_mode_profiles_every_rank() -> None:
    api = FakeApi()
    assert walk(ProfilerWindow("all", 3, list(Mode), api=api), api) == ["start before IO_WARMUP_1", "stop after SYNTHETIC_3"]


def test_capture_narrowed_to_full() -> None:
    api = FakeApi()
    w = ProfilerWindow("single", 0, [Mode.FULL], api=api)
    # FULL trials are interleaved with SYNTHETIC ones: those in between are inside the window.
    assert walk(w, api) == ["start before FULL_WARMUP_1", "stop after FULL_3"]


def test_capture_of_two_kinds_is_one_window() -> None:
    api = FakeApi()
    w = ProfilerWindow("single", 0, [Mode.SYNTHETIC, Mode.IO], api=api)
    assert walk(w, api) == ["start before IO_WARMUP_1", "stop after SYNTHETIC_3"]


def test_capture_of_io_alone_stops_before_the_first_epoch() -> None:
    api = FakeApi()
    w = ProfilerWindow("single", 0, [Mode.IO], api=api)
    assert walk(w, api) == ["start before IO_WARMUP_1", "stop after IO_3"]


def test_no_cuda_means_no_call_and_a_note() -> None:
    api = FakeApi(available=False)
    w = ProfilerWindow("single", 0, list(Mode), api=api)
    assert walk(w, api) == []
    w.close()
    assert api.calls == [] and w.events == ["not started at IO_WARMUP_1: CUDA is not in use"]


def test_cuda_coming_into_use_later_starts_the_window_then() -> None:
    api = FakeApi(available=False)
    w = ProfilerWindow("single", 0, list(Mode), api=api)
    specs = order()
    w.before_trial(specs[0])
    api.is_available = True
    w.before_trial(specs[1])
    assert api.calls == ["start"] and w.events[-1] == "cudaProfilerStart before IO_1"


def test_close_stops_once() -> None:
    api = FakeApi()
    w = ProfilerWindow("single", 0, list(Mode), api=api)
    w.before_trial(order()[0])
    w.close("at exit")
    w.close("again")
    assert api.calls == ["start", "stop"] and w.events[-1] == "cudaProfilerStop at exit"


def session_with(api: FakeApi) -> Made:
    return make_session(
        FakeClock(),
        batches=5,
        batch=2,
        modes={"nbatches": 3, "ntrials": 1, "nwarmup": 1},
        global_={"exit_after_tests": False},
        profiler_api=api,
    )


def test_session_stops_the_profiler_when_the_step_raises_and_the_script_ends() -> None:
    api = FakeApi()
    session, stream, _ = session_with(api)
    with pytest.raises(ZeroDivisionError):
        for epoch in range(10):
            for k, _ in enumerate(session.iterate()):
                if epoch == 1 and k == 1:  # inside the schedule's windows
                    1 / 0
    assert api.calls == ["start"]
    session.at_exit()  # what atexit does when the script dies of the exception
    assert api.calls == ["start", "stop"]
    assert "cudaProfilerStop at exit" in stream.getvalue()


def test_session_stops_the_profiler_before_the_summary() -> None:
    api = FakeApi()
    session, stream, _ = session_with(api)
    until_done(session)
    assert api.calls == ["start", "stop"] and session.done
    out = stream.getvalue()
    assert out.index(
        "Profiler (the cudaProfilerStart/Stop capture range for Nsight Systems): cudaProfilerStart "
        "before IO_WARMUP_1; cudaProfilerStop after SYNTHETIC_1"
    ) < out.index("BENCHY::SUMMARY::IO")


def test_cpu_run_makes_no_cuda_call_even_when_asked_to_profile_and_sync(run_script) -> None:
    run = run_script(small_config(profiler_mode="all", sync_every_step=True), "--forbid_cuda")
    assert run.returncode == 0, run
    assert "sync_every_step is on" in run.stdout
    assert set(run.summary) == {"IO", "SYNTHETIC", "FULL"}
    assert run.result()["profiler"]["events"] == ["not started at IO_WARMUP_1: CUDA is not in use"]
