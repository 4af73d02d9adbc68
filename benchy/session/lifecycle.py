"""A benchmark's life in its process: SIGTERM (Slurm's preemption and time-out) and interpreter exit.

:class:`Lifecycle` installs the handlers when the benchmark starts and removes the signal handler
when it ends. What a session does then (name the running trial, print and write what was measured)
is its own ``stop_for_signal`` and ``at_exit``; after that the signal takes its course: the
handler that was there before (the script's or the launcher's) runs, or the default action ends
the process with the signal's status.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any, Callable

__all__ = ["Lifecycle"]


class Lifecycle:
    """SIGTERM and at-exit hooks for one benchmark (handlers only from the main thread)."""

    def __init__(self, on_signal: Callable[[str], None], on_exit: Callable[[], None]) -> None:
        self._on_signal = on_signal
        self._on_exit = on_exit
        self._previous: Any = None

    def install(self) -> None:
        """At the benchmark's start: the at-exit hook, and the SIGTERM handler where signals can be set."""
        atexit.register(self._on_exit)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be set from the main thread
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError):  # pragma: no cover - unusual embeddings
            self._previous = None

    def restore(self) -> None:
        """At the benchmark's end: the SIGTERM handler that was there before, if ours is still set."""
        if self._previous is None or threading.current_thread() is not threading.main_thread():
            return
        try:
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._previous)
        except (ValueError, OSError):  # pragma: no cover
            pass

    def _handle(self, signum: int, frame: Any) -> None:
        previous = self._previous
        try:
            self._on_signal("SIGTERM")
        finally:
            self.restore()
            if callable(previous):
                previous(signum, frame)  # the script's or launcher's own handler
            elif previous != signal.SIG_IGN:
                os.kill(os.getpid(), signum)  # the default action: end with the signal's status
