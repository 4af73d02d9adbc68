"""Atomic files: a temporary file in the same directory, then a rename."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchy.results.files import write_json_atomic


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "r.json"
    write_json_atomic(str(target), {"a": 1})
    write_json_atomic(str(target), {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json_atomic(str(target), {"a": 1})
    with pytest.raises(ValueError, match="expected a JSON value, got object"):
        write_json_atomic(str(target), {"a": object()})  # not a JSON value
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
