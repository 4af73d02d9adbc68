"""Trials beside the schedule, one module each: the loader sweep before it, and the extras after the verdict (glue).

A *hidden* side (:data:`HIDDEN`) runs on passes of benchy's own, between two steps of the loop, with the user's
random streams kept by the session. A side *window* (:data:`WINDOWS`) is a window of the loop's own steps with a
helper beside it (``start`` gives None, and the results say why, where it cannot run).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable, Dict, Optional, Protocol, Tuple

from ...core.config import Config
from ...core.outcomes import Reason, Why
from ...core.results import RunResults, TrialResult, folded
from ...core.schedule import Extra, TrialSpec
from ..sink import ResultSink
from ..trials import TrialRunner

AUTO_TRIALS, AUTO_WARMUPS = 3, 1  # side trials for IO's ``auto`` counts


@dataclasses.dataclass(frozen=True)
class SideEnv:
    """What a side may use; ``running`` is told which trial runs, for a signal that comes during it."""

    config: Config
    runner: TrialRunner
    sink: ResultSink
    loader: Any  # session.loop.LoaderFacts
    workers: int
    running: Callable[[Optional[TrialSpec]], None]
    h2d_copy: Optional[Callable[[Any], Any]] = None  # an injected IO_H2D copy (tests), else the accelerator's


class SideWindow(Protocol):
    def start(self, env: SideEnv, results: RunResults) -> Tuple[Any, RunResults]: ...

    def finish(self, env: SideEnv, helper: Any, result: TrialResult, results: RunResults, handed: int) -> RunResults: ...

    def stop(self, helper: Any) -> None: ...


def side_counts(config: Config) -> Tuple[int, int]:
    """(trials, warm-ups) of each side trial series: IO's own, or 3 and 1 where IO's are ``auto``."""
    io = config.io
    ntrials = io.ntrials if isinstance(io.ntrials, int) and io.ntrials > 0 else AUTO_TRIALS
    nwarmup = io.nwarmup if isinstance(io.nwarmup, int) else AUTO_WARMUPS
    return ntrials, nwarmup


def close_quietly(source: Any) -> None:
    """Shut a pass of a side's own down (its workers end); one already gone is no error."""
    if source is not None:
        with contextlib.suppress(Exception):  # a worker already gone
            source.close()


def off_by_config(config: Config, results: RunResults) -> RunResults:
    """The sides the config turns off say so where they would have shown (the summary's lines, the JSON)."""
    g = config.general
    if not g.stages:
        results = results.changed(stages_skipped=Reason(Why.OFF, detail="stages"))
    if not g.io_h2d:
        results = results.changed(h2d_skipped=Reason(Why.OFF, detail="io_h2d"))
    return results


class Running:
    """The side window that runs now, if any: its kind and its helper (what runs beside the window)."""

    def __init__(self) -> None:
        self.extra: Optional[Extra] = None
        self._helper: Any = None

    def start(self, extra: Extra, env: SideEnv, results: RunResults) -> Tuple[bool, RunResults]:
        """Start ``extra``'s helper; False (and why in the results) where it cannot run."""
        helper, results = WINDOWS[extra].start(env, results)
        if helper is not None:
            self.extra, self._helper = extra, helper
        return helper is not None, results

    def finish(self, env: SideEnv, result: TrialResult, results: RunResults, handed: int) -> RunResults:
        """The window measured its periods (``handed``: the batches it handed out, the loop's steps while its helper
        ran): its figures and its trial in the results."""
        assert self.extra is not None
        results = WINDOWS[self.extra].finish(env, self._helper, result, results, handed)
        self.extra = self._helper = None
        return results.changed(diagnostics=(*results.diagnostics, folded(result)))

    def stop(self, why: Reason, results: RunResults) -> RunResults:
        """The window ends before its periods: its helper stopped, the loss recorded."""
        if self.extra is None:
            return results
        WINDOWS[self.extra].stop(self._helper)
        why = dataclasses.replace(why, extra=self.extra)
        self.extra = self._helper = None
        return results.changed(diagnostics_skipped=(*results.diagnostics_skipped, why))


Side = Callable[[SideEnv, RunResults], RunResults]


def _registry() -> Tuple[Dict[Extra, Side], Dict[Extra, SideWindow]]:
    from . import emulated, h2d, stages, windows

    return (
        {Extra.STAGES: stages.run, Extra.H2D: h2d.run, Extra.EMULATED: emulated.run},
        {Extra.PARTS: windows.Parts(), Extra.CONTENTION: windows.Contention()},
    )


HIDDEN, WINDOWS = _registry()
