"""The reference tables the documentation is generated from name exactly what the code writes: every
top-level key of a written result JSON (real runs and a parsed log: the model's fields, each with words), every
line kind, every config key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchy.core.config import Config
from benchy.core.config_rules import RULES
from benchy.results import lines
from benchy.results.model import top_rows
from benchy.results.text.config import MEANINGS

JSON_KEYS = top_rows()


def documented_keys() -> tuple:
    return tuple(key for keys, _ in JSON_KEYS for key in keys)


RESULTS = Path(__file__).resolve().parent.parent / "data" / "results"
WRITTEN = ["v5", "v5-2ranks", "v5-sweep"]  # real runs of this schema version


@pytest.mark.parametrize("name", WRITTEN)
def test_every_key_a_run_writes_is_documented_and_nothing_else(name: str) -> None:
    doc = json.loads((RESULTS / name / "benchy_result.json").read_text())
    assert sorted(set(doc) - set(documented_keys())) == []
    assert sorted(set(documented_keys()) - set(doc)) == ["parsed_from"]  # a parsed log's only


def test_a_parsed_logs_keys_are_documented(tmp_path: Path) -> None:
    out = tmp_path / "parsed.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchy", "parse", str(RESULTS / "v5" / "log.txt"), "-o", str(out)],
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
    parsed = set(lines.MESSAGE_KINDS) | {"TRIAL", "TRIAL_WAIT", "ITERATION", "SUMMARY", "SWEEP_ROW"} | set(lines.SUMMARY_WORDS)
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


def test_every_config_key_has_a_meaning_a_rule_and_a_default() -> None:
    defaults = Config().to_dict()
    for section, rules in RULES.items():
        group = "mode" if section in ("IO", "synthetic", "full") else section
        assert set(MEANINGS[group]) == set(rules), section
        assert set(defaults[section]) == set(rules), section
