"""What a session says happened, as values (pure, no text): :mod:`benchy.results.text.run` says each.

The session, its trial runner and its side trials emit these; the sink (:class:`~benchy.session.sink.ResultSink`)
prints them, in the words of :func:`benchy.results.text.run.event`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Tuple, Union

from .outcomes import FailedRank, Interruption, Reason
from .schedule import TrialSpec

__all__ = [
    "CaptureRange",
    "CounterNote",
    "EmulatedSkipped",
    "EmulatedStarted",
    "Event",
    "H2DSkipped",
    "LoaderPlain",
    "LookaheadFound",
    "NoExitHere",
    "RankFailed",
    "SideFailed",
    "SideServed",
    "Signalled",
    "StagesStarted",
    "StagesStopped",
    "SweepApplied",
    "SweepFailed",
    "SweepOverCap",
    "SweepStarted",
    "SweepStray",
    "SweepUnavailable",
    "TokensNotCounted",
    "TraceWritten",
    "TrialLost",
]


@dataclasses.dataclass(frozen=True)
class LoaderPlain:
    """A wrapper first iterated while another runs the benchmark: it is the plain loader.
    ``same_site``: it was built where the running one was (a loader re-created every epoch)."""

    kind: str
    where: str
    running: Optional[str]  # "<kind> created at <where>" of the one running it (None: unknown)
    same_site: bool


@dataclasses.dataclass(frozen=True)
class SideServed:
    """An ``iter()`` while the loop's epoch ran (a peek inside the loop): served by the plain loader;
    ``label``: the trial whose window was running (None: between windows)."""

    label: Optional[str]


@dataclasses.dataclass(frozen=True)
class LookaheadFound:
    """The loop asks for batch k + 1 before it runs step k: each window stretch's first period is left out."""


@dataclasses.dataclass(frozen=True)
class TrialLost:
    """A scheduled trial that did not count (the loader raised, a signal, the script ended)."""

    item: Interruption


@dataclasses.dataclass(frozen=True)
class Signalled:
    """A signal ended the benchmark; ``running``: the trial it came in (with the periods it had
    measured), None between trials; ``failed``: ranks that said their training failed."""

    name: str
    running: Optional[TrialSpec]
    measured: int
    failed: Tuple[FailedRank, ...]


@dataclasses.dataclass(frozen=True)
class RankFailed:
    """A rank whose training failed, named by the others (a collective they could not finish)."""

    failed: Tuple[FailedRank, ...]


@dataclasses.dataclass(frozen=True)
class NoExitHere:
    """``exit_after_tests`` is on, but this process is not the script's own to end (``host``: e.g. a
    Ray Train worker): the training goes on with the plain loader."""

    host: str


@dataclasses.dataclass(frozen=True)
class CounterNote:
    """How samples (or tokens) are counted could not be done as configured (the counter's words)."""

    text: str


@dataclasses.dataclass(frozen=True)
class TokensNotCounted:
    """``count: tokens`` on batches without token ids (``error``: the counter's words): samples are counted."""

    error: str


@dataclasses.dataclass(frozen=True)
class SweepUnavailable:
    """A sweep was asked for a loader that is not a DataLoader."""


@dataclasses.dataclass(frozen=True)
class SweepStarted:
    settings: int
    warmups: int
    trials: int
    nbatches: int
    own: Any  # the loader's own setting (a core.sweep.Setting)


@dataclasses.dataclass(frozen=True)
class SweepFailed:
    setting: Any  # a core.sweep.Setting
    error: str


@dataclasses.dataclass(frozen=True)
class SweepStray:
    setting: Any  # a core.sweep.Setting
    processes: int


@dataclasses.dataclass(frozen=True)
class SweepOverCap:
    settings: Tuple[Any, ...]  # core.sweep.Setting
    cap_bytes: int


@dataclasses.dataclass(frozen=True)
class SweepApplied:
    """The schedule goes on with ``setting`` (``applied``: sweep_apply chose it) or the loader's own."""

    setting: Any  # a core.sweep.Setting
    applied: bool
    apply_on: bool


@dataclasses.dataclass(frozen=True)
class H2DSkipped:
    """IO_H2D did not run (``stopped``: it stopped part-way) and why."""

    reason: Reason
    stopped: bool = False


@dataclasses.dataclass(frozen=True)
class EmulatedStarted:
    """The emulated-step trials start: a step ``speedup`` times faster, ``seconds`` a batch, ``cpu`` of them busy."""

    speedup: float
    seconds: float
    cpu: float
    warmups: int
    trials: int
    nbatches: int


@dataclasses.dataclass(frozen=True)
class EmulatedSkipped:
    reason: Reason


@dataclasses.dataclass(frozen=True)
class StagesStarted:
    warmups: int
    trials: int
    nbatches: int
    workers: int
    split: str
    other: bool = False  # the trials at the what-if model's other setting (no workers, or one)


@dataclasses.dataclass(frozen=True)
class StagesStopped:
    reason: Reason
    other: bool = False  # the trials at the what-if model's other setting: only that figure is lost


@dataclasses.dataclass(frozen=True)
class SideFailed:
    """An extra raised: only it is lost."""

    reason: Reason


@dataclasses.dataclass(frozen=True)
class CaptureRange:
    """What the cudaProfilerStart/Stop capture range did (``events``: each call, or why none), said once."""

    events: Tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class TraceWritten:
    """torch.profiler wrote (or could not write) a profiled warm-up's trace on ``rank``; ``others``: the
    directory where every rank writes its own (profiler_mode: all, several ranks), else None."""

    rank: int
    event: str
    others: Optional[str]


Event = Union[
    CaptureRange,
    TraceWritten,
    LoaderPlain,
    SideServed,
    LookaheadFound,
    TrialLost,
    Signalled,
    RankFailed,
    NoExitHere,
    CounterNote,
    TokensNotCounted,
    SweepUnavailable,
    SweepStarted,
    SweepFailed,
    SweepStray,
    SweepOverCap,
    SweepApplied,
    H2DSkipped,
    StagesStarted,
    StagesStopped,
    EmulatedStarted,
    EmulatedSkipped,
    SideFailed,
]
