"""The process's exit status when a script ends before benchy's schedule does.

A script that stops early (fewer epochs or steps than the schedule needs) ends with its own status,
usually 0: a CI job could not tell that partial run from a complete one. The session asks here for
:data:`EXIT_INCOMPLETE` instead (:func:`request`); :func:`install` registers, as early as benchy is
loaded, the exit handler that applies it. Handlers run last-registered first, so this one runs
after every handler the script registered later (under ``benchy run`` that is all of them: the
boot installs it before the script starts). It then runs multiprocessing's and logging's own exit
handlers (both idempotent), flushes every open file object, and ends the process with the status
(``os._exit``: a status can no longer be changed any other way once the script has ended).

Nothing is changed when no status was requested, when the script already ends with a non-zero
status of its own, or where benchy does not end the process (a Ray Train worker).
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import sys
from typing import Any, Dict, Optional

from ..core.exits import EXIT_INCOMPLETE

__all__ = ["EXIT_INCOMPLETE", "clear", "install", "request", "requested"]

_state: Dict[str, Any] = {"installed": False, "status": None}


def install() -> None:
    """Register the exit handler (once per process)."""
    if not _state["installed"]:
        _state["installed"] = True
        atexit.register(_end)


def request(status: int) -> None:
    """End the process with ``status`` at exit (see the module)."""
    _state["status"] = status


def clear() -> None:
    """Forget a requested status (a test that ran a session's exit in its own process)."""
    _state["status"] = None


def requested() -> Optional[int]:
    status = _state["status"]
    return status if isinstance(status, int) else None


def _flush_files() -> None:
    """Flush what interpreter teardown would have flushed: every open, writable file object."""
    for obj in gc.get_objects():
        try:  # type(), not isinstance(): a lazy or deprecated object's __class__ is not asked (no warning)
            if issubclass(type(obj), io.IOBase) and not obj.closed and obj.writable():
                obj.flush()
        except Exception:  # a file that cannot flush now is left as it is
            pass


def _end() -> None:
    status = requested()
    if status is None:
        return
    try:
        import multiprocessing.util

        multiprocessing.util._exit_function()  # type: ignore[attr-defined]  # children and finalizers
    except Exception:
        pass
    if "logging" in sys.modules:
        try:
            sys.modules["logging"].shutdown()
        except Exception:
            pass
    _flush_files()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)
