"""Profiler hooks: NVTX ranges in the ``benchy`` domain (none pushed when no tool is attached: the ``nvtx``
package then hands out a dummy domain), the cudaProfilerStart/Stop window (:class:`ProfilerWindow`), and the
``torch.profiler`` capture of ``profiler: torch`` over extra, uncounted warm-ups (:class:`TorchProfiler`).
"""

from __future__ import annotations

import os
import re
from types import SimpleNamespace
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..core.schedule import Mode, TrialSpec
from .device import cuda_active

DOMAIN = "benchy"
TRACE_FILE = re.compile(  # the trace files TorchProfiler writes
    r"^rank[0-9]+\.(IO|SYNTHETIC|FULL)_WARMUP_[0-9]+\.pt\.trace\.json$"
)

AT_END = "at the end of the benchmark"  # when the capture range stops: the benchmark ended
AT_EXIT = "at exit"  # ... the script ended first


class Ranges:
    """NVTX push/pop and attributes made once: the per-step path only sets a payload."""

    def __init__(self, domain: Any) -> None:
        self.push: Callable[[Any], None] = domain.push_range
        self.pop: Callable[[], None] = domain.pop_range
        self._domain = domain
        self.step = domain.get_event_attributes(message="step", payload=0)
        self.fetch = domain.get_event_attributes(message="fetch", payload=0)
        self._trials: Dict[str, Any] = {}

    def trial(self, spec: TrialSpec) -> Any:
        """Attributes of the trial range, named like the output lines (``FULL_WARMUP_1``)."""
        attrs = self._trials.get(spec.label)
        if attrs is None:
            attrs = self._trials[spec.label] = self._domain.get_event_attributes(message=spec.label)
        return attrs


def nvtx_ranges(enabled: bool = True) -> Optional[Ranges]:
    """Ranges in the ``benchy`` domain when a tool is attached, else None (no ranges pushed)."""
    if not enabled:
        return None
    try:
        import nvtx
    except ImportError:  # the annotations degrade to nothing
        return None
    domain = nvtx.get_domain(DOMAIN)
    if not isinstance(domain, nvtx.Domain):  # DummyDomain: no tool attached
        return None
    return Ranges(domain)


class CudaProfilerApi:
    """The real cudaProfilerStart/Stop, reached only where CUDA is built and in use."""

    available = staticmethod(cuda_active)

    @staticmethod
    def start() -> None:
        import torch

        torch.cuda.cudart().cudaProfilerStart()

    @staticmethod
    def stop() -> None:
        import torch

        torch.cuda.cudart().cudaProfilerStop()


def global_rank() -> int:
    """This process's global rank: torch.distributed when initialized, else the launcher's env."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # pragma: no cover - a broken distributed build must not stop benchy
        pass
    for name in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        value = os.environ.get(name)
        if value is not None and value.strip().isdigit():
            return int(value)
    return 0


class ProfilerWindow:
    """One cudaProfilerStart/Stop window from before the first trial of the ``capture`` kinds to after the last (trials
    of other kinds in between are inside), only where CUDA is in use; ``events`` says what happened."""

    def __init__(self, mode: str, rank: int, capture: Iterable[Mode], api: Any = CudaProfilerApi) -> None:
        self.api = api
        self.wanted = mode == "all" or (mode == "single" and rank == 0)
        self.kinds = frozenset(capture)
        self.started = False
        self.finished = False
        self.events: List[str] = []

    def before_trial(self, spec: TrialSpec) -> None:
        if not self.wanted or self.started or self.finished or spec.mode not in self.kinds:
            return
        if not self.api.available():
            if not self.events:
                self.events.append(f"not started at {spec.label}: CUDA is not in use")
            return
        self.api.start()
        self.started = True
        self.events.append(f"cudaProfilerStart before {spec.label}")

    def after_trial(self, spec: TrialSpec, more: bool) -> None:
        """After ``spec``; ``more``: a trial of the capture kinds may still come."""
        if self.started and not more:
            self.close(f"after {spec.label}")

    def close(self, when: str = AT_END) -> None:
        if self.started:
            self.started = False
            self.api.stop()
            self.events.append(f"cudaProfilerStop {when}")
        self.finished = True


def profiled_steps(nbatches: int, steps: int) -> Tuple[int, int]:
    """(the first profiled step, how many): from the third (the first two hold the profiler's own start and the
    trial's first fetch and step), fewer in a shorter trial."""
    count = max(1, min(steps, nbatches))
    first = min(2, nbatches - count)
    return first, count


class TorchRanges:
    """benchy's ranges as ``torch.profiler`` ``record_function`` ranges in the profiled warm-up: the profiler starts
    at the first profiled step's range and stops at the one after the last, so the trace holds whole steps."""

    def __init__(
        self, spec: TrialSpec, start: Callable[[], None], stop: Callable[[], None], steps: int, nvtx: Optional[Ranges] = None
    ) -> None:
        import torch

        self._record = torch.autograd.profiler.record_function
        self._start, self._stop = start, stop
        self.step = SimpleNamespace(message="step", payload=0)  # shaped as the NVTX attributes
        self.fetch = SimpleNamespace(message="fetch", payload=0)
        self._trial = SimpleNamespace(message=spec.label, payload=0)
        # IO has no step ranges: its profiled span is counted in fetches (fetch k brings batch k).
        self._trigger = self.fetch if spec.mode is Mode.IO else self.step
        self.first, self.count = profiled_steps(spec.nbatches, steps)
        if spec.mode is Mode.IO:
            self.first += 1
        self.spec = spec
        self._nvtx = nvtx
        self._stack: List[Any] = []  # per open range: its record_function, or None (opened while not profiling)
        self._span: Any = None
        self.state = "waiting"  # waiting, profiling, done
        self.failed: Optional[str] = None  # why the profiler did not start
        self._stretch_end: Optional[int] = None  # the step after the running stretch's last (None: not known)
        self._last = self.first + self.count - 1  # the last step (or fetch) the profiled range names
        self._seen = -1  # the last step (or fetch) pushed while profiling
        self.held: Optional[Tuple[int, int]] = None  # the first and last the trace holds, once it ended
        self.cut: Optional[str] = None  # why it holds fewer than asked (the epoch ended, the loop left)

    @property
    def unit(self) -> str:
        return "fetches" if self._trigger is self.fetch else "steps"

    def stretch(self, first: int, count: int) -> None:
        """The window's next stretch: a profile that begins in it ends with it."""
        self._stretch_end = first + count

    def trial(self, spec: TrialSpec) -> Any:
        return self._trial

    def _enter(self, name: str) -> Any:
        rf = self._record(name)
        rf.__enter__()
        return rf

    def _begin(self) -> None:
        try:
            self._start()
        except Exception as err:  # e.g. the script runs a profiler of its own: its training goes on unprofiled
            self.state = "done"
            self.failed = f"torch.profiler could not start ({type(err).__name__}: {err})"
            return
        self.state = "profiling"
        asked = ""
        if self._stretch_end is not None and self._stretch_end - 1 < self._last:
            # The stretch ends before the steps asked, and the window holds no later stretch they fit in: the range
            # names those it holds, and why.
            self._last = self._stretch_end - 1
            self.cut = f"the loop's epoch ended after {self.unit[:-1]} {self._last}"
            asked = f" of {self.count} asked: {self.cut}"
        self._span = self._enter(f"benchy: {self.spec.label} ({self.unit} {self.first} to {self._last} profiled{asked})")

    def _end(self) -> None:
        for k, rf in reversed(list(enumerate(self._stack))):  # ranges still open inside the span end with it
            if rf is not None:
                rf.__exit__(None, None, None)
                self._stack[k] = None
        self.held = (self.first, self._seen)
        if self._seen < self._last:  # the loop left the window first (a break, an error): the trace says so
            self.cut = f"the loop left the window after {self.unit[:-1]} {self._seen}"
            gone = (
                f"{self.unit} {self._seen + 1} to {self._last}"
                if self._seen + 1 < self._last
                else f"{self.unit[:-1]} {self._last}"
            )
            self._enter(
                f"benchy: the loop left {self.spec.label} after {self.unit[:-1]} {self._seen}: {gone} not profiled"
            ).__exit__(None, None, None)
        self._span.__exit__(None, None, None)
        self.state = "done"
        self._stop()

    def push(self, attr: Any) -> None:
        if attr is self._trigger:
            if self.state == "waiting" and attr.payload == self.first:
                end = self._stretch_end
                if end is not None and end - self.first < self.count and end + self.count <= self.spec.nbatches:
                    # The asked steps do not fit before this stretch ends (its epoch's end) and do in the next:
                    # the capture starts there, so the trace holds them all.
                    self.first, self._last = end, end + self.count - 1
                else:
                    self._begin()
            elif self.state == "profiling" and attr.payload == self._last + 1:
                self._end()
            if self.state == "profiling":
                self._seen = attr.payload
        nvtx = self._nvtx
        if nvtx is not None:
            target = nvtx.step if attr is self.step else nvtx.fetch if attr is self.fetch else None
            if target is None:
                nvtx.push(nvtx.trial(self.spec))
            else:
                target.payload = attr.payload
                nvtx.push(target)
        if self.state != "profiling":
            self._stack.append(None)
        elif attr is self._trial:
            self._stack.append(self._enter(f"benchy: {self.spec.label}"))
        else:
            self._stack.append(self._enter(f"benchy: {attr.message} {attr.payload}"))

    def pop(self) -> None:
        if self._nvtx is not None:
            self._nvtx.pop()
        rf = self._stack.pop() if self._stack else None
        if rf is not None:
            rf.__exit__(None, None, None)
        if not self._stack and self.state == "profiling":  # the trial's range closed: the trial ended
            self._end()


class TorchProfiler:
    """``profiler: torch``: the profiled warm-ups run under ``torch.profiler`` on the ranks chosen by ``mode``, one
    Chrome trace per rank and trial in ``directory`` (docs/guide/nsight.md); ``files`` and ``events`` say what happened."""

    def __init__(self, mode: str, rank: int, directory: str, steps: int) -> None:
        self.wanted = mode == "all" or (mode == "single" and rank == 0)
        self.rank = rank
        self.directory = directory
        self.steps = steps
        self.files: List[str] = []
        self.events: List[str] = []
        self.costs: Dict[str, float] = {}  # trial -> seconds its trace took to write
        self._profile: Any = None
        self._ranges: Optional[TorchRanges] = None

    def ranges(self, spec: TrialSpec, nvtx: Optional[Ranges]) -> Optional[TorchRanges]:
        """The ranges that run ``spec`` under the profiler, or None (not profiled here)."""
        if not (self.wanted and spec.profiled):
            return None
        self.close()
        made = self._ranges = TorchRanges(spec, self._start, lambda: self._stop(made), self.steps, nvtx)
        return made

    def _start(self) -> None:
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if cuda_active() and torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self._profile = profile(activities=activities, record_shapes=True)
        self._profile.start()
        self._kinds = "CPU and CUDA" if len(activities) == 2 else "CPU"

    def _stop(self, ranges: TorchRanges) -> None:
        import time

        spec = ranges.spec
        profile, self._profile = self._profile, None
        if profile is None:
            return
        try:
            profile.stop()
        except Exception as err:  # never the training's end
            self.events.append(f"{spec.label}: torch.profiler could not stop ({type(err).__name__}: {err})")
            return
        started = time.perf_counter()
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, f"rank{self.rank}.{spec.label}.pt.trace.json")
        try:
            profile.export_chrome_trace(path)
        except Exception as err:  # a full disk must not end the training
            self.events.append(f"{spec.label}: the trace could not be written to {path}: {err}")
            return
        self.costs[spec.label] = time.perf_counter() - started
        self.files.append(path)
        held = "" if ranges.held is None else f"; {ranges.unit} {ranges.held[0]} to {ranges.held[1]}"
        if ranges.held is not None and ranges.cut is not None:
            held += f", {ranges.held[1] - ranges.held[0] + 1} of the {ranges.count} asked: {ranges.cut}"
        self.events.append(f"{spec.label} profiled ({self._kinds}{held}): {path}")

    def close(self) -> None:
        """Stop a capture still running, say why one did not start; idempotent."""
        ranges, self._ranges = self._ranges, None
        if ranges is not None and self._profile is not None:
            self._stop(ranges)
        if ranges is not None and ranges.failed:
            self.events.append(f"{ranges.spec.label}: {ranges.failed}; the trial ran unprofiled")
        elif ranges is not None and ranges.state == "waiting":
            self.events.append(f"{ranges.spec.label}: not profiled: the trial ended before step {ranges.first}")
