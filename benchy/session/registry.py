"""Which wrapped loader a process benchmarks, and a loud word for wrappers never iterated.

One benchmark at a time per process: the first wrapper iterated runs it; one first iterated while it runs (a
validation loader, a copy a framework re-created) is the plain loader, named once; after it finished, the next new
one may start another (a notebook's cell run again). Records hold no reference to the loader, so that a wrapper
never iterated (a framework replaced it) is still reported at exit once garbage-collected.
"""

from __future__ import annotations

import atexit
import os
import sys
import weakref
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Set

from ..core.exits import EXIT_INCOMPLETE
from ..results import lines
from ..results.text.run import never_iterated
from .console import write_line

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # benchy/


_LIBRARY = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep, "<frozen ")


def creation_site() -> str:
    """``file:line`` where the script built the wrapper: the first caller outside benchy and the installed libraries
    (Lightning calls the script's ``train_dataloader()``), else the first outside benchy."""
    frame = sys._getframe(1)
    outside: Optional[str] = None
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            if not any(part in filename for part in _LIBRARY):
                return site
            outside = outside or site
        frame = frame.f_back  # type: ignore[assignment]
    return outside or "<unknown>"


@dataclass
class Record:
    """One wrapper: what it is, where it was built, and what became of it."""

    kind: str
    where: str
    iterated: bool = False
    benchmarked: bool = False
    finished: bool = False
    copied: bool = False  # copied or pickled: the copy may be the one iterated (another process)
    advised: Optional[int] = None  # the exit status its benchmark advised for CI, once it ended
    session: Optional[weakref.ReferenceType[Any]] = None  # its benchmark's session, while it lives


class Registry:
    """The wrappers of this process (module singleton :data:`REGISTRY`)."""

    def __init__(self, write: Optional[Callable[[str], None]] = None) -> None:
        self._hooked = False
        self._write = write
        self.reset()

    def reset(self) -> None:
        """Forget every wrapper (a forked child starts afresh; tests start each case afresh)."""
        self.records: List[Record] = []
        self.owner: Optional[Record] = None
        self.noted: Set[str] = set()  # creation sites already named as plain loaders
        self._pid = os.getpid()

    def register(self, kind: str, where: str) -> Record:
        if os.getpid() != self._pid:  # a forked child (loader worker) starts afresh
            self.reset()
        record = Record(kind, where)
        self.records.append(record)
        if not self._hooked:
            self._hooked = True
            atexit.register(self.at_exit)
        return record

    def claim(self, record: Record) -> bool:
        """First ``iter()`` of a wrapper: True if it is the one benchmarked in this process."""
        record.iterated = True
        if self.owner is None or self.owner.finished:
            self.owner = record
            record.benchmarked = True
        return record.benchmarked

    def end_all(self) -> None:
        """End every benchmark of this process that still runs, as the interpreter's exit would (``benchy run``'s
        in-process form reports the run's status before the exit handlers run)."""
        for record in self.records:
            session = None if record.session is None else record.session()
            if session is not None and session.running:
                session.at_exit()

    def advised(self) -> List[int]:
        """The exit status each benchmark of this process advises for CI; empty when none ran."""
        return [EXIT_INCOMPLETE if r.advised is None else r.advised for r in self.records if r.benchmarked]

    def others(self) -> List[str]:
        """``kind at where`` of every wrapper that is not the benchmarked one."""
        return [f"{r.kind} created at {r.where}" for r in self.records if not r.benchmarked]

    def at_exit(self) -> None:
        """The exit warning (rank 0), when no wrapper was benchmarked and some were never iterated."""
        if os.getpid() != self._pid or any(r.benchmarked for r in self.records):
            return
        idle = [f"{r.kind} created at {r.where}" for r in self.records if not r.iterated and not r.copied]
        if not idle:
            return
        from ..measure.profiling import global_rank

        if global_rank() != 0:
            return
        line = lines.warning(never_iterated(idle))
        if self._write is not None:
            self._write(line)
            return
        write_line(line, sys.stdout, sys.stderr)


REGISTRY = Registry()
