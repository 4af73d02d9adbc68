"""The verdict: which side limits training, from the trial throughputs (pure)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import trial_result

from benchy.core.claims import Advice, Busy, Help, MoreTrials
from benchy.core.results import RunResults, SystemFigures
from benchy.core.schedule import Mode
from benchy.core.verdict import Outcome, decide
from benchy.results.schema import decision_block
from benchy.results.text.verdict import verdict as say


def text(io, syn, full=()) -> str:
    found = decide(io, syn, list(full))
    assert found is not None
    return say(found)


def test_verdicts() -> None:
    io, syn, full = [88.0, 89.0, 90.0], [376.0, 377.0, 378.0], [89.5, 90.0, 90.5]
    assert text(io, syn, full).startswith("data loading limits training")
    assert text(syn, io).startswith("compute limits training")
    assert text([99.0, 100.0, 101.0], [100.0, 101.0, 99.5]).startswith("balanced")
    # A real 3 % gap, its interval (1.00x to 1.06x) neither inside 5 % either way nor beyond it: undecided; a side
    # is named only beyond 5 % (a 10 % gap, its interval 1.07x to 1.13x).
    assert text([99.0, 100.0, 101.0], [102.0, 103.0, 104.0]).startswith("undecided: SYNTHETIC/IO is 1.03x, within 5 %")
    assert text([99.0, 100.0, 101.0], [109.0, 110.0, 111.0]).startswith("data loading limits training")
    # Serial estimate 100*300/400 = 75: FULL 74 is explained by no overlap, FULL 40 is not.
    assert "they do not overlap" in text([99, 100, 101], [299, 300, 301], [73, 74, 75])
    assert "below even loading and computing one after the other" in text([99, 100, 101], [299, 300, 301], [39, 40, 41])
    assert text([50.0, 150.0], [140.0, 260.0]).startswith("undecided")
    assert decide([], syn, full) is None


def test_two_trials_decide_a_clear_gap() -> None:
    # A 1.5x gap, 2 trials a side, 2 % trial-to-trial spread: decided.
    assert text([100.0, 102.0], [150.0, 153.0]).startswith("data loading limits training")
    # The SC21 tutorial's own config (ntrials: 2): IO 204 +/- 275 against SYNTHETIC 0.143 was "undecided".
    verdict = decide([182.5, 225.5], [0.140, 0.146], [])
    assert verdict is not None and verdict.outcome is Outcome.COMPUTE and verdict.label == "compute"
    assert "the loader has" in say(verdict) and "x headroom (95 % interval " in say(verdict)
    # One trial a side gives no interval: never decided on a guess.
    assert text([100.0], [300.0]).startswith("undecided") and "no interval with one trial a side" in text([100.0], [300.0])


def test_the_decision_is_recorded_with_its_method_statistic_and_inputs() -> None:
    verdict = decide([100.0, 102.0], [150.0, 153.0], [95.0, 96.0])
    assert verdict is not None
    record = decision_block(verdict)
    rec = record.io_vs_synthetic
    assert rec is not None and rec.method == "welch-t on log trial throughputs" and rec.ratio == "SYNTHETIC/IO"
    assert rec.value == pytest.approx((150 * 153 / (100 * 102)) ** 0.5)
    assert rec.interval is not None and rec.df is not None and rec.p is not None and rec.t is not None
    assert rec.interval[0] > 1.0 and rec.df >= 1 and 0.0 <= rec.p < 0.05 and rec.t > 0
    assert rec.inputs == {"IO": [100.0, 102.0], "SYNTHETIC": [150.0, 153.0]}
    assert record.outcome == "data-loading" and record.inconsistent is False
    assert record.full_vs_slower is not None and record.full_vs_slower.ratio == "FULL/IO"


def test_full_above_the_slower_mode_is_named_inconsistent_never_a_share_above_100() -> None:
    # FULL 2.3x SYNTHETIC (SYNTHETIC measured in earlier, slower epochs): impossible.
    verdict = decide([1000.0, 1010.0, 990.0], [100.0, 101.0, 99.0], [230.0, 232.0, 228.0])
    assert verdict is not None and verdict.label == "inconsistent: compute" and verdict.inconsistent
    said = say(verdict)
    assert said.startswith("inconsistent measurement: FULL 230.000 is above SYNTHETIC 100.000")
    assert "warm-up drift" in said and "nwarmup: auto" in said and "prefetching across epochs" in said
    assert "IO against SYNTHETIC alone: compute limits training" in said
    assert decision_block(verdict).inconsistent is True
    assert decision_block(verdict).outcome == "inconsistent: compute"
    # Slightly above within the intervals: no percentage above 100, no alarm.
    mild = text([1000.0, 1010.0], [100.0, 104.0], [101.0, 104.0])
    assert "matches the slower side within the intervals" in mild and "%" not in mild.split(";")[-1]
    for io, syn, full in [([100, 101], [300, 310], [102, 104]), ([100, 130], [300, 330], [120, 140])]:
        found = decide(io, syn, full)
        assert found is not None
        assert not any(float(x) > 100.0 for x in re.findall(r"reaches ([0-9.]+) %", say(found)))


def test_a_tiny_ratio_keeps_its_digits() -> None:
    # One SYNTHETIC trial (a run stopped early) far below IO: never "0.00x".
    found = decide([73561.0, 60000.0], [198.0], [])
    assert found is not None and found.outcome is Outcome.UNDECIDED
    assert "SYNTHETIC/IO is 0.00298x" in say(found)  # the ratio of geometric means


def test_balanced_only_when_the_interval_shows_it() -> None:
    # Equal means, trials at 0.6x and 1.4x of the same rate: two close means prove nothing.
    found = decide([600.0, 1400.0], [1400.0, 600.0], [])
    assert found is not None and found.outcome is Outcome.UNDECIDED
    assert "within 5 % of balanced" in say(found) and "is not inside 0.95x to 1.05x" in say(found)
    # The demo's busy-machine reading (means within 5 %, +-30 %): undecided, not balanced.
    assert decide([2000.0, 3700.0], [2300.0, 3400.0], []).outcome is Outcome.UNDECIDED  # type: ignore[union-attr]
    # One trial a side: no interval, never balanced on a point estimate.
    assert decide([100.0], [101.0], []).outcome is Outcome.UNDECIDED  # type: ignore[union-attr]
    # Equal, steady sides: balanced with two trials a side.
    steady = decide([100.0, 100.5], [100.2, 100.4], [])
    assert steady is not None and steady.outcome is Outcome.BALANCED
    assert "95 % interval" in say(steady) and "samples/s" in say(steady)


def _verdict(label: str) -> Any:
    from benchy.core.stats import Comparison
    from benchy.core.verdict import Full, Overlap, Verdict, outcome_of

    found, inconsistent = outcome_of(label)
    assert found is not None
    full = Full(Overlap.INCONSISTENT, "IO", 1.0, 2.0, 2.0, 0.5, None) if inconsistent else None
    return Verdict(found, Comparison(1.0, None, None, None, None, None, 1, 1), (1.0,), (1.0,), full)


def test_the_loader_diagnosis_in_words() -> None:
    from benchy.core.verdict import loader_cause

    def loader_clause(results: Any, outcome: str, workers: int) -> Any:
        cause = loader_cause(results, _verdict(outcome), workers)
        return None if cause is None else cause[0].words()

    from benchy.core.results import RunResults

    def results(busy: float, cores: int, reads: float) -> RunResults:
        system = {
            "cpu_cores_busy": busy,
            "cpu_cores": cores,
            "cpu_util": busy / cores,
            "rss_max_bytes": 1e9,
            "read_bytes_per_s": reads,
        }
        return RunResults([trial_result(Mode.IO, k, 80, 1.0, system=SystemFigures(1.0, **system)) for k in (1, 2)])

    assert loader_clause(results(1.9, 2, 0), "compute", 2) is None
    assert loader_clause(results(1.9, 2, 0), "data-loading", 2).startswith(
        "the loader is CPU-bound: IO trials kept 1.90 of 2 cores busy (95 %)"
    )
    assert loader_clause(results(3.8, 16, 0), "data-loading", 4).startswith(
        "the loader's workers are CPU-bound: IO trials kept 3.80 cores busy with num_workers = 4 of 16 cores"
    )
    assert loader_clause(results(0.4, 8, 250e6), "data-loading", 8).startswith(
        "the storage looks like the limit: IO trials read 250.0 MB/s with the CPU 5 % busy"
    )
    assert loader_clause(results(0.4, 8, 0), "data-loading", 2).endswith(
        "with too few workers to overlap the waits (num_workers = 2; with the CPU idle, more workers than cores can help)"
    )
    assert loader_clause(RunResults(), "data-loading", 2) is None  # no metrics: nothing said


def test_the_one_change_most_likely_to_help_follows_the_biggest_loss() -> None:
    from benchy.core.verdict import choose_advice

    waiting = Advice(Help.MORE_WORKERS_NOW, 2)  # the fix loader_cause names for a waiting loader
    assert waiting.words() == "most likely to help: more loader workers (num_workers = 2 now)"
    # Loading limits: the loader's own cause comes before its start-up.
    assert choose_advice(_verdict("data-loading"), waiting, False, True, False) == waiting
    assert choose_advice(_verdict("data-loading"), None, False, True, False) == Advice(Help.PERSISTENT)
    assert Advice(Help.PERSISTENT).words() == "most likely to help: persistent_workers=True"
    # Compute limits: the start-up is the loss left on the loader's side; else a faster step.
    assert choose_advice(_verdict("compute"), None, False, True, False) == Advice(Help.PERSISTENT)
    faster = choose_advice(_verdict("compute"), None, False, False, False)
    assert faster == Advice(Help.FASTER_STEP) and faster.words().startswith("most likely to help: a faster step")
    # Copies that fall below SYNTHETIC come first; no advice without an answer.
    pinned = choose_advice(_verdict("data-loading"), waiting, True, False, False)
    assert pinned is not None and pinned.words() == (
        "most likely to help: pin_memory=True and non_blocking copies: pinned memory lets the copies to the accelerator "
        "overlap the step"
    )
    assert choose_advice(_verdict("undecided"), waiting, False, True, False) is None
    assert choose_advice(_verdict("inconsistent: compute"), waiting, False, True, False) is None


def test_a_saturated_cpu_decides_when_a_stage_seems_to_wait_off_the_cpu() -> None:
    # A dataset generated in memory on a busy machine: the system metrics say the cores are saturated,
    # the stage timers find __getitem__ mostly off the CPU (runnable, waiting for a core). The verdict
    # must not say CPU-bound and then advise faster storage: the saturated CPU decides.
    from benchy.core.results import RunResults
    from benchy.core.stages import Stage, StageKind, StageReport
    from benchy.core.verdict import diagnosis

    system = {"cpu_cores_busy": 0.75, "cpu_cores": 2, "cpu_util": 0.375, "rss_max_bytes": 1e9, "read_bytes_per_s": 0.0}
    trials = [trial_result(Mode.IO, k, 80, 1.0, system=SystemFigures(1.0, other_cores_busy=1.2, **system)) for k in (1, 2)]
    report = StageReport(
        period=0.01,
        throughput=800,
        batches=100,
        samples=800,
        workers=0,
        stages=[Stage(StageKind.DATASET, "main", 0.009, 0.9, off_cpu=0.7)],
        unexplained=0.1,
        worker_busy=None,
        per_worker=[],
        slowest=None,
        out_of_order=0,
        hol_share=0.0,
        split="",
        in_order=None,
        free_cores=0.1,
    )
    results = RunResults(trials, stages=report)
    assert report.waits_off_cpu
    clauses = [c.words() for c in diagnosis(results, _verdict("data-loading"), 0, None)]
    text = "; ".join(clauses)
    assert "the loader is CPU-bound: IO trials kept 0.75 cores busy of the 0.80 that other processes left free" in text
    assert "that time off the CPU is time waiting for a core" in text
    assert "storage" not in clauses[-1], clauses[-1]
    assert clauses[-1] == "most likely to help: cheaper decoding and augmentation per sample: the cores are saturated"


def test_without_workers_a_busy_core_points_to_workers_and_no_contention_is_claimed() -> None:
    # The demo's reading: no workers, one of two cores busy with loading, FULL below both IO and SYNTHETIC
    # (loading and the step in series). Loader workers are the advice; "fewer workers" never is.
    from benchy.core.results import RunResults
    from benchy.core.verdict import diagnosis, loader_cause

    system = {"cpu_cores_busy": 1.0, "cpu_cores": 2, "cpu_util": 0.5, "rss_max_bytes": 1e9, "read_bytes_per_s": 0.0}
    trials = [trial_result(Mode.IO, k, 80, 1.0, system=SystemFigures(1.0, other_cores_busy=0.0, **system)) for k in (1, 2)]
    trials += [trial_result(Mode.SYNTHETIC, k, 80, 0.25) for k in (1, 2)]
    trials += [trial_result(Mode.FULL, k, 80, 1.3) for k in (1, 2)]
    results = RunResults(trials)
    cause = loader_cause(results, _verdict("data-loading"), 0)
    assert cause is not None and cause[0].words().startswith("the loading runs in the training process (num_workers = 0)")
    clauses = [c.words() for c in diagnosis(results, _verdict("data-loading"), 0, None)]
    assert clauses[-1] == "most likely to help: loader workers (num_workers > 0): up to the free cores", clauses
    assert not any("fewer loader workers" in c for c in clauses)


def test_an_undecided_verdict_advises_what_this_run_can_change() -> None:
    io, synthetic = [100.0, 180.0], [120.0, 60.0]  # close, and wide apart: undecided
    fixed = decide(io, synthetic, [])
    assert fixed is not None and fixed.outcome is Outcome.UNDECIDED
    assert "run more or longer trials (ntrials: auto runs them until the answer is known)" in say(fixed)
    auto = decide(io, synthetic, [], more=MoreTrials(auto=True, max_trials=8))
    assert auto is not None and "raise global.auto_max_trials (now 8) or nbatches for more or longer trials" in say(auto)
    assert "ntrials: auto" not in say(auto)  # it is on already
    short = decide(io, synthetic, [], more=MoreTrials(finished=False))
    assert short is not None and "let the schedule run on (the warning above says how) for more trials" in say(short)
    likely = decide(io, synthetic, [], more=MoreTrials(finished=False, likely=120))
    assert likely is not None and "a decision would likely take about 120 more steps" in say(likely)
    assert (
        Busy((), 2, MoreTrials(auto=True, max_trials=3))
        .words()
        .endswith("raise global.auto_max_trials (now 3) so that more trials outweigh them")
    )
    assert Busy((), 2, MoreTrials(finished=False)).words().endswith("; rerun on a quiet machine")
