"""The manual (docs/) and the README: every relative link leads to a file, the API page covers the
public API, and the strict build that CI runs (``sphinx-build -W``) really fails on a broken link and
on a page left out of every table of contents."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List

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


# --- what the docs say is what the code does ------------------------------------------------------------------


def _fenced(page: Path) -> List[str]:
    """The lines inside the page's fenced code blocks."""
    return [line for block in re.findall(r"```[^\n]*\n(.*?)```", page.read_text(), flags=re.S) for line in block.splitlines()]


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_benchy_line_shown_is_one_the_tool_prints_today(page: Path) -> None:
    from benchy.results import lines

    shown = [line.strip() for line in _fenced(page) if line.strip().startswith("BENCHY::")]
    unknown = [line[:120] for line in shown if lines.parse(line) is None]
    assert unknown == []
    # and of today's length: no summary line is longer than 240 characters
    assert [line[:120] for line in shown if line.startswith("BENCHY::SUMMARY::") and len(line) > lines.MAX_LINE] == []


DEV_LOG = re.compile(
    r"(?i:\bissues? \d+|\bcommit [0-9a-f]{7,}\b|\bprevious commit\b|\bthis VM\b|\bwaves? of work\b|\bwave\b)|\bVM\b"
)


@pytest.mark.parametrize("page", [*pages(), ROOT / "CHANGELOG.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_text_about_how_the_project_was_built(page: Path) -> None:
    # The manual says what the tool does and how a figure was measured (the machine and the command), not the
    # project's history (issue numbers, commits, "this VM").
    found = [m.group(0) for m in DEV_LOG.finditer(page.read_text())]
    assert found == []


def test_the_layout_tree_names_every_module_of_the_package() -> None:
    text = (DOCS / "development.md").read_text()
    tree = text[text.index("```\nbenchy/") : text.index("\ndocs/ ")]
    named, wing, package = set(), "", ""
    for line in tree.splitlines():
        top = re.match(r"^  (\w+)/(\S*)", line)
        if top:
            wing = top.group(1)
            if top.group(2):
                named.add(f"{wing}/{top.group(2)}")
            continue
        inner = re.match(r"^    (\w+)(\.py|/)", line)
        deeper = re.match(r"^      (\w+\.py)\b", line)
        if inner and inner.group(2) == "/":
            package = inner.group(1)
        elif inner:
            named.add(f"{wing}/{inner.group(1)}.py")
        elif deeper:
            named.add(f"{wing}/{package}/{deeper.group(1)}")
        elif re.match(r"^  (\w+\.py)\b", line):
            named.add(line.split()[0])
    package = {
        p.relative_to(ROOT / "benchy").as_posix()
        for p in (ROOT / "benchy").rglob("*.py")
        if p.name != "__init__.py" and "boot" not in p.parts
    }
    named = {name for name in named if not name.endswith("__init__.py")}  # the tree names the packages' too
    assert sorted(package - named) == [] and sorted(named - package) == []


def test_the_python_the_readme_names_is_the_one_setup_cfg_requires() -> None:
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    requires = cfg["options"]["python_requires"].strip()
    assert requires == ">=3.11"
    assert "Programming Language :: Python :: 3.11" in cfg["metadata"]["classifiers"]
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.11" in readme and not re.search(r"Python 3\.(?:[0-9]|10)\+", readme)


def test_the_thresholds_the_docs_give_are_the_code_s() -> None:
    from benchy.core import machine, verdict

    readme = (ROOT / "README.md").read_text()
    verdict_page = (DOCS / "guide" / "verdict.md").read_text()
    loop_page = (DOCS / "guide" / "your-loop.md").read_text()
    balanced = f"within {100 * verdict.BALANCE_TOLERANCE:g} % either way"
    assert balanced in readme and balanced in verdict_page
    assert f"no longer falls by more than\n{100 * machine.STEADY_TOLERANCE:g} %" in loop_page
    from benchy.core.config import Config

    defaults = Config()
    assert f"(at most `global.auto_max_warmup`, {defaults.general.auto_max_warmup})" in loop_page


def test_the_exit_statuses_in_help_and_the_manual_are_one_table() -> None:
    import contextlib
    import io

    from benchy.cli.main import main as cli
    from benchy.results.text.exits import EXIT_STATUSES

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli(["--help"])
    text = " ".join(out.getvalue().split())
    for status, words in EXIT_STATUSES:
        assert " ".join(f"{status} {words}".split()) in text, status
    assert "``" not in out.getvalue()  # plain text, no reStructuredText markup
    page = (DOCS / "guide" / "wrapping.md").read_text()
    assert "```{include} ../reference/_generated/exits.md" in page
