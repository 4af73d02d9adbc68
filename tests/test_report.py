"""Line grammar, verdict, JSON document and its atomic write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchy import Mode, TrialSpec
from benchy._report import (
    SCHEMA_VERSION,
    iteration_line,
    result_document,
    summary_line,
    summary_lines,
    trial_line,
    verdict,
    write_json_atomic,
)
from benchy._results import Interruption, RunResults, TrialResult
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


def test_verdicts() -> None:
    io, syn, full = Estimate(89.0, 1.0, 3), Estimate(377.0, 0.6, 3), Estimate(90.0, 0.6, 3)
    assert verdict(io, syn, full).startswith("data loading limits training")
    assert verdict(syn, io, None).startswith("compute limits training")
    assert verdict(Estimate(100.0, 1.0, 3), Estimate(103.0, 1.0, 3), None).startswith("balanced")
    # Serial estimate 100*300/400 = 75: FULL 74 is explained by no overlap, FULL 40 is not.
    assert "they do not overlap" in verdict(Estimate(100.0, 1, 3), Estimate(300.0, 1, 3), Estimate(74.0, 1, 3))
    assert "below even loading and computing one after the other" in verdict(Estimate(100.0, 1, 3), Estimate(300.0, 1, 3), Estimate(40.0, 1, 3))
    assert verdict(Estimate(100.0, 50.0, 2), Estimate(200.0, 60.0, 2), None).startswith("undecided")
    assert verdict(None, syn, full) is None


def test_summary_lines_extra_line_cannot_be_mistaken() -> None:
    results = RunResults([trial(Mode.IO, k, 100, 1.0 + k / 10) for k in (1, 2, 3)]
                         + [trial(Mode.SYNTHETIC, k, 400, 1.0) for k in (1, 2)])
    lines = summary_lines(results, [Mode.IO, Mode.SYNTHETIC])
    assert [SUMMARY.match(x) is not None for x in lines] == [True, True, False]
    assert lines[2].startswith("BENCHY::SUMMARY::VERDICT ")


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
