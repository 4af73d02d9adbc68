"""The exit statuses of benchy's commands and of a benchmarked script, in one table.

``benchy --help`` prints :func:`table_text`; the documentation's table is generated from
:data:`EXIT_STATUSES` (``docs/_ext``); the session and the commands use the constants.
"""

from __future__ import annotations

import textwrap
from typing import Tuple

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INCOMPLETE",
    "EXIT_MISSING_MODE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_STATUSES",
    "table_text",
]

EXIT_OK = 0
EXIT_REGRESSION = 1  # benchy compare: a mode regressed significantly
EXIT_BAD_INPUT = 2  # a command's input is wrong (a file, an argument) or an optional package is missing
EXIT_MISSING_MODE = 3  # the schedule ended, but a scheduled mode has no counted trial
EXIT_INCOMPLETE = 4  # the script ended on its own before the schedule did: the results are partial

EXIT_STATUSES: Tuple[Tuple[str, str], ...] = (
    (
        str(EXIT_OK),
        "a complete run: the schedule ended and every scheduled mode has a counted trial (the summary and "
        "its verdict are printed); a command that did its job",
    ),
    (
        str(EXIT_REGRESSION),
        "benchy compare: a mode regressed significantly against the baseline; also the script's own status "
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
        "the last lines say which and why",
    ),
    (
        str(EXIT_INCOMPLETE),
        "an incomplete run: the script ended on its own before the schedule did (too few epochs or "
        "steps); the summary is partial and says how many more epochs it needed (this replaces the status "
        "of a script that ended with sys.exit(N) before the schedule did)",
    ),
    (
        "other",
        "the script's own status (its sys.exit code, or 128+N when signal N ended it, as without benchy); "
        "inside a Ray Train worker benchy changes no status",
    ),
)


def table_text() -> str:
    """The table for ``--help``: one status a paragraph, plain text."""
    return "\n".join(
        textwrap.fill(text, 96, initial_indent=f"  {status:<7}", subsequent_indent=" " * 9) for status, text in EXIT_STATUSES
    )
