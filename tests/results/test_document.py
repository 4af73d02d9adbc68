"""The result file's one declaration (the structs of results/model.py) and its one reader: every command meets a
bad file with one line naming the file, the key, what was expected and what was found (exit 2), within bounded
memory; keys the model does not declare are kept; a fuzzer (hypothesis) holds the reader to that for any bytes
and any change to a real file."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
from helpers import undeclared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import benchy
from benchy.results.document import MAX_DEPTH, ResultFileError, check, parse
from benchy.results.model import Document, rows
from benchy.results.schema import read_run

DATA = Path(__file__).resolve().parent.parent / "data" / "results"


def raw(name: str) -> Dict[str, Any]:
    return json.loads((DATA / name / "benchy_result.json").read_text())


def _deep(levels: int) -> str:
    return '{"schema_version": 4, "run_name": "x", "config": {"a": ' + "[" * levels + "]" * levels + "}}"


def _set(doc: Dict[str, Any], path: List[Any], value: Any) -> Dict[str, Any]:
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


# (what, the file's text, what the one line says after "<file>: ")
CASES: List[tuple] = [
    ("nested past Python's reader", _deep(5_000), "nested deeper than Python's JSON reader goes"),
    ("nested past the bound", _deep(MAX_DEPTH + 5), f"expected at most {MAX_DEPTH} levels of nesting"),
    (
        "a 5 000-digit integer",
        json.dumps(raw("v4")).replace('"nranks": 1', '"nranks": ' + "7" * 5000),
        "not a result file: an integer of 5000 digits (benchy writes at most 30)",
    ),
    ("NaN", json.dumps(raw("v4")).replace('"nranks": 1', '"nranks": NaN'), "NaN (JSON has no NaN or Infinity"),
    (
        "a sweep setting's mean",
        json.dumps(_set(raw("v4-sweep"), ["sweep", "settings", 1, "mean"], "soon")),
        'sweep.settings[1].mean: expected a number or null, got "soon"',
    ),
    (
        "a pass's start",
        json.dumps(_set(raw("v4"), ["loader_startup", "started", 0], "soon")),
        'loader_startup.started[0]: expected a number from 0 to 1e+11 (Unix seconds), got "soon"',
    ),
    (
        "a trial's start",
        json.dumps(_set(raw("v4"), ["timeline", "trials", 2, "started"], "soon")),
        'timeline.trials[2].started: expected a number from 0 to 1e+11 (Unix seconds) or null, got "soon"',
    ),
    (
        "a start before 1970",
        json.dumps(_set(raw("v4"), ["timeline", "trials", 0, "started"], -62_135_596_801)),
        "timeline.trials[0].started: expected a number from 0 to 1e+11 (Unix seconds) or null, got -62135596801",
    ),
    (
        "a file cut short",
        json.dumps(raw("v4"))[:5000],
        "cut short: the JSON ends at character 5000 before the document does",
    ),
    (
        "a system figure",
        json.dumps(_set(raw("v4"), ["FULL", "system", 0, "rss_max_bytes"], "lots")),
        'FULL.system[0].rss_max_bytes: expected a number or null, got "lots"',
    ),
    (
        "a throughput past any machine",
        json.dumps(_set(raw("v4"), ["SYNTHETIC", "trial_throughput", 0], 1.6e154)),
        "SYNTHETIC.trial_throughput[0]: expected a number of at most 1e+30 in size or null, got 1.6e+154",
    ),
    (
        "a stage's name",
        json.dumps(_set(raw("v4"), ["stages", "stages", 0, "name"], 3)),
        "stages.stages[0].name: expected a string or null, got 3",
    ),
    (
        "a window",
        json.dumps(_set(raw("v4"), ["timeline", "trials", 9, "window", "start_step"], -1)),
        "timeline.trials[9].window.start_step: expected an integer >= 0, got -1",
    ),
    (
        "a mode that is not one",
        json.dumps(_set(raw("v4"), ["timeline", "trials", 0, "mode"], "FAST")),
        'timeline.trials[0].mode: expected one of "IO", "SYNTHETIC", "FULL", got "FAST"',
    ),
    (
        "no run name",
        json.dumps({k: v for k, v in raw("v4").items() if k != "run_name"}),
        "run_name: expected a string, got nothing",
    ),
    ("not UTF-8", '{"schema_version": 4, "run_name": "\udcff"}', "not a JSON file (not UTF-8"),
    (
        "a mass of tiny values",
        '{"schema_version": 4, "run_name": "x", "rerun": [' + ",".join(["0"] * 3_000_000) + "]}",
        "more than 3 times its size: not a file benchy writes",
    ),
]
COMMANDS: List[List[str]] = [
    ["summary", "{f}"],
    ["summary", "{f}", "--format", "markdown"],
    ["summary", "{f}", "--format", "json"],
    ["report", "{f}"],
    ["report", "{f}", "--html", "{out}.html"],
    ["compare", "{f}", "{f}"],
    ["plot", "{f}", "-o", "{out}.png"],
    ["plot", "{f}", "--timeline", "-o", "{out}.png"],
    ["trace", "{f}", "-o", "{out}.trace.json"],
]
RUN_ALL = """
import contextlib, io, json, sys
from benchy.cli.main import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    out.append([argv, code, err.getvalue()])
print(json.dumps(out))
"""


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def test_every_command_meets_every_bad_file_with_one_line_and_exit_2(tmp_path: Path) -> None:
    runs = []
    for k, (_, text, _) in enumerate(CASES):
        path = tmp_path / f"bad{k}.json"
        _write(path, text)
        runs += [[a.format(f=path, out=tmp_path / f"out{k}") for a in argv] for argv in COMMANDS]
    proc = subprocess.run([sys.executable, "-c", RUN_ALL, json.dumps(runs)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    for (argv, code, err), case in zip(results, [c for c in CASES for _ in COMMANDS]):
        what, _, expected = case
        lines = err.strip().splitlines()
        assert code == 2, f"{what}: {argv}: exit {code}: {err}"
        assert len(lines) == 1 and "Traceback" not in err, f"{what}: {argv}: {err}"
        assert str(argv[1]) in lines[0] and expected in lines[0], f"{what}: {argv}: {lines[0]}"
        assert not any(Path(a).exists() for a in argv if str(tmp_path / "out") in a), f"{what}: {argv} wrote a file"


def test_a_bad_file_from_the_command_line_is_one_line_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep(5_000))
    proc = subprocess.run([sys.executable, "-m", "benchy", "summary", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        f"benchy summary: {path}: not a result file: nested deeper than Python's JSON reader goes "
        f"(benchy writes at most 6 levels)\n"
    )


@pytest.mark.parametrize("what,text,expected", CASES, ids=[c[0] for c in CASES])
def test_load_raises_the_one_error(tmp_path: Path, what: str, text: str, expected: str) -> None:
    path = tmp_path / "r.json"
    _write(path, text)
    with pytest.raises(ResultFileError) as err:
        benchy.load(path)
    assert str(err.value).startswith(f"{path}: ") and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_every_stored_version_checks_and_every_declared_key_is_documented() -> None:
    for name in sorted(p.name for p in DATA.iterdir() if p.is_dir()):
        run = benchy.load(DATA / name / "benchy_result.json")
        check(run.document, name)
    documented = {path for path, _, _, _ in rows()}
    for key in (
        "FULL.system[].rss_max_bytes",
        "timeline.trials[].window.start_step",
        "sweep.settings[].mean",
        "stages.per_worker[].busy_share",
        "compute.by_op.<name>",
        "decision.io_vs_synthetic.interval[]",
    ):
        assert key in documented
    top = [p for p, _, required, _ in rows() if required and "." not in p and "[" not in p]
    assert top == ["schema_version", "run_name"]


# keys the stored runs' versions wrote that benchy no longer writes (global.price_per_hour was cut after 0.2.0): a
# file that holds them still reads (test_every_stored_version_checks_...), the model no longer declares them
CUT = {"whatif.price_per_hour", "whatif.wait_cost_per_epoch", "whatif.wait_cost_per_1000_steps"}


def test_the_model_declares_every_key_a_real_run_writes() -> None:
    for name in ("v4", "v4-2ranks", "v4-sweep", "v5", "v5-2ranks", "v5-sweep", "v6", "v6-2ranks", "v6-sweep"):
        assert undeclared(raw(name)) - CUT == set(), name


def test_keys_the_model_does_not_declare_are_kept_on_read(tmp_path: Path) -> None:
    doc = raw("v5")
    doc["from_a_newer_tool"] = {"kept": [1, 2]}
    doc["FULL"]["system"][0]["fan_rpm"] = 1200
    path = tmp_path / "extra.json"
    path.write_text(json.dumps(doc))
    run = benchy.load(path)
    assert run.document["from_a_newer_tool"] == {"kept": [1, 2]} and run.document["FULL"]["system"][0]["fan_rpm"] == 1200
    assert run.model.FULL is not None and run.model.FULL.system[0] is not None  # the declared keys decoded beside them
    assert run.model.FULL.system[0].rss_max_bytes == doc["FULL"]["system"][0]["rss_max_bytes"]


# --- memory -------------------------------------------------------------------------------------


def _peak(path: Path) -> tuple:
    tracemalloc.start()
    try:
        try:
            benchy.load(path)
            outcome = "read"
        except ResultFileError as err:
            outcome = str(err)
        return tracemalloc.get_traced_memory()[1], outcome
    finally:
        tracemalloc.stop()


def _big_run(compact: bool) -> str:
    doc = raw("v4")
    # Per-step throughputs as a run writes them: samples over a measured period, at full precision.
    doc["FULL"]["rates"] = [[64 / (0.02 + (i * 7919 % 1000) * 1.37e-5) for i in range(150_000)] for _ in range(3)]
    return json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=1)


@pytest.mark.parametrize(
    "what,make,read",
    [
        ("a run with 450 000 per-step throughputs", lambda: _big_run(False), True),
        ("the same, without spaces", lambda: _big_run(True), True),
        ("a mass of zeros", lambda: '{"schema_version":4,"run_name":"x","rerun":[' + ",".join(["0"] * 3_000_000) + "]}", False),
        (
            "a mass of empty lists",
            lambda: '{"schema_version":4,"run_name":"x","rerun":[' + ",".join(["[]"] * 2_000_000) + "]}",
            False,
        ),
        (
            "a mass of empty objects",
            lambda: '{"schema_version":4,"run_name":"x","rerun":[' + ",".join(["{}"] * 2_000_000) + "]}",
            False,
        ),
        ("a long string", lambda: '{"schema_version":4,"run_name":"' + "a" * (8 << 20) + '"}', True),
        ("a long string with one emoji", lambda: '{"schema_version":4,"run_name":"' + "a" * (8 << 20) + '\U0001f600"}', False),
    ],
)
def test_reading_or_refusing_takes_at_most_three_times_the_file(
    tmp_path: Path, what: str, make: Callable[[], str], read: bool
) -> None:
    path = tmp_path / "big.json"
    path.write_text(make())
    size = path.stat().st_size
    assert size > 5e6
    peak, outcome = _peak(path)
    assert (outcome == "read") == read, f"{what}: {outcome}"
    assert peak <= 3 * size, f"{what}: {peak / size:.2f} times its {size} bytes ({outcome})"


# --- the fuzzer ---------------------------------------------------------------------------------

SEEDS = {name: raw(name) for name in ("v4-sweep", "v1-0.1.0")}  # the newest layout, and the oldest (upgraded)
SEED = SEEDS["v4-sweep"]


def _paths(value: Any, at: List[Any], out: List[List[Any]]) -> List[List[Any]]:
    out.append(at)
    if isinstance(value, dict):
        for key, x in value.items():
            _paths(x, at + [key], out)
    elif isinstance(value, list):
        for i, x in enumerate(value[:3]):
            _paths(x, at + [i], out)
    return out


PATHS = [(name, at) for name, seed in SEEDS.items() for at in _paths(seed, [], [])[1:]]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**40), 10**40) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _outcome(data: bytes, tmp: Path) -> None:
    path = tmp / "fuzz.json"
    path.write_bytes(data)
    try:
        run = benchy.load(path)
    except ResultFileError as err:
        assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
        return
    # What loads renders: the lines, the tables, a comparison, the HTML page's tables, the trace.
    from benchy.cli.main import _summary_json, _summary_text
    from benchy.results import compare, html, trace
    from benchy.results.tables import summary_table

    _summary_text(run)
    _summary_json(run)
    summary_table(run).markdown()
    compare.markdown(compare.compare_runs(run, run))
    html.system_table(run)
    html.sweep_table(run)
    try:
        trace.write_trace(run, io.StringIO())
    except trace.TraceError:
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_fuzz_any_bytes(tmp_path: Path, data: bytes) -> None:
    _outcome(data, tmp_path)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PATHS), JSON_VALUES)
def test_fuzz_a_real_file_with_one_value_changed(tmp_path: Path, where: tuple, value: Any) -> None:
    name, at = where
    doc = copy.deepcopy(SEEDS[name])
    _set(doc, at, value)
    _outcome(json.dumps(doc).encode(), tmp_path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, len(json.dumps(SEED)) - 1), st.binary(min_size=1, max_size=8))
def test_fuzz_a_real_file_cut_or_spliced(tmp_path: Path, at: int, splice: bytes) -> None:
    text = json.dumps(SEED).encode()
    _outcome(text[:at], tmp_path)
    _outcome(text[:at] + splice + text[at:], tmp_path)


def test_a_document_in_memory_is_checked_as_a_file_is() -> None:
    doc = _set(raw("v4"), ["stages", "per_worker"], [{"worker": "w0"}])
    with pytest.raises(
        ResultFileError,
        match=r"^mem: stages\.per_worker\[0\]\.worker: expected an integer >= 0, "
        r'got "w0"$',
    ):
        read_run(doc, "mem")
    assert parse('{"a": [1, 2.5, null]}', "x") == {"a": [1, 2.5, None]}
    assert isinstance(read_run(raw("v5"), "mem").model, Document)
    assert dict(rows())["IO"] if False else [r[1] for r in rows() if r[0] == "IO"] == ["an object with the mode's trials or null"]


# --- one declaration ----------------------------------------------------------------------------


def test_the_docs_tables_the_writer_and_the_reader_all_come_from_the_structs(tmp_path: Path) -> None:
    import msgspec

    from benchy.results.files import write_document
    from benchy.results.model import top_rows

    # The reader decodes into them.
    run = benchy.load(DATA / "v6" / "benchy_result.json")
    assert isinstance(run.model, Document) and run.model.run_name == run.name
    # The writer encodes them: every declared key in the declared order.
    handle = io.StringIO()
    write_document(handle, run.model)
    out = json.loads(handle.getvalue())
    fields = [f.encode_name for f in msgspec.structs.fields(Document)]
    assert list(out) == [f for f in fields if f in out] and set(out) >= set(raw("v6"))
    first, again = raw("v6")["FULL"]["system"][0], out["FULL"]["system"][0]
    assert {k: again[k] for k in first} == first and again["gpu_util"] is None  # every declared key, null if unmeasured
    assert "parsed_from" not in out and "tokens" not in out["FULL"]  # left UNSET: left out
    # The manual's tables are generated from them (docs/_ext/benchy_reference.py).
    sys.path.insert(0, str(DATA.parents[2] / "docs" / "_ext"))
    try:
        import benchy_reference
    finally:
        sys.path.pop(0)
    json_md, document_md = benchy_reference.json_table(), benchy_reference.document_table()
    assert all(f"`{keys[0]}`" in json_md for keys, _ in top_rows()) and len(top_rows()) >= 40
    assert all(f"| `{path}` | {words}" in document_md for path, words, _, _ in rows())
