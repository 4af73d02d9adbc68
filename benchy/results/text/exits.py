"""The exit statuses of benchy's commands and of a benchmarked script, in words: one table, which ``benchy --help``
prints and ``docs/_ext`` renders (no torch; the statuses themselves are :mod:`benchy.core.exits`').
"""

from __future__ import annotations

import textwrap
from typing import Tuple

from ...core.exits import EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_MISSING_MODE, EXIT_OK, EXIT_REGRESSION

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


def table_text() -> str:
    """The table for ``--help``: one status a paragraph, plain text."""
    return "\n".join(
        textwrap.fill(text, 96, initial_indent=f"  {status:<7}", subsequent_indent=" " * 9) for status, text in EXIT_STATUSES
    )
