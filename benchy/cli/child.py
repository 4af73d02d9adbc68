"""``benchy run -- COMMAND``: the command as a child process that benchy waits for (no torch), its every Python
process booted by the ``sitecustomize`` beside :mod:`benchy.integrations.runner`, each benchmark's advised status
appended to a record (:data:`~benchy.core.exits.STATUS_ENV_VAR`).

The signals this process receives reach the command; those a terminal sends (SIGINT, SIGQUIT, SIGHUP) only where
the terminal did not: the command stays in this process's group, so that it keeps the terminal for input,
Ctrl-C and Ctrl-Z as without benchy, and a terminal signals both. A command ended by a signal ends this process by
the same signal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

from ..core.exits import STATUS_ENV_VAR, run_status
from ..results.files import read_statuses

ALWAYS_FORWARDED = (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)  # a terminal sends these to its foreground group


def _terminal_foreground() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False  # no controlling terminal: every signal here was sent to this process by another
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def forwarded(signum: int, foreground: bool) -> bool:
    """Whether a signal this process received is sent on to the command (see the module)."""
    return signum in ALWAYS_FORWARDED or (signum in TERMINAL_SIGNALS and not foreground)


def run_child(command: Sequence[str], env: Dict[str, str]) -> int:
    """Run ``command`` with ``env``, forward signals, wait; the status this process ends with."""
    record_dir = tempfile.mkdtemp(prefix="benchy-run-")
    record = os.path.join(record_dir, "status")
    child: Optional[subprocess.Popen[Any]] = None
    previous: Dict[int, Any] = {}
    early: List[int] = []  # received before the command started: sent to it once it has

    def forward(signum: int, frame: Any) -> None:
        if not forwarded(signum, _terminal_foreground()):
            return
        if child is None:
            early.append(signum)
        elif child.returncode is None:
            with contextlib.suppress(OSError):  # it has just ended
                child.send_signal(signum)

    try:
        for sig in (*ALWAYS_FORWARDED, *TERMINAL_SIGNALS):
            previous[int(sig)] = signal.signal(sig, forward)
        child = subprocess.Popen(list(command), env=dict(env, **{STATUS_ENV_VAR: record}))
        for number in early:
            child.send_signal(number)
        status = child.wait()
        advised = read_statuses(record)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        shutil.rmtree(record_dir, ignore_errors=True)
    if status < 0:
        _end_by_signal(-status)
        return 128 - status  # the signal did not end this process (it is blocked or ignored here)
    return run_status(status, advised)


def _end_by_signal(signum: int) -> None:
    """End this process by ``signum``, as the command ended (its default action; no core file of this one)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
    except (OSError, ValueError):
        return
