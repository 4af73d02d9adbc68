"""The exit statuses of benchy's commands and of a benchmarked script, in one table, and the one rule that
turns a benchmarked script's ending into the status a CI job reads.

``benchy --help`` prints :func:`table_text`; the documentation's table is generated from
:data:`EXIT_STATUSES` (``docs/_ext``); the session and the commands use the constants.

benchy never changes the status of the script's own process: where the script ends first, the process
ends as the script makes it end. A tool that owns the process turns an incomplete run into a failing
status: ``benchy run`` (the parent that waits for the script) with :func:`run_status`, and ``benchy
check`` from the result file's ``exit_status``.
"""

from __future__ import annotations

import textwrap
from typing import Iterable, Tuple

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INCOMPLETE",
    "EXIT_MISSING_MODE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_STATUSES",
    "STATUS_ENV_VAR",
    "run_status",
    "table_text",
]

EXIT_OK = 0
EXIT_REGRESSION = 1  # benchy compare: a mode regressed significantly; benchy check: a check failed
EXIT_BAD_INPUT = 2  # a command's input is wrong (a file, an argument) or an optional package is missing
EXIT_MISSING_MODE = 3  # the schedule ended, but a scheduled mode has no counted trial
EXIT_INCOMPLETE = 4  # the benchmark did not finish (the script ended first, a signal, an error): partial results

# Set by ``benchy run`` for the command it runs: a file each benchmark in its processes appends the status it
# advises to (one line each), read by the parent once the command has ended (:func:`run_status`).
STATUS_ENV_VAR = "BENCHY_RUN_STATUS_FILE"

EXIT_STATUSES: Tuple[Tuple[str, str], ...] = (
    (
        str(EXIT_OK),
        "a complete run: the schedule ended and every scheduled mode has a counted trial (the summary and "
        "its verdict are printed); a command that did its job",
    ),
    (
        str(EXIT_REGRESSION),
        "benchy compare: a mode regressed significantly against the baseline; benchy check: the verdict "
        "matched --fail-on-verdict or a mode regressed against --baseline; also the script's own status "
        "when it raised an uncaught exception, as without benchy",
    ),
    (
        str(EXIT_BAD_INPUT),
        "a command's input is wrong (the file or argument is named) or an optional package is missing "
        "(the install command is given); under benchy run, a bad configuration file (said before the script starts)",
    ),
    (
        str(EXIT_MISSING_MODE),
        "the schedule ended, but a scheduled mode has no counted trial (every one was interrupted): "
        "the last lines say which and why; benchy ends the process with it under exit_after_tests, and "
        "benchy run and benchy check report it",
    ),
    (
        str(EXIT_INCOMPLETE),
        "an incomplete run: the script ended before the schedule did (too few epochs or steps, a signal, "
        "an error), or nothing was benchmarked; reported by benchy run when the script itself ended with 0, "
        "and by benchy check (the result file's exit_status). The script's own process keeps the status "
        "the script chose: benchy says the run is incomplete in its summary and the JSON",
    ),
    (
        "other",
        "the script's own status (its sys.exit code, or 128+N when signal N ended it, as without benchy); "
        "benchy run ends as the script ended, by the same signal where one ended it",
    ),
)


def run_status(script: int, advised: Iterable[int]) -> int:
    """The status of ``benchy run``: the script's own (``script``: its exit status), except where the script
    ended with 0 and the benchmark did not finish: then the status the benchmark advised, the worst of
    ``advised`` (one per benchmark in the script's processes: 0 complete, 3 a mode without a counted
    trial, 4 incomplete), and 4 when none was benchmarked."""
    if script != EXIT_OK:
        return script
    found = list(advised)
    if not found:
        return EXIT_INCOMPLETE
    return max(found)  # 4 over 3 over 0


def table_text() -> str:
    """The table for ``--help``: one status a paragraph, plain text."""
    return "\n".join(
        textwrap.fill(text, 96, initial_indent=f"  {status:<7}", subsequent_indent=" " * 9) for status, text in EXIT_STATUSES
    )
