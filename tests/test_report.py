"""Line grammar, verdict, JSON document and its atomic write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchy import Mode, TrialSpec
from benchy._report import (
    decide,
    iteration_line,
    summary_line,
    summary_lines,
    trial_line,
    write_json_atomic,
)
from benchy._results import Interruption, RunResults, TrialResult
from benchy._schema import SCHEMA_VERSION, result_document
from benchy._stats import Estimate

SUMMARY = re.compile(r"^BENCHY::SUMMARY::(IO|SYNTHETIC|FULL) average trial throughput: (\d+\.\d{3}) \+/- (\d+\.\d{3})$")


def trial(mode: Mode, index: int, samples: int, seconds: float, warmup: bool = False) -> TrialResult:
    n = 4
    return TrialResult(TrialSpec(mode, index, warmup, n), samples, seconds,
                       tuple([seconds / n] * n), tuple([samples // n] * n))


def test_summary_line_grammar_is_the_original() -> None:
    line = summary_line(Mode.IO, Estimate(89.1774, 1.0109, 3))
    assert line == "BENCHY::SUMMARY::IO average trial throughput: 89.177 +/- 1.011"
    assert SUMMARY.match(line)
    assert summary_line(Mode.SYNTHETIC, Estimate(376.5, 0.6, 3)).startswith("BENCHY::SUMMARY::SYNTHETIC average")


def test_no_fake_zero_interval() -> None:
    assert summary_line(Mode.FULL, Estimate(90.0, None, 1)) == \
        "BENCHY::SUMMARY::FULL average trial throughput: 90.000 +/- n/a (1 trial: no interval)"
    assert summary_line(Mode.FULL, Estimate(None, None, 0)) == \
        "BENCHY::SUMMARY::FULL average trial throughput: n/a (no completed trial)"


def test_trial_and_iteration_lines() -> None:
    assert trial_line(trial(Mode.FULL, 2, 100, 2.0)) == "BENCHY::FULL_2::Trial Throughput: 50.000"
    assert trial_line(trial(Mode.IO, 1, 100, 4.0, warmup=True)) == "BENCHY::IO_WARMUP_1::Trial Throughput: 25.000"
    assert iteration_line("SYNTHETIC_1", 10, 50, 12.3456) == "BENCHY::SYNTHETIC_1::Iteration 10/50 Throughput: 12.346"


def text(io, syn, full=()) -> str:
    found = decide(io, syn, list(full))
    assert found is not None
    return found.text


def test_verdicts() -> None:
    io, syn, full = [88.0, 89.0, 90.0], [376.0, 377.0, 378.0], [89.5, 90.0, 90.5]
    assert text(io, syn, full).startswith("data loading limits training")
    assert text(syn, io).startswith("compute limits training")
    assert text([99.0, 100.0, 101.0], [102.0, 103.0, 104.0]).startswith("balanced")
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
    assert verdict is not None and verdict.outcome == "compute"
    assert "the loader has" in verdict.text and "x headroom (95 % interval " in verdict.text
    # One trial a side gives no interval: never decided on a guess.
    assert text([100.0], [300.0]).startswith("undecided") and "no interval with one trial a side" in text([100.0], [300.0])


def test_the_decision_is_recorded_with_its_method_statistic_and_inputs() -> None:
    verdict = decide([100.0, 102.0], [150.0, 153.0], [95.0, 96.0])
    assert verdict is not None
    rec = verdict.record["io_vs_synthetic"]
    assert rec["method"] == "welch-t on log trial throughputs" and rec["ratio"] == "SYNTHETIC/IO"
    assert rec["value"] == pytest.approx((150 * 153 / (100 * 102)) ** 0.5)
    assert rec["interval"][0] > 1.0 and rec["df"] >= 1 and 0.0 <= rec["p"] < 0.05 and rec["t"] > 0
    assert rec["inputs"] == {"IO": [100.0, 102.0], "SYNTHETIC": [150.0, 153.0]}
    assert verdict.record["outcome"] == "data-loading" and verdict.record["inconsistent"] is False
    assert verdict.record["full_vs_slower"]["ratio"] == "FULL/IO"


def test_full_above_the_slower_mode_is_named_inconsistent_never_a_share_above_100() -> None:
    # FULL 2.3x SYNTHETIC (SYNTHETIC measured in earlier, slower epochs): impossible.
    verdict = decide([1000.0, 1010.0, 990.0], [100.0, 101.0, 99.0], [230.0, 232.0, 228.0])
    assert verdict is not None and verdict.outcome == "inconsistent: compute"
    assert verdict.text.startswith("inconsistent measurement: FULL 230.000 is above SYNTHETIC 100.000")
    assert "warm-up drift" in verdict.text and "nwarmup: auto" in verdict.text and "prefetching across epochs" in verdict.text
    assert "IO against SYNTHETIC alone: compute limits training" in verdict.text
    assert verdict.record["inconsistent"] is True
    # Slightly above within the intervals: no percentage above 100, no alarm.
    mild = text([1000.0, 1010.0], [100.0, 104.0], [101.0, 104.0])
    assert "matches the slower of the two within the intervals" in mild and "%" not in mild.split(";")[-1]
    for io, syn, full in [([100, 101], [300, 310], [102, 104]), ([100, 130], [300, 330], [120, 140])]:
        found = decide(io, syn, full)
        assert found is not None
        assert not any(float(x) > 100.0 for x in re.findall(r"reaches ([0-9.]+) %", found.text))


def test_summary_lines_extra_line_cannot_be_mistaken() -> None:
    results = RunResults([trial(Mode.IO, k, 100, 1.0 + k / 10) for k in (1, 2, 3)]
                         + [trial(Mode.SYNTHETIC, k, 400, 1.0) for k in (1, 2)])
    lines = summary_lines(results, [Mode.IO, Mode.SYNTHETIC])
    matches = [SUMMARY.match(x) is not None for x in lines]
    assert matches[:2] == [True, True] and not any(matches[2:]) and len(lines) >= 3
    assert lines[-1].startswith("BENCHY::SUMMARY::VERDICT ")
    assert all(x.startswith("BENCHY::SUMMARY::STEPS ") for x in lines[2:-1])


def test_result_document_has_original_keys_and_ours() -> None:
    results = RunResults(
        [trial(Mode.IO, 1, 100, 1.0, warmup=True), trial(Mode.IO, 1, 100, 2.0), trial(Mode.IO, 2, 100, 2.5)],
        [Interruption(TrialSpec(Mode.FULL, 1, False, 4), 2, "loop stopped")],
    )
    doc = result_document(results, [Mode.IO, Mode.FULL], config={"global": {}}, environment={"host": "h"},
                          nranks=1, complete=False, epochs_needed=5, epochs_started=2)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["complete"] is False and doc["nranks"] == 1
    io = doc["IO"]
    assert io["trial_throughput"] == [50.0, 40.0] and io["trial_time"] == [2.0, 2.5]
    assert io["rates"] == [[50.0] * 4, [40.0] * 4] and io["avg_iter_throughput"] == [50.0, 40.0]
    assert io["n"] == 2 and io["mean"] == 45.0 and io["interval"] > 0
    assert io["warmup"]["trial_throughput"] == [100.0]
    assert doc["FULL"]["n"] == 0 and doc["FULL"]["mean"] is None and doc["FULL"]["interval"] is None
    assert doc["interrupted"] == [{"trial": "FULL_1", "batches_done": 2, "nbatches": 4, "reason": "loop stopped"}]
    json.dumps(doc, allow_nan=False)


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "r.json"
    write_json_atomic(str(target), {"a": 1})
    write_json_atomic(str(target), {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json_atomic(str(target), {"a": 1})
    with pytest.raises(ValueError):
        write_json_atomic(str(target), {"a": float("nan")})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_tiny_ratio_keeps_its_digits() -> None:
    # One SYNTHETIC trial (a run stopped early) far below IO: never "0.00x".
    found = decide([73561.0, 60000.0], [198.0], [])
    assert found is not None and found.outcome == "undecided"
    assert "SYNTHETIC/IO is 0.00298x" in found.text  # the ratio of geometric means
