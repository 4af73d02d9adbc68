"""The summary lines and the JSON document, from hand-built results and one Reading."""

from __future__ import annotations

import io as io_module
import json

from helpers import trial_result

from benchy import Mode, TrialSpec
from benchy.core.outcomes import Interruption, Outcomes, Reason, Why
from benchy.core.results import ProfilerState, RunResults, ScheduleState, Snapshot
from benchy.core.verdict import Reading, read
from benchy.results import lines
from benchy.results.files import write_document
from benchy.results.schema import SCHEMA_VERSION, result_document
from benchy.results.summary import summary_lines


def snapshot(**changes) -> Snapshot:
    values = dict(
        results=RunResults(),
        schedule=ScheduleState(False, 0.02, 8, 8, (), {"IO": 1}, 0.95, None),
        epochs_started=2,
        finished=False,
        profiler=ProfilerState(False, "cudaProfilerApi", "single", ("IO",), ()),
        synthetic_batch_samples=None,
        lookahead=None,
        counting="",
        loader="loader",
        other_loaders=(),
        workers=0,
        startup=None,
    )
    values.update(changes)
    return Snapshot(**values)


def test_summary_lines_extra_line_cannot_be_mistaken() -> None:
    results = RunResults(
        [trial_result(Mode.IO, k, 100, 1.0 + k / 10) for k in (1, 2, 3)]
        + [trial_result(Mode.SYNTHETIC, k, 400, 1.0) for k in (1, 2)]
    )
    modes = [Mode.IO, Mode.SYNTHETIC]
    printed = summary_lines(results, modes, read(results, modes, 0.95, 0, None, steps=True))
    kinds = [lines.parse(x).kind for x in printed]
    assert kinds[:2] == ["SUMMARY", "SUMMARY"] and "SUMMARY" not in kinds[2:] and len(printed) >= 3
    assert kinds[-1] == "VERDICT" and set(kinds[2:-1]) == {"STEPS", "FIRST_PASS"}  # IO_1 against IO_2 and IO_3


def test_the_verdict_line_is_the_readings_and_is_not_worked_out_again() -> None:
    results = RunResults([trial_result(Mode.IO, k, 100, 1.0) for k in (1, 2)])
    given = Reading(None, None, ())
    assert not any(x.startswith("BENCHY::SUMMARY::VERDICT") for x in summary_lines(results, [Mode.IO], given))


def test_result_document_has_original_keys_and_ours() -> None:
    results = RunResults(
        [trial_result(Mode.IO, 1, 100, 1.0, warmup=True), trial_result(Mode.IO, 1, 100, 2.0), trial_result(Mode.IO, 2, 100, 2.5)]
    )
    lost = Outcomes().lose(Interruption(TrialSpec(Mode.FULL, 1, False, 4), 2, Reason(Why.SCRIPT_ENDED)))
    modes = [Mode.IO, Mode.FULL]
    doc = result_document(
        snapshot(results=results, outcomes=lost, steps_needed=100, epoch_length=24, epochs_needed=5),
        modes,
        read(results, modes, 0.95, 0, None, steps=True),
        config={"global": {}},
        environment={"host": "h"},
        nranks=1,
    )
    handle = io_module.StringIO()
    write_document(handle, doc)  # how the document is written: its per-step arrays a slice at a time
    doc = json.loads(handle.getvalue())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["complete"] is False and doc["nranks"] == 1
    assert doc["epochs_started"] == 2 and doc["steps_needed"] == 100 and doc["epochs_needed"] == 5
    assert doc["epoch_length"] == 24 and doc["rerun"] == [] and doc["failed_ranks"] == []
    io = doc["IO"]
    assert io["trial_throughput"] == [50.0, 40.0] and io["trial_time"] == [2.0, 2.5]
    assert io["rates"] == [[50.0] * 4, [40.0] * 4] and io["avg_iter_throughput"] == [50.0, 40.0]
    assert io["n"] == 2 and io["mean"] == 45.0 and io["interval"] > 0
    assert io["warmup"]["trial_throughput"] == [100.0]
    assert doc["FULL"]["n"] == 0 and doc["FULL"]["mean"] is None and doc["FULL"]["interval"] is None
    assert doc["interrupted"] == [
        {"trial": "FULL_1", "batches_done": 2, "nbatches": 4, "reason": "the script ended before the trial's window was complete"}
    ]
    # Complete only when the schedule finished and every trial it issued counted.
    finished = result_document(
        snapshot(results=RunResults(results.trials), finished=True),
        modes,
        Reading(None, None, ()),
        config={},
        environment={},
        nranks=1,
    )
    assert finished.complete is True and finished.verdict is None
