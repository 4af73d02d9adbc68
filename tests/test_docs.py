"""The manual (docs/) and the README: every relative link leads to a file, the API page covers the
public API, and the strict build that CI runs (``sphinx-build -W``) really fails on a broken link and
on a page left out of every table of contents."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

import benchy

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def pages() -> list:
    return [ROOT / "README.md"] + sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "_generated" not in p.parts)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # not inside code blocks
    broken = [
        target
        for target, _ in LINK.findall(text)
        if not target.startswith(("http://", "https://", "mailto:")) and not (page.parent / target).exists()
    ]
    assert broken == []


def test_the_readme_keeps_to_the_first_screen_and_links_into_the_manual() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 120
    for heading in ("## Reading the three summary lines", "## Install", "## Set-up: two commands", "## The manual"):
        assert heading in readme
    linked = {target for target, _ in LINK.findall(readme)}
    guide = {
        f"docs/{p.relative_to(DOCS).as_posix()}"
        for p in DOCS.rglob("*.md")
        if "_build" not in p.parts and "_generated" not in p.parts and p.name != "index.md"
    }
    assert sorted(guide - linked) == []  # every page of the manual is one click away


def test_the_api_page_documents_every_public_name() -> None:
    api = (DOCS / "reference" / "api.md").read_text()
    documented = set(re.findall(r"\.\. auto\w+:: benchy\.(\w+)", api))
    assert sorted(set(benchy.__all__) - documented - {"__version__"}) == []


def test_the_strict_build_fails_on_a_broken_link_and_an_orphan_page(tmp_path: Path) -> None:
    copy = tmp_path / "checkout"
    shutil.copytree(DOCS, copy / "docs", ignore=shutil.ignore_patterns("_build", "_generated"))
    for name in ("README.md", "CHANGELOG.md"):
        shutil.copy(ROOT / name, copy / name)
    page = copy / "docs" / "guide" / "tuning.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    (copy / "docs" / "guide" / "orphan.md").write_text("# An orphan\n\nIn no table of contents.\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(copy / "docs"), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "no-such-page.md" in proc.stderr and "orphan" in proc.stderr, proc.stderr[-2000:]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^(bash \.ci/browser && .+)$", readme, flags=re.M)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    assert len(commands) == 1 and ci == commands
