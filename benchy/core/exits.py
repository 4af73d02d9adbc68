"""The exit statuses of benchy's commands and of a benchmarked script, in one table, and the one rule that
turns a benchmarked script's ending into the status a CI job reads.

What each status means, in words, is :data:`benchy.results.text.exits.EXIT_STATUSES` (``benchy --help`` prints
it, the documentation's table is generated from it); the session and the commands use the constants.

benchy never changes the status of the script's own process: where the script ends first, the process
ends as the script makes it end. A tool that owns the process turns an incomplete run into a failing
status: ``benchy run`` (the parent that waits for the script) with :func:`run_status`, and ``benchy
check`` from the result file's ``exit_status``.
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
    """The status of ``benchy run``: the script's own (``script``: its exit status), except where the script
    ended with 0 and the benchmark did not finish: then the status the benchmark advised, the worst of
    ``advised`` (one per benchmark in the script's processes: 0 complete, 3 a mode without a counted
    trial, 4 incomplete), and 4 when none was benchmarked."""
    if script != EXIT_OK:
        return script
    return max(advised, default=EXIT_INCOMPLETE)  # 4 over 3 over 0
