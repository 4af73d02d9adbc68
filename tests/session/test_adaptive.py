"""Adaptive schedules (``nwarmup: auto``, ``ntrials: auto``), in-process with a fake clock.

The fake clock moves only when the fake loader fetches or the fake step runs, so every
throughput, every warm-up decision and every stopping decision is exact and repeatable.
"""

from __future__ import annotations

import io
import math
from typing import Any, Callable, Dict, List, Tuple

import pytest
from helpers import FakeClock, make_session, read_json

from benchy import ConfigError, Mode, load_config
from benchy.core.machine import warmup_change
from benchy.session.session import Session

AUTO = {"ntrials": "auto", "nwarmup": "auto"}


def make(
    clock: FakeClock, fetch: Callable[[int], float], sections: Dict[str, Any], **session: Any
) -> Tuple[Session, io.StringIO]:
    made = make_session(
        clock,
        fetch=fetch,
        modes={"nbatches": 25, **AUTO},
        global_={"exit_after_tests": False},
        stream=io.StringIO(),
        **sections,
        **session,
    )
    return made.session, made.stream


def train(session: Session, clock: FakeClock, step: Callable[[int], float], max_epochs: int = 60) -> int:
    """Epochs (of 10 000 batches) until the schedule is over; each step takes ``step(steps so far)``
    seconds. The SYNTHETIC and FULL windows it ran."""
    for _ in range(max_epochs):
        if session.done:
            return sum(1 for t in session.results.trials if t.mode is not Mode.IO)
        for _ in session.iterate():
            clock.now += step(clock.steps)
            clock.steps += 1
            if session.done:
                break
    raise AssertionError(f"the schedule did not end within {max_epochs} epochs")


def rates(session: Session, mode: Mode) -> List[float]:
    return [t.throughput for t in session.results.measured(mode)]


def order(session: Session) -> List[str]:
    return [t.label for t in session.results.trials]


# --- the steady-state rule ---------------------------------------------------------------------


def test_warmup_change_compares_the_last_window_with_the_one_before() -> None:
    assert warmup_change([1.0] * 9, 5) is None  # two windows of 5 need 10 periods
    assert warmup_change([2.0] * 10 + [1.0] * 10, 10) == pytest.approx(-0.5)
    assert warmup_change([9.0] * 10 + [1.0] * 5 + [1.02] * 5, 5) == pytest.approx(0.02)
    assert warmup_change([1.0, 1.0, 50.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 5) == 0.0  # a median: one stall is no drift


def test_a_step_time_that_grows_is_not_warmup(tmp_path) -> None:
    # Steps getting slower (a busy neighbour, throttling) are not cured by warming up longer.
    clock = FakeClock()
    sections = {
        "IO": {"ntrials": 2, "nwarmup": 1},
        "synthetic": {"ntrials": 2, "nwarmup": "auto"},
        "full": {"run_benchmark": False},
    }
    session, stream = make(clock, lambda k: 0.002, sections)
    train(session, clock, lambda k: 0.01 * (1.0 + 0.01 * k))  # +1 % per step
    assert session.machine.warmups_used()["SYNTHETIC"] == 1
    text = stream.getvalue()
    assert "SYNTHETIC warm-up: steady" not in text  # a step time that rose is not called steady
    # A rise of some 10 % (short of the 25 % that is a warning): said as what it may be, noise or a slower step.
    assert "SYNTHETIC warm-up: over after 1 warm-up trial(s): the median step time of the last steps moved +" in text


def test_a_step_time_within_the_tolerance_is_steady(tmp_path) -> None:
    clock = FakeClock()
    sections = {
        "IO": {"ntrials": 2, "nwarmup": 1},
        "synthetic": {"ntrials": 2, "nwarmup": "auto"},
        "full": {"run_benchmark": False},
    }
    session, stream = make(clock, lambda k: 0.002, sections)
    train(session, clock, lambda k: 0.01)
    assert session.machine.warmups_used()["SYNTHETIC"] == 1
    assert "SYNTHETIC warm-up: steady after 1 warm-up trial(s) (median step time of the last steps +0.0 %" in stream.getvalue()


# --- warm-up until steady: a step time that decays over its first epochs --------------------


def decaying(base: float, factor: float, tau: float) -> Callable[[int], float]:
    """``base * (1 + factor * exp(-k / tau))`` at step ``k``: CPU caches, allocator, autotuning."""
    return lambda k: base * (1.0 + factor * math.exp(-k / tau))


DECAY = decaying(0.01, 9.0, 15.0)  # the first steps 10x slower; within 2 % after ~95 steps (4 epochs of 25)
STEADY_SYN = 8 / 0.01  # samples/s at the steady step
IO_RATE = 8 / 0.002


@pytest.mark.parametrize("ntrials", [3, "auto"])
def test_auto_warmup_measures_the_steady_step_and_full_stays_below_both(tmp_path, ntrials) -> None:
    clock = FakeClock()
    sections = {
        "IO": {"ntrials": 3, "nwarmup": 1},
        "synthetic": {"ntrials": ntrials, "nwarmup": "auto"},
        "full": {"ntrials": ntrials, "nwarmup": "auto"},
    }
    session, stream = make(clock, lambda k: 0.002, sections)
    train(session, clock, DECAY)
    text = stream.getvalue()
    warm = session.machine.warmups_used()
    assert warm["SYNTHETIC"] >= 2, (warm, text)  # the decay lasts more than one warm-up
    assert "SYNTHETIC warm-up: steady after" in text
    syn = sum(rates(session, Mode.SYNTHETIC)) / len(rates(session, Mode.SYNTHETIC))
    full = sum(rates(session, Mode.FULL)) / len(rates(session, Mode.FULL))
    io = sum(rates(session, Mode.IO)) / len(rates(session, Mode.IO))
    assert abs(syn / STEADY_SYN - 1) <= 0.05, (syn, STEADY_SYN)
    assert full <= 1.05 * min(io, syn), (full, io, syn)
    doc = read_json(session)
    assert doc["schedule"]["warmups"]["SYNTHETIC"] == warm["SYNTHETIC"]
    assert "inconsistent" not in doc["verdict"]


def test_a_fixed_count_without_warmup_on_the_same_workload_is_what_auto_fixes(tmp_path) -> None:
    # The control: no warm-up leaves SYNTHETIC_1 on the slow part of the decay (the interleaving then spreads
    # that error over both modes instead of charging it to one).
    clock = FakeClock()
    fixed = {"ntrials": 3, "nwarmup": 0}
    session, _ = make(clock, lambda k: 0.002, {"IO": fixed, "synthetic": fixed, "full": fixed})
    train(session, clock, DECAY)
    assert rates(session, Mode.SYNTHETIC)[0] < 0.95 * STEADY_SYN  # more than 5 % off


def test_auto_warmup_stops_at_its_bound_and_says_so(tmp_path) -> None:
    clock = FakeClock()
    sections = {
        "global": {"auto_max_warmup": 2},
        "IO": {"ntrials": 2, "nwarmup": 1},
        "synthetic": {"ntrials": 2, "nwarmup": "auto"},
        "full": {"run_benchmark": False},
    }
    session, stream = make(clock, lambda k: 0.002, sections)
    train(session, clock, decaying(0.01, 9.0, 30.0))  # far from steady after 50 steps
    assert session.machine.warmups_used()["SYNTHETIC"] == 2
    assert "SYNTHETIC warm-up: not steady after 2 warm-up trials (auto_max_warmup" in stream.getvalue()


# --- trials until the answer is known ------------------------------------------------------------


def test_a_clear_gap_stops_at_the_fewest_trials(tmp_path) -> None:
    clock = FakeClock()
    session, stream = make(clock, lambda k: 0.002, {})
    windows = train(session, clock, lambda k: 0.01)
    assert order(session) == [
        "IO_WARMUP_1",
        "IO_1",
        "IO_2",
        "SYNTHETIC_WARMUP_1",  # S F F S from the first window, warm-ups included
        "FULL_WARMUP_1",
        "FULL_1",
        "SYNTHETIC_1",
        "SYNTHETIC_2",  # decided here: FULL gets its fewest, 2
        "FULL_2",
    ]
    assert windows == 6  # of at most 2 x (4 + 8) = 24
    # Short first, growing: 8, then 10, 13 ... up to nbatches (25).
    assert [t.spec.nbatches for t in session.results.trials if t.mode is Mode.SYNTHETIC] == [8, 10, 13]
    text = stream.getvalue()
    doc = read_json(session)
    assert "it stops once the verdict is decided (sides 2x apart: typically within " in text
    assert f"Schedule: at most about {doc['steps_needed']} steps." in text
    assert (
        "Schedule: done after IO 1 warm-up + 2, SYNTHETIC 1 warm-up + 2, FULL 1 warm-up + 2: the verdict "
        "is decided (99 % confidence)." in text
    )
    assert "BENCHY::SUMMARY::VERDICT compute limits training" in text and "(99 % interval 5.00x to 5.00x)" in text
    assert doc["complete"] is True and doc["schedule"]["windows_needed"] == 24
    # Measuring stopped there; the FLOPs' count followed (2 steps, then 4 that show this fake step computes nothing).
    assert doc["schedule"]["stop"] == "decided" and doc["schedule"]["measuring_steps"] == doc["steps_taken"] - 6
    assert doc["schedule"]["stop_reason"] == "the verdict is decided (99 % confidence)"
    assert doc["decision"]["io_vs_synthetic"]["confidence"] == 0.99


def noisy_io(k: int) -> float:
    """IO trials of 25 batches alternate between a fast and a slow loader (+-25 %)."""
    return 0.008 if (k // 26) % 2 == 0 else 0.012


def test_an_undecided_comparison_gets_more_trials_of_the_wider_side_up_to_the_bound(tmp_path) -> None:
    # IO alternates 1000 / 667 samples/s; SYNTHETIC is steady at 8 / 0.0105 = 762: IO is the wide side.
    clock = FakeClock()
    session, stream = make(clock, noisy_io, {"global": {"auto_max_trials": 5}})
    train(session, clock, lambda k: 0.0105)
    labels = order(session)
    # SYNTHETIC, steady, goes on beside FULL (counted) only so that IO's trials have boundaries before a SYNTHETIC
    # window: none runs between two FULL windows.
    assert len(rates(session, Mode.IO)) == 5 and len(rates(session, Mode.SYNTHETIC)) in (2, 3, 4, 5)
    # The extra IO trials ran hidden between later windows, one per boundary.
    first_epoch_trial = labels.index("SYNTHETIC_WARMUP_1")
    extra = [labels.index(f"IO_{k}") for k in (3, 4, 5)]
    assert all(i > first_epoch_trial for i in extra) and len(set(b - a for a, b in zip(extra, extra[1:]))) >= 1
    assert all(b - a >= 2 for a, b in zip(extra, extra[1:])), labels
    assert not any(labels[i - 1].startswith("FULL") and labels[i + 1].startswith("FULL") for i in extra if i + 1 < len(labels))
    text = stream.getvalue()
    assert "auto_max_trials (5) reached for IO, FULL before the answer was known" in text
    assert "BENCHY::SUMMARY::VERDICT undecided" in text
    assert read_json(session)["complete"] is True  # the schedule ran to its end: the answer is what it is


def test_precision_alone_stops_a_run_without_a_comparison(tmp_path) -> None:
    clock = FakeClock()
    session, stream = make(clock, lambda k: 0.002, {"IO": {"run_benchmark": False}})
    assert train(session, clock, lambda k: 0.01) == 6  # windows
    assert "every interval is within 2 % of its mean" in stream.getvalue()


def test_a_figure_precision_of_1_stops_at_the_verdict_with_the_fewest_trials(tmp_path) -> None:
    # FULL's windows swing by a few % (two trials: an interval far wider than 5 %): with the default figure precision
    # FULL gets more trials after the decision; at 1 (an interval as wide as the mean), the verdict alone stops it.
    def swinging(k: int) -> float:
        return 0.0106 if (k // 40) % 2 else 0.01

    counts = {}
    for precision in (0.05, 1.0):
        clock = FakeClock()
        session, _ = make(clock, swinging, {"global": {"auto_figure_precision": precision}})
        train(session, clock, lambda k: 0.002)
        counts[precision] = len(rates(session, Mode.FULL))
        assert read_json(session)["schedule"]["figure_precision"] == precision
    assert counts[1.0] == 2 and counts[0.05] > 2, counts


def test_fixed_counts_ignore_the_answer(tmp_path) -> None:
    clock = FakeClock()
    fixed = {"ntrials": 4, "nwarmup": 1}
    session, _ = make(clock, lambda k: 0.002, {"IO": fixed, "synthetic": fixed, "full": fixed})
    assert train(session, clock, lambda k: 0.01) == 10  # windows
    assert order(session)[5:] == [
        "SYNTHETIC_WARMUP_1",
        "FULL_WARMUP_1",
        "FULL_1",
        "SYNTHETIC_1",
        "SYNTHETIC_2",
        "FULL_2",
        "FULL_3",
        "SYNTHETIC_3",
        "SYNTHETIC_4",
        "FULL_4",
    ]


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("IO", "ntrials", "Auto"),
        ("full", "nwarmup", "steady"),
        ("global", "auto_precision", 0),
        ("global", "auto_figure_precision", 0),
        ("global", "auto_figure_precision", 1.5),
        ("global", "auto_figure_precision", True),
        ("global", "auto_max_trials", 1),
        ("global", "auto_max_warmup", 0),
    ],
)
def test_bad_auto_settings_are_named(section: str, key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(overrides={section: {key: value}}, environ={})
    assert f"{section}.{key}: got {value!r}" in str(err.value)


class RecordingProfiler:
    def __init__(self) -> None:
        self.calls: List[str] = []

    def available(self) -> bool:
        return True

    def start(self) -> None:
        self.calls.append("start")

    def stop(self) -> None:
        self.calls.append("stop")


def test_profiler_window_of_an_adaptive_schedule_spans_the_captured_kinds(tmp_path) -> None:
    clock = FakeClock()
    api = RecordingProfiler()
    cfg = {"global": {"profiler_capture": ["FULL"]}}
    session, _ = make(clock, lambda k: 0.002, cfg, profiler_api=api)
    train(session, clock, lambda k: 0.01)
    events = read_json(session)["profiler"]["events"]
    last_full = [label for label in order(session) if label.startswith("FULL")][-1]
    assert api.calls == ["start", "stop"]
    assert events == ["cudaProfilerStart before FULL_WARMUP_1", f"cudaProfilerStop after {last_full}"], events


def test_the_profiled_warmup_follows_auto_warmups_and_is_never_counted(tmp_path) -> None:
    # profiler: torch on a machine where nothing is profiled (a fake clock, no steps for the profiler to
    # see): the schedule still runs the profiled warm-up once the warm-ups are steady, before FULL_1.
    clock = FakeClock()
    cfg = {"global": {"profiler": "torch", "profiler_mode": "none"}, "full": {"nwarmup": "auto"}}
    session, _ = make(clock, lambda k: 0.002, cfg)
    assert not session.schedule.plan(Mode.FULL).profiled  # profiler_mode none: no rank profiles
    clock = FakeClock()
    cfg = {"global": {"profiler": "torch"}, "full": {"nwarmup": "auto"}}
    session, _ = make(clock, lambda k: 0.002, cfg)
    train(session, clock, lambda k: 0.01)
    ran = order(session)
    full = [label for label in ran if label.startswith("FULL")]
    warmups = [t for t in session.results.warmups(Mode.FULL)]
    assert warmups[-1].spec.profiled and sum(t.spec.profiled for t in session.results.trials) == 1
    assert full.index(warmups[-1].label) == len(warmups) - 1 and full[len(warmups)] == "FULL_1"
    assert all(not t.spec.profiled for t in session.results.measured(Mode.FULL))
    doc = read_json(session)
    assert [e["trial"] for e in doc["timeline"]["trials"] if e["profiled"]] == [warmups[-1].label]


def test_full_trials_start_from_a_drained_worker_queue(tmp_path) -> None:
    # Workers fill their queue while the loop takes no batches (a SYNTHETIC window, benchy's own report
    # between windows): each FULL window first takes what they may have made untimed, so that it does not
    # start with free ones.
    clock = FakeClock()
    fixed = {"ntrials": 2, "nwarmup": 1}
    # A loader with a length: a pass of unknown length has the batches a SYNTHETIC stretch stands in for taken before
    # it instead (Loop._fit), and its workers refill their queue during the stretch: a lead-in of a full queue then.
    sections = {"IO": fixed, "synthetic": fixed, "full": fixed}
    session, _ = make(clock, lambda k: 0.002, sections, queue_depth=3, length=lambda: 10_000)
    train(session, clock, lambda k: 0.01)
    assert order(session)[3:] == ["SYNTHETIC_WARMUP_1", "FULL_WARMUP_1", "FULL_1", "SYNTHETIC_1", "SYNTHETIC_2", "FULL_2"]
    spans = {t.label: t.window for t in session.results.trials if t.window is not None}
    gaps = []
    labels = list(spans)
    for before, label in zip(labels, labels[1:]):
        if label.startswith("FULL"):
            gaps.append(spans[label].start_step - spans[before].end_step - 1)
    # After a SYNTHETIC window the pass's repay took the ready batches at once (its 8 cached steps' places, more
    # than the 3 the workers hold); between two FULL windows benchy's pause was far shorter than a period (nothing
    # to print on this stream): no batch made ahead. Each lead-in is then a round of the workers (1: none said)
    # and one batch more, for a loop slower than its loader, which waits once for the workers after a repay.
    assert gaps == [2, 2, 2], gaps


def swinging_io(k: int) -> float:
    """IO trials of 25 batches alternate between 1.4x and 0.6x of SYNTHETIC's rate: equal means, +-40 %."""
    return 0.0105 / 1.4 if (k // 26) % 2 == 0 else 0.0105 / 0.6


def test_equal_means_with_a_wide_spread_are_never_called_balanced(tmp_path) -> None:
    clock = FakeClock()
    session, stream = make(clock, swinging_io, {"global": {"auto_max_trials": 4}})
    train(session, clock, lambda k: 0.0105)
    text = stream.getvalue()
    assert "BENCHY::SUMMARY::VERDICT balanced" not in text
    assert "BENCHY::SUMMARY::VERDICT undecided: SYNTHETIC/IO is" in text
    assert len(rates(session, Mode.IO)) == 4  # the schedule went on to its bound instead of stopping on two means
    assert read_json(session)["schedule"]["stop_reason"] != "the verdict is decided (99 % confidence)"


def test_a_script_that_ends_after_the_decision_is_complete_and_names_each_imprecise_figure(tmp_path) -> None:
    # Loading is 5x the step, so the verdict decides at once; FULL's windows swing (a batch costs 10.6 ms in some
    # stretches of the pass, 10 ms in others): two FULL trials a few % apart, an interval wider than +/-5 %. The script
    # ends while FULL's trials go on: the run is complete (the verdict stands), and the PRECISION line names FULL with
    # the steps more of its trials would likely take.
    clock = FakeClock()

    def swinging(k: int) -> float:
        return 0.0106 if (k // 40) % 2 else 0.01

    session, stream = make(clock, swinging, {"IO": {"run_benchmark": True}})
    for _ in session.iterate():
        clock.now += 0.002
        decided = session.machine.judgement.decided
        if decided and len(session.results.measured(Mode.FULL)) >= 2 and Mode.FULL not in session.machine.judgement.settled:
            break
    else:
        raise AssertionError("the verdict was never decided with FULL still wide")
    session.at_exit()  # the script ends here, as atexit would end it
    doc = read_json(session)
    text = stream.getvalue()
    assert doc["complete"] is True and doc["exit_status"] == 0 and doc["decision"]["outcome"] == "data-loading"
    wide = doc["schedule"]["imprecise"]["FULL"]
    assert wide["trials"] >= 2 and wide["share"] > 0.05 and wide["more_steps"] is not None and not wide["capped"]
    line = next(x for x in text.splitlines() if x.startswith("BENCHY::SUMMARY::PRECISION FULL "))
    assert f"about {wide['more_steps']} more steps of the loop would likely bring it within +/-5 %" in line
    assert len(line) <= 240
    assert doc["schedule"]["decided_steps"] is not None and doc["schedule"]["measuring_steps"] is None
    assert set(doc["schedule"]["extras_not_run"]) == {e.value for e in session.schedule.extras}
