"""The exit statuses of benchy's commands and of a benchmarked script, and the one rule (:func:`run_status`) that
turns a benchmarked script's ending into the status a CI job reads; their words: :mod:`benchy.results.text.exits`.

benchy never changes the status of the script's own process; a tool that owns the process (``benchy run``,
``benchy check``) turns an incomplete run into a failing status.
"""

from __future__ import annotations

from typing import Iterable

EXIT_OK = 0
EXIT_REGRESSION = 1  # benchy compare: a mode regressed significantly; benchy check: a check failed
EXIT_BAD_INPUT = 2  # a command's input is wrong (a file, an argument) or an optional package is missing
EXIT_MISSING_MODE = 3  # the schedule ended, but a scheduled mode has no counted trial
EXIT_INCOMPLETE = 4  # the benchmark did not finish (the script ended first, a signal, an error): partial results

# Set by ``benchy run`` for the command it runs: a file each benchmark in its processes appends the status it
# advises to (one line each), read by the parent once the command has ended (:func:`run_status`).
STATUS_ENV_VAR = "BENCHY_RUN_STATUS_FILE"


def run_status(script: int, advised: Iterable[int]) -> int:
    """The status of ``benchy run``: the script's own, except where it ended with 0: then the worst status the
    benchmarks in its processes advised, 4 when none was benchmarked."""
    if script != EXIT_OK:
        return script
    return max(advised, default=EXIT_INCOMPLETE)  # 4 over 3 over 0
