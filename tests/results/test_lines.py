"""The BENCHY:: line grammar: every line kind benchy prints round-trips through one module."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import ROOT

from benchy.results import lines
from benchy.results.lines import Line, parse

ORIGINAL = re.compile(r"^BENCHY::SUMMARY::(IO|SYNTHETIC|FULL) average trial throughput: (\d+\.\d{3}) \+/- (\d+\.\d{3})$")


def test_the_three_summary_lines_keep_the_original_grammar() -> None:
    line = lines.summary("IO", 89.1774, 1.0109)
    assert line == "BENCHY::SUMMARY::IO average trial throughput: 89.177 +/- 1.011"
    assert ORIGINAL.match(line)
    assert (
        lines.summary("FULL", 90.0, None)
        == "BENCHY::SUMMARY::FULL average trial throughput: 90.000 +/- n/a (1 trial: no interval)"
    )
    assert lines.summary("FULL", None, None) == "BENCHY::SUMMARY::FULL average trial throughput: n/a (no completed trial)"


def test_trial_and_iteration_lines() -> None:
    assert lines.trial("FULL_2", 50.0) == "BENCHY::FULL_2::Trial Throughput: 50.000"
    assert lines.trial("IO_WARMUP_1", 25.0) == "BENCHY::IO_WARMUP_1::Trial Throughput: 25.000"
    assert lines.iteration("SYNTHETIC_1", 10, 50, 12.3456) == "BENCHY::SYNTHETIC_1::Iteration 10/50 Throughput: 12.346"


AU = "; the step ran {:.1f} % of it (accelerator utilization, as MLPerf Storage reports it)"
ROUND_TRIPS = [
    (lines.info("Using default benchy configuration."), Line("INFO", text="Using default benchy configuration.")),
    (lines.warning("trial FULL_1 stopped"), Line("WARNING", text="trial FULL_1 stopped")),
    (lines.error("cannot write /x: denied"), Line("ERROR", text="cannot write /x: denied")),
    (lines.trial("FULL_WARMUP_1", 1234.5678), Line("TRIAL", "FULL_WARMUP_1", (1234.568,))),
    (lines.trial("H2D_2", 12.0), Line("TRIAL", "H2D_2", (12.0,))),
    (lines.trial("SWEEP3_WARMUP_1", 7.0), Line("TRIAL", "SWEEP3_WARMUP_1", (7.0,))),
    (lines.trial("STAGES_WORKER_WARMUP_1", 183.077), Line("TRIAL", "STAGES_WORKER_WARMUP_1", (183.077,))),
    (lines.trial_wait("FULL_2", 0.123, 0.0041, 0.00052), Line("TRIAL_WAIT", "FULL_2", (0.123, 0.0041, 0.00052))),
    (lines.iteration("IO_1", 10, 50, 800.0), Line("ITERATION", "IO_1", (10.0, 50.0, 800.0))),
    (lines.summary("SYNTHETIC", 376.537, 0.604), Line("SUMMARY", "SYNTHETIC", (376.537, 0.604))),
    (lines.summary("IO", 89.0, None), Line("SUMMARY", "IO", (89.0, None))),
    (lines.summary("FULL", None, None), Line("SUMMARY", "FULL", (None, None))),
    (
        lines.data_wait(0.123, 0.012),
        Line(
            "DATA_WAIT",
            values=(0.123, 0.012),
            text="12.3 % of FULL time was spent waiting for the loader (+/- 1.2)" + AU.format(87.7),
        ),
    ),
    (
        lines.data_wait(0.5, None, rank0=True),
        Line(
            "DATA_WAIT",
            values=(0.5, None),
            rank0=True,
            text="50.0 % of FULL time was spent waiting for the loader (+/- n/a)" + AU.format(50.0),
        ),
    ),
    (lines.sweep_row("num_workers=2 | 812.000"), Line("SWEEP_ROW", text="num_workers=2 | 812.000")),
    (
        lines.watch_rise("epoch 6: the loop waited for data 48.3 % of its time"),
        Line("WATCH_RISE", values=(6.0,), text="epoch 6: the loop waited for data 48.3 % of its time"),
    ),
] + [
    (
        lines.summary_text(word, f"the {word.lower()} text", rank0=k % 2 == 1),
        Line(word, text=f"the {word.lower()} text", rank0=k % 2 == 1),
    )
    for k, word in enumerate(lines.SUMMARY_WORDS)
    if word != "DATA_WAIT"
]


@pytest.mark.parametrize("written, expected", ROUND_TRIPS, ids=[w.split(":")[2] + str(k) for k, (w, _) in enumerate(ROUND_TRIPS)])
def test_every_line_kind_round_trips(written: str, expected: Line) -> None:
    # Anywhere in a line, also after a launcher's prefix or a timestamp.
    for text in (written, f"[rank0]: 2026-11-24 03:00:00 {written}"):
        found = parse(text)
        assert found is not None
        assert (found.kind, found.label, found.text, found.rank0) == (
            expected.kind,
            expected.label,
            expected.text,
            expected.rank0,
        )
        assert found.values == pytest.approx(expected.values)
        assert written.startswith(found.raw)  # a summary line's "(1 trial: no interval)" is not read


def test_every_kind_is_covered_and_other_lines_are_not_benchys() -> None:
    kinds = {expected.kind for _, expected in ROUND_TRIPS}
    assert kinds == {
        *lines.MESSAGE_KINDS,
        *lines.SUMMARY_WORDS,
        "TRIAL",
        "TRIAL_WAIT",
        "ITERATION",
        "SUMMARY",
        "SWEEP_ROW",
        "WATCH_RISE",
    }
    assert parse("epoch 3 loss 0.1") is None and parse("BENCHY::SOMETHING else") is None
    assert parse("BENCHY::SUMMARY:: SYNTHETIC average trial throughput: 376.537 +/- 0.604") == Line(
        "SUMMARY", "SYNTHETIC", (376.537, 0.604)
    )  # the original tool's spacing
    with pytest.raises(ValueError, match="summary word: got 'IO'"):
        lines.summary_text("IO", "a summary word is never a mode")


def test_trial_labels_say_their_mode_and_warm_up() -> None:
    found = parse(lines.trial("FULL_WARMUP_3", 1.0))
    assert found is not None and found.trial_kind == "FULL" and found.warmup
    found = parse(lines.trial("SWEEP2_4", 1.0))
    assert found is not None and found.trial_kind == "SWEEP2" and not found.warmup
    found = parse(lines.trial("STAGES_WORKER_WARMUP_1", 1.0))
    assert found is not None and found.trial_kind == "STAGES_WORKER" and found.warmup


def test_the_grammar_has_one_home() -> None:
    """No module but ``results/lines.py`` writes a ``BENCHY::`` line (docstrings and help texts may name them)."""
    offenders = []
    for path in sorted((ROOT / "benchy").rglob("*.py")):
        if path.name == "lines.py" and path.parent.name == "results":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and re.search(r"BENCHY::[A-Z]", node.value)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_summary_of_a_run_reads_back_through_the_grammar(tmp_path: Path) -> None:
    log = "\n".join(
        [
            lines.info("2 ranks: each measures its own trials"),
            lines.trial("IO_1", 100.0),
            lines.trial("IO_2", 102.0),
            lines.summary("IO", 101.0, 12.7),
            lines.summary_text("VERDICT", "v"),
        ]
    )
    from io import StringIO

    from benchy.results.logparse import split_runs

    (run,) = split_runs(StringIO(log))
    assert run.nranks == 2 and run.verdict == ["v"] and run.summary
