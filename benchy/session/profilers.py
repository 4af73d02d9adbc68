"""A session's capture: the cudaProfilerStart/Stop window (``profiler: cudaProfilerApi``, for Nsight
Systems) or torch.profiler over the profiled warm-ups (``profiler: torch``), glue over
:mod:`benchy.measure.profiling`. It decides nothing about the schedule and prints nothing: it hands back events.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, List, Optional

from ..core.config import Config
from ..core.events import CaptureRange, Event, TraceWritten
from ..core.results import ProfilerState
from ..core.schedule import Mode, TrialSpec
from ..measure.profiling import TRACE_FILE, CudaProfilerApi, ProfilerWindow, Ranges, TorchProfiler, global_rank
from ..results.files import remove_matching


class Profilers:
    """The capture of one session (the torch profiler made by :meth:`start`, once the rank is known)."""

    def __init__(self, config: Config, api: Any = CudaProfilerApi) -> None:
        g = config.general
        self.config = config
        mode = g.profiler_mode if g.profiler == "cudaProfilerApi" else "none"
        self.window = ProfilerWindow(mode, global_rank(), [Mode(m) for m in g.capture_kinds], api=api)
        self.torch: Optional[TorchProfiler] = None
        self._said = 0  # torch.profiler events already said
        self._reported = False  # the cudaProfilerApi window's events said
        self._rank, self._world = 0, 1

    def start(self, rank: int, world: int) -> None:
        """The benchmark starts: rank 0 clears an earlier run's trace files before any rank profiles."""
        self._rank, self._world = rank, world
        g = self.config.general
        if g.profiler == "torch":
            self.torch = TorchProfiler(g.profiler_mode, rank, self.config.profile_dir, g.profiler_steps)
            if rank == 0:
                with contextlib.suppress(OSError):  # a file it cannot remove is overwritten when this run writes its own
                    remove_matching(self.config.profile_dir, TRACE_FILE)

    def before_trial(self, spec: TrialSpec, nvtx: Optional[Ranges]) -> Any:
        """Before ``spec``: the ranges to run it with (the torch profiler's for a profiled warm-up on a profiling
        rank), or None for the usual ones."""
        self.window.before_trial(spec)
        return None if self.torch is None else self.torch.ranges(spec, nvtx)

    def after_trial(self, spec: TrialSpec, more: bool) -> List[Event]:
        """After ``spec`` (``more``: a trial of the captured kinds may still run); the events to say."""
        self.window.after_trial(spec, more)
        if self.torch is not None:
            self.torch.close()
        return self._torch_lines()

    def close(self, when: str) -> List[Event]:
        """Stop whatever still captures (idempotent); the events to say, once each."""
        if self.torch is not None:
            self.torch.close()
        out = self._torch_lines()
        self.window.close(when)
        if self.window.events and not self._reported:
            self._reported = True
            out.append(CaptureRange(tuple(self.window.events)))
        return out

    def _torch_lines(self) -> List[Event]:
        """Each torch.profiler event once, when it happened (every rank says its own; rank 0's are printed)."""
        found = self.torch
        if found is None:
            return []
        others = found.directory if self._world > 1 and self.config.general.profiler_mode == "all" else None
        new, self._said = found.events[self._said :], len(found.events)
        return [TraceWritten(self._rank, event, others) for event in new]

    def block(self, nvtx_attached: bool) -> ProfilerState:
        """What the profilers did (the JSON's ``profiler``)."""
        g = self.config.general
        found = self.torch
        return ProfilerState(
            nvtx_tool_attached=nvtx_attached,
            profiler=g.profiler,
            profiler_mode=g.profiler_mode,
            capture=tuple(g.capture_kinds),
            events=tuple(self.window.events) + (() if found is None else tuple(found.events)),
            torch_traces=() if found is None else tuple(os.path.basename(f) for f in found.files),
            torch_trace_dir=None if found is None else os.path.basename(found.directory),
            torch_trace_write_s={} if found is None else dict(found.costs),
        )
