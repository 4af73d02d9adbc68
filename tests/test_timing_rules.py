"""The suite's rule for timing tests (``conftest.py``): on a machine other processes keep busy a failed
measurement says the machine was too busy to tell (a skip with the figures); an error is a failure whatever
the load."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

BUSY_TESTS = """
import os, signal, subprocess, sys, time
import pytest

def _busy(seconds):
    # Another process, not this one's child (a shell starts it and leaves): the machine's other work.
    pid = int(subprocess.run(["sh", "-c", f"{sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True).stdout)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGKILL)

@pytest.mark.timing
@pytest.mark.flaky(reruns=0)
def test_a_measurement_spoiled_by_the_load():
    _busy(1.5)
    assert False, "measured too slow"

@pytest.mark.timing
@pytest.mark.flaky(reruns=0)
def test_a_bug_under_the_same_load():
    _busy(1.5)
    raise AttributeError("a bug")
"""


def test_a_failed_measurement_on_a_busy_machine_is_a_skip_and_an_error_a_failure(pytester: pytest.Pytester) -> None:
    for name in ("conftest.py", "helpers.py"):
        shutil.copy(HERE / name, pytester.path / name)
    pytester.makeini("[pytest]\nmarkers =\n    timing: timing test\n")
    pytester.makepyfile(test_busy=BUSY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rfs")
    result.assert_outcomes(skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*the machine was too busy to tell: other processes kept * cores busy*"])
    result.stdout.fnmatch_lines(["*FAILED*test_a_bug_under_the_same_load*"])
