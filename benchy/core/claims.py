"""What the measurements add to a verdict, as values (pure, no torch): :func:`benchy.core.verdict.diagnosis` returns
them in the order the verdict line says them, the advice last; :mod:`benchy.results.text.verdict` renders each.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from .words import Worded


@dataclass(frozen=True)
class MoreTrials:
    """How this run, as configured, gets more trials: what an undecided verdict and the busy-machine caveat advise."""

    auto: bool = False  # ntrials: auto already (stopped at auto_max_trials when the run ended)
    max_trials: int = 8  # global.auto_max_trials
    finished: bool = True  # the schedule ran to its end (else the script ended first)
    likely: Optional[int] = None  # the loop's further steps a decision would likely take (None: unknown)


@dataclass(frozen=True)
class Busy:
    """Trials the verdict rests on that ran on a busy machine (``trials``, of ``total``)."""

    trials: Tuple[Any, ...]  # TrialResult
    total: int
    more: MoreTrials


@dataclass(frozen=True)
class Mfu:
    """A compute-limited step's MFU (``report``: the ComputeReport), near the peak or with headroom."""

    report: Any
    near: bool


@dataclass(frozen=True)
class Padding:
    mode: str
    share: float


@dataclass(frozen=True)
class DataWait:
    share: float


class Cause(str, enum.Enum):
    """Why the loader is slow, from the IO trials' system metrics."""

    CPU_BOUND = "cpu-bound"  # the cores are saturated
    IN_PROCESS = "in-process"  # no workers, the loading keeps its core busy, cores free
    WORKERS_CPU_BOUND = "workers-cpu-bound"  # the workers fill their cores, more cores are free
    STORAGE = "storage"  # the CPU idle, storage reads high
    WAITS = "waits"  # neither: it waits on something else


@dataclass(frozen=True)
class LoaderCause:
    cause: Cause
    busy: float  # cores busy in the IO trials
    cores: float
    free: float  # the cores other processes left it
    other: float  # cores other processes kept busy
    util: float  # busy / free
    reads: float  # MB/s from storage
    workers: int


@dataclass(frozen=True)
class StagesFound:
    """What the stage trials add (``report``: the StageReport); ``saturated``: the cores are saturated and the largest
    stage waits off the CPU (that time is a wait for a core)."""

    report: Any
    saturated: bool = False


@dataclass(frozen=True)
class Starved:
    workers: int
    stalls: int
    share: float


@dataclass(frozen=True)
class Copies:
    """Host-to-device copies that cost the loader: its rate with them (``mean``) against IO's, to ``device``;
    ``limits``: below SYNTHETIC too."""

    mean: float
    io: float
    device: str
    limits: bool


@dataclass(frozen=True)
class StartupCost:
    """A loader start-up that costs more than its share of an epoch (``startup``: the Startup)."""

    startup: Any


@dataclass(frozen=True)
class Feed:
    """What a loader sweep adds: the cheapest swept setting that feeds the step (``found``, a SettingResult), or the
    best (``best``) when none does; ``synthetic``: SYNTHETIC's mean."""

    found: Any
    best: Any
    synthetic: float


@dataclass(frozen=True)
class Contended:
    """FULL below both sides: beside the loader the step takes ``share`` longer than alone."""

    full: float
    share: float
    step: float
    alone: float


class Help(Worded):
    """The one change most likely to help, in words (STAGE's and SWEPT's take the advice's detail: the stage trials'
    fix, the setting the sweep measured; :func:`benchy.results.text.verdict.advice`)."""

    PINNED_COPIES = "pinned-copies", "pinned memory and non_blocking copies (pin_memory=True)"
    WORKERS_OR_CHEAPER = "workers-or-cheaper", "more loader workers, or cheaper batches"
    PERSISTENT = "persistent", "persistent_workers=True"
    FASTER_STEP = (
        "faster-step",
        "a faster step (the loader has headroom: mixed precision, a larger batch, compiled or fused code)",
    )
    CHEAPER_DECODING = "cheaper-decoding", "cheaper decoding and augmentation per sample (the cores are saturated)"
    LOADER_WORKERS = "loader-workers", "loader workers (num_workers > 0), up to the free cores"
    MORE_WORKERS_CORES = "more-workers-cores", "more loader workers (num_workers), up to the cores"
    STORAGE = "storage", "faster or local storage, or caching the dataset"
    MORE_WORKERS_NOW = "more-workers-now", "more loader workers (num_workers = {workers} now)"  # detail: the workers
    STAGE = "stage"  # the stage trials' fix (detail: a stages.Fix)
    PADDING = "padding", "less padding (batches of similar lengths, e.g. a length-grouped sampler, or packed sequences)"
    NEAR_PEAK = (
        "near-peak",
        "fewer FLOPs a sample (a smaller model or input) or more devices: the step is near the peak",
    )
    MIXED_PRECISION = (
        "mixed-precision",
        "mixed precision (torch.autocast with bfloat16): most of the step's FLOPs run in float32, far below "
        "the accelerator's bfloat16 peak",
    )
    LARGER_BATCH = "larger-batch", "a larger batch, or compiled or fused code (torch.compile)"
    SWEPT = "swept"  # (detail: the SettingResult the sweep measured, and SYNTHETIC's mean)
    CONTENTION = (
        "contention",
        "fewer loader workers or fewer intra-op threads (torch.set_num_threads) so that the step keeps its cores, or "
        "the workers pinned to cores of their own (os.sched_setaffinity in worker_init_fn)",
    )


@dataclass(frozen=True)
class Advice:
    help: Help
    detail: Any = None


Claim = Union[Busy, Mfu, Padding, DataWait, LoaderCause, StagesFound, Starved, Copies, StartupCost, Feed, Contended, Advice]
