"""Profiler hooks: NVTX ranges in the ``benchy`` domain and the cudaProfilerStart/Stop window.

NVTX: when no tool is attached (no ``NVTX_INJECTION64_PATH``, as without Nsight Systems) the
``nvtx`` package hands out a dummy domain; benchy then runs its plain loops, so annotations
cost nothing per step. With a tool attached, the annotated loops push one range per trial,
one per step and one per fetch, with the index as a payload on attributes made once.

cudaProfilerStart/Stop: one window over the trials of the chosen kinds, on the ranks chosen
by ``profiler_mode``, only where CUDA is built and already in use by the program.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, List, Optional

from ..core.schedule import Mode, TrialSpec

__all__ = ["CudaProfilerApi", "ProfilerWindow", "Ranges", "global_rank", "nvtx_ranges"]

DOMAIN = "benchy"


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
    """Ranges in the ``benchy`` domain when a tool is attached, else None (plain loops)."""
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

    @staticmethod
    def available() -> bool:
        from .device import cuda_active

        return cuda_active()

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
    """One cudaProfilerStart/Stop window over the trials of the ``capture`` kinds.

    Starts before the first trial of those kinds (warm-ups included), on the ranks chosen
    by ``mode``; if CUDA is not in use yet it tries again at each later trial of those kinds.
    Stops after the last trial of those kinds (the session says, after each trial, whether
    one may still come: with interleaved or adaptive schedules trials of other kinds in
    between are inside the window), or at :meth:`close` (exception, early exit, end of the
    run). ``events`` records what happened, for the log and the tests.
    """

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

    def close(self, when: str = "at the end") -> None:
        """Stop the capture if it runs (idempotent)."""
        if self.started:
            self.started = False
            self.api.stop()
            self.events.append(f"cudaProfilerStop {when}")
        self.finished = True
