"""The static checks that take long, as tests so that they run beside the others (pytest-xdist): mypy
(strict, as configured in ``pyproject.toml``) and the strict build of the documentation site into
``docs/_build/html`` (the site the README's second command promises)."""

from __future__ import annotations

import subprocess
import sys

from helpers import ROOT


def test_mypy_finds_no_issue() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_documentation_site_builds_strictly() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs", "docs/_build/html"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert (ROOT / "docs" / "_build" / "html" / "index.html").is_file()
