"""Everything of a benchmark that depends on this process's rank, made once when the run starts: at the first
``iter()``, so that a wrapper built before ``init_process_group`` works.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable, Optional

from ..core.config import Config
from ..core.schedule import Schedule
from ..measure.profiling import CudaProfilerApi, Ranges, global_rank, nvtx_ranges
from ..measure.ranks import LocalComm, make_comm
from .console import Output
from .profilers import Profilers
from .sink import ResultSink


@dataclasses.dataclass(frozen=True)
class RunContext:
    """This process's part in a benchmark: who it is among the ranks and what that gives it."""

    comm: Any  # LocalComm or TorchComm: the ranks' exchange, barrier and failure notes
    rank: int
    world: int
    out: Output
    sink: ResultSink
    profilers: Profilers
    ranges: Optional[Ranges]  # NVTX ranges while a tool is attached, else None (the plain loops)
    barrier: Optional[Callable[[str], None]]  # before each window's clock (use_distributed_barrier)

    @classmethod
    def start(
        cls,
        config: Config,
        schedule: Schedule,
        *,
        output: Optional[Output] = None,
        profiler_api: Any = CudaProfilerApi,
        exit: Callable[[int], Any] = sys.exit,
        local: bool = False,
    ) -> RunContext:
        """At the benchmark's start, on every rank together (a DistributedError when the ranks' channel cannot be
        made). ``local``: before the run starts, this process alone, its rank read from the environment."""
        comm = LocalComm() if local else make_comm(config.general.dist_timeout)
        rank, world = (global_rank(), 1) if local else (comm.rank, comm.world)
        out = output if output is not None else Output(config.general.console, enabled=rank == 0)
        sink = ResultSink(config, schedule, out, rank=rank, world=world, shutdown=comm.shutdown, exit=exit)
        profilers = Profilers(config, profiler_api)
        if local:
            return cls(comm, rank, 1, out, sink, profilers, None, None)
        profilers.start(rank, world)
        barrier = comm.barrier if config.general.use_distributed_barrier and world > 1 else None
        return cls(comm, rank, world, out, sink, profilers, nvtx_ranges(config.general.nvtx), barrier)
