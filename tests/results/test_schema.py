"""Reading results back: every stored schema version loads, upgrades and round-trips; bad files
are named; the run's name comes from the config, $BENCHY_RUN_NAME or --benchy_name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Dict

import pytest

import benchy
from benchy import Mode, ResultFileError, load
from benchy.core.stats import welch
from benchy.results.compare import holm
from benchy.results.configfile import load_config, resolve_config
from benchy.results.files import write_json_atomic
from benchy.results.schema import default_run_name, read_run, upgrade

DATA = Path(__file__).resolve().parent.parent / "data"
RESULTS = DATA / "results"
# One real run per schema version (see data/results/README.md): the directory, the version it
# was written with, its ranks, and its IO trial throughputs' count.
STORED = [
    ("v1-0.1.0", 1, 1),  # benchy 0.1.0 (commit be44c06): no exit_status, decision, summary ...
    ("v1-0.1.x", 1, 1),  # after issues 8-11, still version 1: every key but run_name/source
    ("v1-2ranks", 1, 2),  # the same, two ranks under torchrun (per-rank figures)
    ("v2", 2, 1),  # run_name and source
    ("v3", 3, 1),  # the timeline
    ("v3-2ranks", 3, 2),  # the same, two ranks, every rank's steps saved
    ("v3-sweep", 3, 1),  # the same, one rank, with a loader sweep
    ("v4", 4, 1),  # trials as windows of steps: steps_needed, epoch_length, the timeline's windows
    ("v4-2ranks", 4, 2),  # the same, two ranks, every rank's steps saved
    ("v4-sweep", 4, 1),  # the same, one rank, with a loader sweep
]


def raw(name: str) -> Dict[str, Any]:
    return json.loads((RESULTS / name / "benchy_result.json").read_text())


@pytest.mark.parametrize("name,version,ranks", STORED)
def test_every_stored_version_loads_and_round_trips(tmp_path: Path, name: str, version: int, ranks: int) -> None:
    path = RESULTS / name / "benchy_result.json"
    run = load(path)
    original = raw(name)
    assert run.schema_version == version and run.nranks == ranks and run.source == "run"
    assert run.document["schema_version"] == benchy.SCHEMA_VERSION
    for mode in Mode:
        m = run.mode(mode)
        assert m is not None
        assert list(m.trial_throughputs) == original[mode.value]["trial_throughput"]
        assert m.mean == original[mode.value]["mean"] and m.n == original[mode.value]["n"]
        assert m.rates is not None and len(m.rates) == len(m.trial_throughputs)
    # Written back in the current schema and read again: the same run, the same document.
    again_path = tmp_path / "again.json"
    write_json_atomic(str(again_path), run.document)
    again = load(again_path)
    assert again.schema_version == benchy.SCHEMA_VERSION
    assert again == dataclasses.replace(run, schema_version=benchy.SCHEMA_VERSION) and again.document == run.document
    if version == benchy.SCHEMA_VERSION:
        assert run.document == original  # nothing to upgrade: the file as written


def test_version_1_of_0_1_0_gets_the_keys_added_since_and_a_name() -> None:
    original = raw("v1-0.1.0")
    assert "exit_status" not in original and "summary" not in original and "run_name" not in original
    run = load(RESULTS / "v1-0.1.0" / "benchy_result.json")
    doc, full = run.model, run.model.FULL
    assert run.name == "user_script 2026-11-23T01:35:03Z"  # the script's name and start time
    # The keys added since read as the model's defaults (null), the trials' system figures as nulls, one a trial.
    assert doc.source == "run" and doc.exit_status is None and doc.summary is None and doc.IO_H2D is None
    assert full is not None and full.data_wait is None and full.steps is None and full.system == [None, None, None]
    assert run.verdict is not None and run.verdict.startswith("data loading limits training")
    assert run.mode(Mode.FULL).data_wait is None  # type: ignore[union-attr]


def test_full_data_wait_and_per_rank_batch_are_read() -> None:
    run = load(RESULTS / "v1-0.1.x" / "benchy_result.json")
    full = run.mode(Mode.FULL)
    assert full is not None and full.data_wait == pytest.approx(raw("v1-0.1.x")["FULL"]["data_wait"]["mean"])
    assert full.samples_per_rank_batch(run.nranks) == 4.0  # --batch_size 4
    two = load(RESULTS / "v1-2ranks" / "benchy_result.json")
    assert two.mode(Mode.IO).samples_per_rank_batch(2) == 4.0  # type: ignore[union-attr]


def test_default_run_name() -> None:
    env = {"argv": ["/x/y/train_cnn.py", "--enable_benchy"], "time_utc": "2026-11-23T01:34:36+00:00"}
    assert default_run_name(env) == "train_cnn 2026-11-23T01:34:36Z"
    assert default_run_name({}) == "run"
    assert default_run_name({"argv": ["-c"], "time_utc": ""}) == "-c"


@pytest.mark.parametrize(
    "content,expected",
    [
        ("not json {", "not a JSON file"),
        ("[1, 2]", "expected a JSON object (benchy's result), got list"),
        ('{"IO": {}}', "no integer 'schema_version' (got None): not a benchy result file"),
        ('{"schema_version": 99}', "schema_version 99 was written by a newer benchy; this benchy reads versions 1 to 6"),
        ('{"schema_version": 0}', "schema_version 0; expected 1 to 6"),
    ],
)
def test_unreadable_files_are_named_with_the_problem(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(ResultFileError) as err:
        load(path)
    assert str(err.value).startswith(str(path)) and expected in str(err.value)


@pytest.mark.parametrize(
    "key,value,expected",
    [
        (("FULL", "trial_throughput"), "fast", 'FULL.trial_throughput: expected a list of numbers (or nulls), got "fast"'),
        (("IO", "trial_samples"), [1.5], "IO.trial_samples[0]: expected an integer >= 0, got 1.5"),
        (("SYNTHETIC", "mean"), "1", 'SYNTHETIC.mean: expected a number or null, got "1"'),
        (("nranks",), 0, "nranks: expected an integer >= 1 (the number of ranks), got 0"),
        (("run_name",), 7, "run_name: expected a string, got 7"),
        (("FULL", "rates"), {"a": 1}, 'FULL.rates: expected a list of lists of numbers (or nulls) or null, got {"a": 1}'),
    ],
)
def test_damaged_values_are_named_by_key(key: tuple, value: Any, expected: str) -> None:
    doc = raw("v2")
    target = doc
    for k in key[:-1]:
        target = target[k]
    target[key[-1]] = value
    with pytest.raises(ResultFileError, match=None) as err:
        read_run(doc, "x.json")
    assert str(err.value).startswith("x.json: ") and expected in str(err.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match=r"nope\.json: cannot read it"):
        load(tmp_path / "nope.json")


def test_upgrade_leaves_its_input_alone() -> None:
    doc = raw("v1-0.1.0")
    before = json.dumps(doc, sort_keys=True)
    upgraded, version = upgrade(doc)
    assert version == 1 and upgraded["schema_version"] == 6 and json.dumps(doc, sort_keys=True) == before


# --- Welch's test: values computed with scipy.stats (ttest_ind(equal_var=False); t.sf at df rounded down)


def test_welch_matches_scipy() -> None:
    a, b = [1000.0, 1010.0, 990.0], [700.0, 707.0, 693.0]
    w = welch(a, b)
    assert w is not None
    assert w.t == pytest.approx(-42.568539, rel=1e-6) and w.df == pytest.approx(3.580518, rel=1e-6)
    assert w.df_used == 3 and w.p == pytest.approx(2.853267e-05, rel=1e-5)
    w = welch([800.0, 808.0, 792.0], [795.0, 812.0, 801.0])
    assert w is not None and w.t == pytest.approx(0.392705, rel=1e-5) and w.df == pytest.approx(3.977804, rel=1e-6)
    assert w.p == pytest.approx(0.720778, rel=1e-5)
    assert welch([1.0], [1.0, 2.0]) is None
    same = welch([5.0, 5.0], [5.0, 5.0])
    assert same is not None and same.p == 1.0


# --- the run's name --------------------------------------------------------------------------


def test_run_name_precedence() -> None:
    assert load_config(environ={}).general.run_name is None
    assert load_config(overrides={"global": {"run_name": "file"}}, environ={}).general.run_name == "file"
    assert load_config(overrides={"global": {"run_name": "over"}}, environ={"BENCHY_RUN_NAME": "env"}).general.run_name == "over"
    assert load_config(environ={"BENCHY_RUN_NAME": "env"}).general.run_name == "env"
    assert resolve_config({"GLOBAL": {"report_freq": 5}}, run_name="flag").general.run_name == "flag"
    assert resolve_config(load_config(environ={}), run_name="flag").general.run_name == "flag"


@pytest.mark.parametrize("bad", ["", "   ", "a\nb", "x" * 201, 5])
def test_bad_run_names_are_refused(bad: Any) -> None:
    with pytest.raises(benchy.ConfigError, match=r"global\.run_name: .*expected a printable name of 1 to 200"):
        load_config(overrides={"global": {"run_name": bad}}, environ={})
    if isinstance(bad, str):
        with pytest.raises(benchy.ConfigError, match="--benchy_name"):
            resolve_config(load_config(environ={}), run_name=bad)


def test_holm_adjustment() -> None:
    # Sorted 0.01, 0.03, 0.04, 0.5 -> x4, x3, x2, x1, kept non-decreasing, capped at 1.
    assert holm([0.04, 0.01, 0.03, 0.5]) == pytest.approx([0.09, 0.04, 0.09, 0.5])
    assert holm([0.6, 0.7]) == [1.0, 1.0] and holm([]) == []
