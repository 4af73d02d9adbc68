"""The reference tables the documentation is generated from name exactly what the code writes: every
top-level key of a written result JSON (real runs and a parsed log: the model's fields, each with words), every
line kind, every config key (the manual's table, the validation and the defaults read from one declaration)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchy.core.config import Config, merge_layers
from benchy.core.config_rules import RULES, SECTION_CLASS
from benchy.results import lines
from benchy.results.model import top_rows

JSON_KEYS = top_rows()


def documented_keys() -> tuple:
    return tuple(key for keys, _ in JSON_KEYS for key in keys)


RESULTS = Path(__file__).resolve().parent.parent / "data" / "results"
WRITTEN = ["v6", "v6-2ranks", "v6-sweep"]  # real runs of this schema version


@pytest.mark.parametrize("name", WRITTEN)
def test_every_key_a_run_writes_is_documented_and_nothing_else(name: str) -> None:
    doc = json.loads((RESULTS / name / "benchy_result.json").read_text())
    assert sorted(set(doc) - set(documented_keys())) == []
    assert sorted(set(documented_keys()) - set(doc)) == ["parsed_from"]  # a parsed log's only


def test_a_parsed_logs_keys_are_documented(tmp_path: Path) -> None:
    out = tmp_path / "parsed.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchy", "parse", str(RESULTS / "v6" / "log.txt"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(out.read_text())) <= set(documented_keys())


def test_each_json_key_is_documented_once_with_text() -> None:
    keys = documented_keys()
    assert len(keys) == len(set(keys))
    assert all(text.strip() and not text.startswith(" ") for _, text in JSON_KEYS)


def test_every_line_kind_is_documented_once() -> None:
    kinds = [kind for kind, _, _ in lines.LINE_KINDS]
    parsed = (
        set(lines.MESSAGE_KINDS)
        | {"TRIAL", "TRIAL_WAIT", "ITERATION", "SUMMARY", "SWEEP_ROW", "WATCH_RISE"}
        | set(lines.SUMMARY_WORDS)
    )
    assert len(kinds) == len(set(kinds)) and set(kinds) == parsed
    for kind, form, when in lines.LINE_KINDS:
        assert form.startswith("BENCHY::") and when, kind


@pytest.mark.parametrize("name", sorted(p.name for p in RESULTS.iterdir() if (p / "log.txt").exists()))
def test_every_line_of_a_stored_log_is_of_a_documented_kind(name: str) -> None:
    documented = {kind for kind, _, _ in lines.LINE_KINDS}
    seen = set()
    for text in (RESULTS / name / "log.txt").read_text().splitlines():
        if "BENCHY::" in text:
            line = lines.parse(text)
            assert line is not None, f"{name}: an unparsed line: {text!r}"
            seen.add(line.kind)
    assert seen and seen <= documented


def test_the_config_reference_the_validation_and_the_defaults_are_one_declaration() -> None:
    """Each key is declared once, as its section's field (default, rule, words): the manual's table, the checks and
    the defaults all read that field, so a key declared is in each, in the same order, and nothing else is."""
    sys.path.insert(0, str(RESULTS.parents[2] / "docs" / "_ext"))
    try:
        import benchy_reference as ref
    finally:
        sys.path.pop(0)
    table, documented = ref.config_table(), ref.defaults()
    merged, _, none = merge_layers([])
    assert none == [] and list(RULES) == list(SECTION_CLASS) == list(Config().to_dict())
    rows = 0
    for section, cls in SECTION_CLASS.items():
        fields = dataclasses.fields(cls)
        assert [f.name for f in fields] == list(RULES[section]) == list(merged[section]), section
        for f in fields:
            rule, where = f.metadata["rule"], f"{section}.{f.name}"
            assert RULES[section][f.name] is rule and merged[section][f.name] == f.default, where
            assert rule.check(f.default) and rule.allowed.strip() and rule.does.strip(), where
            _, _, problems = merge_layers([("f.yaml", {section: {f.name: object()}})])
            assert len(problems) == 1 and problems[0].startswith(f"benchy config f.yaml: {where}: got "), problems
            assert problems[0].endswith(f"; expected {rule.allowed}"), problems
            if section not in ("synthetic", "full"):  # the manual shows IO's for the three
                default = ref._code(ref._value(documented[section][f.name]))
                assert f"| `{f.name}` | {default} | {ref._cell(rule.allowed)} | {ref._cell(rule.does)} |" in table, where
                rows += 1
    assert table.count("\n| `") == rows
