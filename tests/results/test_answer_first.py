"""The answer first: the VERDICT line says the side, by how much with its interval and the change most likely to
help in at most 240 characters; FULL, each claim and the advice's grounds have lines of their own; no summary
line is longer (pure)."""

from __future__ import annotations

from io import StringIO
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchy.core.claims import Advice, DataWait, Help, MoreTrials
from benchy.core.stages import Fix, FixKind
from benchy.core.sweep import Setting, SettingResult
from benchy.core.verdict import Reading, decide
from benchy.results import lines
from benchy.results.logparse import document, split_runs
from benchy.results.text.verdict import verdict_line, verdict_lines

# (IO, SYNTHETIC, FULL) trial throughputs of each shape the verdict says, at a scale of 1
SHAPES = {
    "data loading, one after the other": ([99.0, 100.0, 101.0], [299.0, 300.0, 301.0], [73.0, 74.0, 75.0]),
    "data loading, below one after the other": ([99.0, 100.0, 101.0], [299.0, 300.0, 301.0], [39.0, 40.0, 41.0]),
    "data loading, partly overlapped": ([99.0, 100.0, 101.0], [299.0, 300.0, 301.0], [89.0, 90.0, 91.0]),
    "compute, overlapped": ([299.0, 300.0, 301.0], [99.0, 100.0, 101.0], [99.0, 100.0, 101.0]),
    "balanced": ([99.0, 100.0, 101.0], [100.0, 101.0, 99.5], [60.0, 61.0, 62.0]),
    "undecided, within 5 %": ([99.0, 100.0, 101.0], [102.0, 103.0, 104.0], []),
    "undecided, wide": ([50.0, 150.0], [140.0, 260.0], []),
    "inconsistent": ([1000.0, 1010.0, 990.0], [100.0, 101.0, 99.0], [230.0, 232.0, 228.0]),
}
PREFIXES = ("data loading limits training: ", "compute limits training: ", "balanced: ", "undecided: ")
SCALES = (0.001, 1.0, 3000.0)  # samples/s from 0.1 (a large model on a CPU) to 900 000 (small samples, many GPUs)


def _setting(workers: int) -> SettingResult:
    from helpers import trial_result

    from benchy.core.schedule import Mode

    trials = [trial_result(Mode.IO, k, samples=400, seconds=1.0 + 0.01 * k) for k in (1, 2)]
    return SettingResult(Setting(num_workers=workers, pin_memory=True, prefetch_factor=4), trials)


# Every advice benchy gives, with the detail that fills its words (the name of a user's transform, the longest
# a real one has in torchvision, and a sweep's setting with two-digit workers).
ADVICE = (
    [Advice(h, 12 if h is Help.MORE_WORKERS_NOW else None) for h in Help if h not in (Help.STAGE, Help.SWEPT)]
    + [Advice(Help.STAGE, Fix(kind, stage="transform RandomResizedCrop", figure=0.93, other=3.0, workers=8)) for kind in FixKind]
    + [Advice(Help.SWEPT, (_setting(16), 100.0))]
)


def _reading(shape: str, scale: float, advice: Optional[Advice], more: MoreTrials = MoreTrials()) -> Reading:
    io, syn, full = ([x * scale for x in values] for values in SHAPES[shape])
    found = decide(io, syn, full, more=more)
    assert found is not None
    claims: Tuple[Any, ...] = (DataWait(0.743),) + (() if advice is None else (advice,))
    return Reading(found, None, claims)


def _printed(reading: Reading) -> List[str]:
    return [line for word, text in verdict_lines(reading) for line in lines.summary_texts(word, text)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", SCALES)
def test_the_answer_comes_first_and_no_line_is_longer_than_240(shape: str, scale: float) -> None:
    for advice in [None, *ADVICE]:
        reading = _reading(shape, scale, advice)
        said = verdict_lines(reading)
        printed = _printed(reading)
        assert all(len(line) <= lines.MAX_LINE for line in printed), [line for line in printed if len(line) > 240]
        # One VERDICT line, first, with the side; FULL's lines next; a WHY per claim; the advice last.
        words = [word for word, _ in said]
        assert words[0] == "VERDICT" and words.count("VERDICT") == 1 and len(printed[0]) <= lines.MAX_LINE
        verdict = said[0][1]
        if shape == "inconsistent":
            assert verdict.startswith("inconsistent measurement: FULL ") and "do not read these numbers" in verdict
            assert any(text.startswith("IO against SYNTHETIC alone: compute limits") for _, text in said)
        else:
            assert verdict.startswith(PREFIXES)
        assert words[1 : 1 + words.count("OVERLAP")] == ["OVERLAP"] * words.count("OVERLAP")
        assert ("OVERLAP" in words) == bool(SHAPES[shape][2])
        assert ("WHY", "FULL spends 74.3 % of its time waiting for the loader") in said
        assert verdict_line(reading) == "; ".join(text for _, text in said)  # the JSON's: every line's text
        if advice is not None:
            assert said[-1] == ("ADVICE", advice.words())
            change = f"; most likely to help: {advice.change()}"
            named = verdict.endswith(change)
            # The change is named wherever it fits: every fixed one at every scale here; one with a user's name
            # or a setting may not, and the ADVICE line names it then.
            assert named == (len(lines.summary_text("VERDICT", verdict.removesuffix(change) + change)) <= 240)
            if shape.startswith(("data loading", "compute", "balanced")):
                assert named, (advice.change(), verdict)
        elif shape.startswith("undecided"):
            assert verdict.endswith("; most likely to help: more trials")
            assert said[-1][0] == "ADVICE" and "more trials: run more or longer trials" in said[-1][1]
        else:
            assert words[-1] == "WHY" and "most likely to help" not in verdict


def test_an_undecided_verdict_names_what_would_decide_it() -> None:
    reading = _reading("undecided, wide", 1.0, None, MoreTrials(finished=False, likely=120))
    said = dict(verdict_lines(reading))
    assert said["VERDICT"].startswith("undecided: SYNTHETIC/IO is ")
    assert said["ADVICE"] == (
        "most likely to help: more trials: let the schedule run on (the warning above says how) for more trials; a "
        "decision would likely take about 120 more steps"
    )


def test_the_verdict_of_the_demo_reads_at_a_glance() -> None:
    """The demo's answer (a CPU-bound loader without workers), as it prints."""
    reading = _reading("data loading, one after the other", 1.0, Advice(Help.STAGE, Fix(FixKind.LOADER_WORKERS, figure=1.0)))
    printed = _printed(reading)
    assert printed[0] == (
        "BENCHY::SUMMARY::VERDICT data loading limits training: IO 100.000 < SYNTHETIC 300.000 samples/s; compute could "
        "go 3.00x faster (95 % interval 2.92x to 3.08x); most likely to help: loader workers (num_workers > 0)"
    )
    assert printed[-1] == (
        "BENCHY::SUMMARY::ADVICE most likely to help: loader workers (num_workers > 0): the loading runs on the "
        "training thread, with 1.0 cores free to do it beside the step"
    )


def test_a_long_text_goes_on_lines_of_its_word_cut_where_a_clause_ends() -> None:
    assert lines.summary_texts("STAGES", "short") == ["BENCHY::SUMMARY::STAGES short"]
    clauses = [f"stage {k} {k:>3}.000 ms ({k} %, a note in brackets; with a semicolon)" for k in range(12)]
    text = "; ".join(clauses)
    printed = lines.summary_texts("STAGES", text, rank0=True)
    assert len(printed) > 1 and all(len(p) <= lines.MAX_LINE and p.endswith(" [rank 0]") for p in printed)
    # cut after a clause, never inside brackets: every piece is whole clauses
    pieces = [p.removeprefix("BENCHY::SUMMARY::STAGES ").removesuffix(" [rank 0]") for p in printed]
    assert "; ".join(pieces) == text
    assert all(piece.count("(") == piece.count(")") for piece in pieces)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab (); ,:"), max_size=900),
    st.sampled_from(["WHY", "VERDICT", "WHATIF"]),
    st.booleans(),
)
def test_no_text_is_lost_and_no_line_is_longer(text: str, word: str, rank0: bool) -> None:
    printed = lines.summary_texts(word, text, rank0)
    assert all(len(line) <= lines.MAX_LINE for line in printed)
    head, tail = f"BENCHY::SUMMARY::{word} ", " [rank 0]" if rank0 else ""
    pieces = [line.removeprefix(head).removesuffix(tail) for line in printed]
    # Only the separators at a cut (spaces, ";", ",", ":") are dropped.
    kept = "".join(c for c in text if c not in " ;,:")
    assert "".join(c for piece in pieces for c in piece if c not in " ;,:") == kept


OLD_LOG = """\
BENCHY::IO_1::Trial Throughput: 100.000
BENCHY::IO_2::Trial Throughput: 102.000
BENCHY::SYNTHETIC_1::Trial Throughput: 300.000
BENCHY::SYNTHETIC_2::Trial Throughput: 301.000
BENCHY::SUMMARY::IO average trial throughput: 101.000 +/- 12.706
BENCHY::SUMMARY::SYNTHETIC average trial throughput: 300.500 +/- 6.353
BENCHY::SUMMARY::VERDICT data loading limits training: IO 101.000 < SYNTHETIC 300.500 samples/s; compute could go \
2.98x faster with faster loading (99 % interval 1.07x to 8.30x); FULL spends 74.3 % of its time waiting for the \
loader; most likely to help: loader workers (num_workers > 0: the loading runs on the training thread, with 1.0 \
cores free to do it beside the step)
"""


def test_a_log_of_either_format_reads_back_with_its_whole_verdict() -> None:
    (old,) = split_runs(StringIO(OLD_LOG))
    doc = document(old, name="old")
    assert doc["verdict"].startswith("data loading limits training: IO 101.000 < SYNTHETIC 300.500 samples/s; ")
    assert doc["verdict"].endswith("with 1.0 cores free to do it beside the step)")
    reading = _reading("data loading, one after the other", 1.0, Advice(Help.STAGE, Fix(FixKind.LOADER_WORKERS, figure=1.0)))
    new_log = OLD_LOG.split("BENCHY::SUMMARY::VERDICT")[0] + "\n".join(_printed(reading)) + "\n"
    (new,) = split_runs(StringIO(new_log))
    doc = document(new, name="new")
    assert doc["verdict"] == verdict_line(reading)  # what the run's own JSON holds
    assert [line for line in doc["summary"] if "::VERDICT " in line] == [_printed(reading)[0]]
