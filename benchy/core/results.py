"""The result model: one frozen record per trial; everything else is derived (pure).

Per-step data is kept compact: a period in single precision (:data:`PERIOD_CODE`, 4 bytes) and a sample count in the
smallest integer type that holds it (one byte for batches of up to 255 samples), where Python lists took 32 to 68.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Annotated, Any, ClassVar, Dict, List, Mapping, Optional, Tuple

import msgspec
import numpy as np
from msgspec import Meta

from .diagnostics import ContentionRun, StepParts
from .outcomes import Outcomes, Reason
from .record import Count, Index, Number, Record, Seconds
from .schedule import Mode, TrialSpec
from .stages import StageReport
from .startup import Startup
from .stats import Estimate, estimate
from .watch import Watch

RATES_SLICE = 65_536  # steps whose throughputs are computed at a time

# A period's time (and a FULL period's wait) is kept in single precision, 4 bytes a step: 7 significant digits, a
# nanosecond in a 10 ms step, far finer than any clock's noise; sums over them are taken in double precision.
PERIOD_CODE = "f"

# Per-step sample counts are stored in the smallest of these that holds them ('q': negative counts).
SAMPLE_TYPECODES = ("B", "H", "I", "Q", "q")


def samples_typecode(counts: Any) -> str:
    """The smallest array typecode of :data:`SAMPLE_TYPECODES` that holds every count."""
    if len(counts) == 0:
        return "B"
    if isinstance(counts, np.ndarray):
        low, high = int(counts.min()), int(counts.max())
    else:
        low, high = int(min(counts)), int(max(counts))
    fits = (code for code in SAMPLE_TYPECODES[:4] if high < 1 << (8 * array(code).itemsize))
    return "q" if low < 0 else next(fits, "q")


def _periods(values: Any) -> array[float]:
    """Any sequence of seconds as an ``array(PERIOD_CODE)`` (numpy arrays and typed arrays without a Python float each)."""
    out: array[float] = array(PERIOD_CODE)
    out.frombytes(np.ascontiguousarray(np.asarray(values, dtype=np.float32).reshape(-1)).tobytes())
    return out


@dataclass(frozen=True)
class FlopCount:
    """One training step's FLOPs, as torch's ``FlopCounterMode`` saw them, and what they ran on.

    ``by_dtype``: FLOPs per dtype of the op's first tensor input (``float32``, ``bfloat16`` ...);
    ``unknown``: ops that looked compute-heavy (matmul, convolution, attention) but that the counter
    has no formula for; ``tf32``: float32 matmuls may run as TF32 on this device (the torch setting);
    ``skipped``: why no count was made (then the rest is empty)."""

    total: int = 0
    samples: int = 0  # samples in the counted batch
    device: str = ""  # the accelerator's name (``NVIDIA H100 80GB HBM3``), or ``cpu`` and its model
    device_type: str = "cpu"
    by_dtype: Mapping[str, int] = field(default_factory=dict)
    by_op: Mapping[str, int] = field(default_factory=dict)
    unknown: Tuple[str, ...] = ()
    tf32: bool = False
    label: str = ""  # the trial whose untimed extra step was counted
    skipped: Optional[Reason] = None


class TokenCount(Record, frozen=True):
    """Tokens in one trial's batches (``count: tokens``), as the counter saw them.

    ``tokens``: every position of the token tensor (exact); ``sampled_tokens`` and ``real``: the
    positions and non-padding tokens of the batches whose attention mask was summed (every
    ``every``-th batch; all of them when ``every`` is 1); without a mask ``real == sampled_tokens``."""

    samples: Count
    tokens: Count
    sampled_tokens: Count
    real: Count = msgspec.field(name="real_tokens")
    batches: Count
    sampled: Count = msgspec.field(name="sampled_batches")
    every: Count = 1
    masked: bool = False

    @property
    def padding(self) -> Optional[float]:
        """The share of the sampled positions that are padding (None: nothing sampled)."""
        return 1.0 - self.real / self.sampled_tokens if self.sampled_tokens > 0 else None

    @property
    def real_per_sample(self) -> Optional[float]:
        """Non-padding tokens a sample: exact when every batch was summed, else estimated."""
        return None if self.samples <= 0 or self.padding is None else self.tokens * (1.0 - self.padding) / self.samples


class RankSummary(Record, frozen=True, kw_only=True):
    """A trial on more ranks than ``dist_rank_lists``: fixed-size figures the ranks reduced together
    instead of every rank's list (times are the ranks' own trial times; ``own_*``: this rank's, rank 0's in
    the file; ``spread`` follows from the rest)."""

    ranks: Count
    slowest: Index = msgspec.field(name="slowest_rank")
    slowest_seconds: Number = msgspec.field(name="slowest_time")
    fastest: Index = msgspec.field(name="fastest_rank")
    fastest_seconds: Number = msgspec.field(name="fastest_time")
    mean_seconds: Number = msgspec.field(name="mean_time")
    spread: Optional[Number] = None  # (slowest - fastest) / fastest rank's time
    own_samples: Count = 0
    own_seconds: Number = 0.0

    def __post_init__(self) -> None:
        fastest = self.fastest_seconds
        spread = (self.slowest_seconds - fastest) / fastest if fastest > 0 else None
        msgspec.structs.force_setattr(self, "spread", spread)


class SystemFigures(Record, frozen=True):
    """What the system sampler measured over one trial (this rank's process and its loader workers).

    The base figures are set by every sampled trial; the GPU's only with NVML and CUDA in use; the
    energy figures where a counter gave them, else ``energy_missing`` says why. ``disturbed``: other
    processes certainly took more than ``busy_machine_share`` of the cores (see ``measure.system``)."""

    what: ClassVar[str] = "an object of system figures"
    plural: ClassVar[str] = "objects of system figures"
    seconds: Seconds
    readings: Optional[Count] = None
    cpu_cores_busy: Optional[Number] = None  # CPU seconds of the process and its children per second
    cpu_cores: Optional[Number] = None  # cores this process may use
    cpu_util: Optional[Number] = None
    processes: Optional[Count] = None
    rss_max_bytes: Optional[Number] = None
    read_bytes_per_s: Optional[Number] = None
    loader_read_chars_per_s: Optional[Number] = None
    other_cores_busy: Optional[Number] = None  # None: too short a trial for the kernel's counters
    disturbed: bool = False
    gpu_util: Optional[Number] = None
    gpu_memory_bytes: Optional[Number] = None
    gpu_power_w: Optional[Number] = None
    gpu_energy_j: Optional[Number] = None
    gpu_energy_source: Optional[str] = None
    cpu_energy_j: Optional[Number] = None
    cpu_energy_source: Optional[str] = None
    energy_missing: Optional[str] = None

    def numbers(self) -> Dict[str, float]:
        """The figures that are numbers (what the SYSTEM line averages over trials)."""
        return {
            k: v for k in self.__struct_fields__ if isinstance(v := getattr(self, k), (int, float)) and not isinstance(v, bool)
        }


class WindowSpan(Record, frozen=True):
    """Where a SYNTHETIC or FULL trial ran in the training loop: the epoch (1 = the first the benchmark
    saw) and the step of that epoch (from 0) of its first and its last hand-out (untimed ones on the cached batch
    included: every step that got the cached batch lies in a window), the epochs' stretches
    it ran in (``segments``), and the periods left out (the last of each stretch that did not end the
    trial: its end fell in the next epoch; with a loop that fetches one batch ahead, each stretch's first)."""

    what: ClassVar[str] = "a window"
    start_epoch: Count
    start_step: Count
    end_epoch: Count
    end_step: Count
    segments: Count = 1
    left_out: Count = 0


@dataclass(frozen=True)
class TrialResult:
    """One finished trial: samples delivered over wall time, and the per-step split.

    ``step_seconds[i]`` is the time from handing out batch ``i`` to handing out batch
    ``i + 1`` (the step and the next fetch); ``step_samples[i]`` the samples of that batch. Any sequence may be
    passed for them; they are stored as the module's docstring says (:func:`samples_typecode`).
    """

    spec: TrialSpec
    samples: int
    seconds: float
    step_seconds: array[float] = field(default_factory=lambda: array(PERIOD_CODE))
    step_samples: array[int] = field(default_factory=lambda: array("q"))
    # With several ranks: each rank's (samples, seconds); ``samples`` is then their sum and
    # ``seconds`` the slowest rank's time. The step arrays stay this rank's.
    rank_samples: Tuple[int, ...] = ()
    rank_seconds: Tuple[float, ...] = ()
    # FULL: the trial's time split at the moment the loop asks for the next batch. Waiting for
    # data (inside the loader's ``next``) in total, and the median wait and step ("work": the
    # user's code) per period; None for other modes and loops that fetch one batch ahead.
    wait_seconds: Optional[float] = None
    wait_median: Optional[float] = None
    work_median: Optional[float] = None
    # System metrics sampled during the trial (this rank's process and its loader workers); None when off.
    system: Optional[SystemFigures] = None
    # ``count: tokens``: the tokens in this rank's batches of the trial (see ``core.compute``).
    tokens: Optional[TokenCount] = None
    # When batch 1 was handed out (the trial's clock started), in Unix seconds (the trial clock's
    # reading moved onto ``time.time()``'s scale once per run); None where no clock reading exists.
    started: Optional[float] = None
    # With several ranks: each rank's ``started`` (their clocks are each moved onto the Unix scale).
    rank_started: Tuple[float, ...] = ()
    # With more ranks than ``dist_rank_lists``: the reduced figures in place of the per-rank lists.
    rank_summary: Optional[RankSummary] = None
    # FULL: each period's wait for data (``step_seconds[i]`` minus the step), 4 bytes a step; None
    # where the time cannot be split (other modes, loops that fetch one batch ahead).
    step_waits: Optional[array[float]] = None
    # The system sampler's readings during the trial (a numpy structured array: ``time`` in Unix
    # seconds, ``cpu_cores_busy`` since the reading before, ``rss_bytes``, and GPU fields when
    # sampled); None when off. For the timeline (``benchy trace``); ``system`` holds the aggregates.
    readings: Any = None
    # SYNTHETIC and FULL: where the trial's window ran in the loop (None for IO and side trials).
    window: Optional[WindowSpan] = None

    def __post_init__(self) -> None:
        seconds: Any = self.step_seconds
        if not (isinstance(seconds, array) and seconds.typecode == PERIOD_CODE):
            object.__setattr__(self, "step_seconds", _periods(seconds))
        counts: Any = self.step_samples
        if not (isinstance(counts, array) and counts.typecode in SAMPLE_TYPECODES):
            counts = list(counts)
            object.__setattr__(self, "step_samples", array(samples_typecode(counts), counts))
        waits: Any = self.step_waits
        if waits is not None and not (isinstance(waits, array) and waits.typecode == PERIOD_CODE):
            object.__setattr__(self, "step_waits", _periods(waits))

    __hash__ = None  # type: ignore[assignment]  # the step arrays are mutable containers

    @property
    def mode(self) -> Mode:
        return self.spec.mode

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def throughput(self) -> float:
        """Samples per second over the whole trial."""
        return self.samples / self.seconds if self.seconds > 0 else float("inf")

    @property
    def data_wait(self) -> Optional[float]:
        """The share of this rank's trial time spent waiting for the loader (FULL), or None.

        Over this rank's own time (its periods), not ``seconds``, which with several ranks is
        the slowest rank's."""
        return self.wait_seconds / self.own_seconds if self.wait_seconds is not None and self.own_seconds > 0 else None

    @cached_property
    def own_seconds(self) -> float:
        """This rank's time over the trial's periods (computed once)."""
        return float(np.sum(self.periods(), dtype=np.float64))

    @cached_property
    def median_period(self) -> Optional[float]:
        """The median of this rank's periods (computed once), None without any."""
        return None if not self.step_seconds else float(np.median(self.periods()))

    @property
    def own_throughput(self) -> float:
        """This rank's own throughput (rank 0's when the trial was combined across ranks)."""
        if self.rank_seconds:
            return self.rank_throughputs[0]
        found = self.rank_summary
        if found is not None:
            return found.own_samples / found.own_seconds if found.own_seconds > 0 else float("inf")
        return self.throughput

    @property
    def rank_throughputs(self) -> Tuple[float, ...]:
        """Each rank's own throughput (samples per second); empty for a single process."""
        return tuple((n / t if t > 0 else float("inf")) for n, t in zip(self.rank_samples, self.rank_seconds))

    def periods(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """``step_seconds`` as a numpy view (no copy; single precision: sum it in double)."""
        return np.frombuffer(self.step_seconds, dtype=np.float32) if self.step_seconds else np.zeros(0, np.float32)

    def waits(self) -> Optional[np.ndarray[Any, np.dtype[np.float32]]]:
        """``step_waits`` as a numpy view (no copy), or None."""
        if self.step_waits is None:
            return None
        return np.frombuffer(self.step_waits, dtype=np.float32) if self.step_waits else np.zeros(0, np.float32)

    def samples_array(self) -> np.ndarray[Any, Any]:
        """``step_samples`` as a numpy view (no copy), of its own integer type."""
        return np.frombuffer(self.step_samples, dtype=np.dtype(self.step_samples.typecode))

    def step_rates(self, start: int = 0, stop: Optional[int] = None) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Per-step throughputs (samples per second; inf for a step of no measurable time), of
        steps ``start`` to ``stop`` (default: all)."""
        seconds = self.periods()[start:stop]
        samples = self.samples_array()[start:stop]
        rates = np.full(len(seconds), np.inf)
        # In double precision (the period as kept, the quotient as the JSON's ``rates`` has always held it).
        np.divide(samples, seconds, out=rates, where=seconds > 0, dtype=np.float64)
        return rates

    @cached_property
    def mean_step_rate(self) -> Optional[float]:
        """The mean of the per-step throughputs (the original's ``avg_iter_throughput``), computed once."""
        if not self.step_seconds:
            return None
        n, total = len(self.step_seconds), 0.0
        for start in range(0, n, RATES_SLICE):  # a slice at a time: no array of the trial's length
            total += float(np.sum(self.step_rates(start, start + RATES_SLICE)))
        return total / n


class StepRates:
    """A trial's per-step throughputs as the final JSON's ``rates`` writes them: computed a slice
    at a time (``slice``), so no array of the trial's length is ever made for them."""

    def __init__(self, trial: TrialResult) -> None:
        self._trial = trial

    def __len__(self) -> int:
        return len(self._trial.step_seconds)

    def slice(self, start: int, stop: int) -> np.ndarray[Any, np.dtype[np.float64]]:
        return self._trial.step_rates(start, stop)


def folded(result: TrialResult) -> TrialResult:
    """``result`` with its per-step arrays folded into one period (its own time, its samples): what a side
    trial that is read for its totals only keeps (the emulated-step trials, the diagnostic windows), so that
    a run keeps per-step data for its counted trials alone."""
    return replace(
        result,
        step_seconds=array(PERIOD_CODE, [result.own_seconds]),
        step_samples=array("q", [result.samples]),
        step_waits=None,
        readings=None,
    )


@dataclass(frozen=True)
class ScheduleState:
    """The schedule as it ran: its plan (adaptive, precision, windows at the most and the fewest), the trials in
    the order they ran, the warm-ups run per mode, the verdict's confidence, why measuring stopped (a
    :class:`~benchy.core.machine.Stop` value), the extras planned and those not run (with why: ``ended``, the
    script ended first; ``horizon``, the loop's known length left no room), and the loop's known length."""

    adaptive: bool
    precision: float
    windows_needed: int
    windows_fewest: int
    order: Tuple[str, ...]
    warmups: Mapping[str, int]
    decision_confidence: float
    stop: Optional[str]
    extras: Tuple[str, ...] = ()
    extras_not_run: Tuple[Tuple[str, str], ...] = ()
    horizon: Optional[int] = None
    stopped_at: Optional[int] = None  # the loop's steps from the benchmark's start until measuring stopped
    cycle: int = 1  # the loader's round in batches: IO trials and FULL windows are whole rounds
    decided_at: Optional[int] = None  # the loop's steps from the benchmark's start until the verdict was decided
    decided_seconds: Optional[float] = None  # ... and the seconds (benchy's own trials between the steps included)
    stopped_seconds: Optional[float] = None  # the seconds from the benchmark's start until measuring stopped
    figure_precision: float = 0.10  # a decided verdict stops measuring once each mode's interval is within it
    imprecise: Tuple[Imprecise, ...] = ()  # the modes whose interval is wider than figure_precision at the end


@dataclass(frozen=True)
class Imprecise:
    """A mode whose 95 % interval is wider than the schedule's figure precision: ``share``, its half-width over its
    mean (None: one trial, no interval), over ``trials``; ``more_steps``, the loop's further steps that would likely
    settle it from the spread so far (None: not within the schedule's bound, or too few trials to tell); ``capped``,
    the mode ran its ``auto_max_trials`` (or its fixed count): measuring ended there."""

    mode: str
    share: Optional[float]
    trials: int
    more_steps: Optional[int] = None
    capped: bool = False
    fixed: bool = False  # the mode's trials are a fixed count (ntrials), not auto


class ProfilerState(Record, frozen=True):
    """What the profilers did: a tool attached for NVTX, the profiler and its mode, the kinds captured,
    the capture's events (cudaProfilerStart/Stop calls, or why none; each torch trace written), and
    rank 0's torch.profiler trace files with the seconds each took to write."""

    nvtx_tool_attached: bool
    profiler: str
    profiler_mode: str
    capture: Tuple[str, ...]
    events: Tuple[str, ...]
    torch_trace_dir: Optional[str] = None
    torch_traces: Tuple[str, ...] = ()
    torch_trace_write_s: Annotated[Dict[str, Number], Meta(extra={"keys": "trace files"})] = msgspec.field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """What a session knows, its results included (a frozen value), handed to the sink for each summary
    and JSON write."""

    results: RunResults
    schedule: ScheduleState
    epochs_started: int
    finished: bool  # the schedule ran to its end
    profiler: ProfilerState
    synthetic_batch_samples: Optional[int]  # the one cached batch of every SYNTHETIC trial (None until fetched)
    lookahead: Optional[bool]  # the loop fetches one batch ahead (decided from SYNTHETIC)
    counting: str  # how samples are counted, in words (the counter's)
    loader: str  # the benchmarked loader and where it was created
    other_loaders: Tuple[str, ...]
    workers: int  # the loader's num_workers (the sweep may have changed it)
    startup: Optional[Startup]  # the loader's start-up per pass
    tokens: Optional[str] = None  # count: tokens: what is counted as tokens, in words (None: samples only)
    outcomes: Outcomes = field(default_factory=Outcomes)  # what became of the trials (lost ones, peeks, a signal)
    steps_needed: Optional[int] = None  # the loop's steps the schedule takes at the most (its estimate)
    epoch_length: Optional[int] = None  # the loader's own batches per epoch (None: it has no length)
    # The epochs of the loop's own length the script runs in all to finish the schedule (the estimate); None where
    # that length is unknown, or too short for any number of epochs to hold a window.
    epochs_needed: Optional[int] = None
    steps_taken: Optional[int] = None  # the loop's steps since the benchmark began
    likely_steps: Optional[int] = None  # the further steps a decision would likely take (None: decided, or unknown)
    per_batch: Optional[int] = None  # the batch sampler's samples a batch, where it makes the same number every batch
    queue_depth: int = 0  # batches the loader's workers are handed ahead (num_workers x prefetch_factor)
    watch: Optional[Watch] = None  # the watch over the epochs after the schedule (at the process's end)


@dataclass(frozen=True)
class Span:
    """A stretch of benchy's own work that is not a trial with per-step data (a diagnostic stage trial, the FLOPs'
    count): what it was and when, for the timeline (``started`` in Unix seconds); ``window``: the loop's steps it
    took (the FLOPs' count hands out the cached batch)."""

    label: str
    group: str
    started: float
    seconds: float
    warmup: bool = False
    mode: Mode = Mode.IO
    window: Optional[WindowSpan] = None


STRAGGLER_SHARE = 0.10  # a rank this much slower than the median rank (or the ranks' mean) is named


@dataclass(frozen=True)
class Straggler:
    """The slowest rank of a mode (:meth:`RunResults.straggler`): its trial time against the median rank's, or
    (``summarised``: past ``dist_rank_lists`` ranks) against the ranks' mean in the ``slowest_in`` of ``trials``
    counted trials where it was the slowest of ``ranks``."""

    rank: int
    seconds: float
    basis: float  # the median rank's time, or the ranks' mean
    summarised: bool = False
    slowest_in: int = 0
    trials: int = 0
    ranks: int = 0

    @property
    def slower(self) -> float:
        """How much slower than the basis: 0.15 for 15 %."""
        return self.seconds / self.basis - 1.0


@dataclass(frozen=True)
class RunResults:
    """Everything measured so far, in the order it was measured: a frozen value. A session keeps the
    latest and replaces it through the methods below (:meth:`add_trial`, :meth:`add_h2d`,
    :meth:`add_span`, :meth:`changed`); what it hands the sink cannot change under it."""

    trials: Tuple[TrialResult, ...] = ()
    # IO_H2D: IO trials that also copy each batch to the accelerator (this rank's), and why
    # there are none when they were skipped.
    h2d: Tuple[TrialResult, ...] = ()
    h2d_device: Optional[str] = None
    h2d_skipped: Optional[Reason] = None
    io_skipped: Optional[Reason] = None  # why the scheduled IO trials did not run (a loader that shares one iterator)
    # Loader sweep (see ``core.sweep``): each setting's IO trials, the loader's own setting, and the
    # setting the schedule continued with when sweep_apply is on.
    sweep: Tuple[Any, ...] = ()
    sweep_own: Any = None
    sweep_applied: Any = None
    # The sweep's memory cap (see ``core.sweep.memory_cap``): bytes the workers may take, and its basis.
    sweep_memory_budget: Optional[int] = None
    # The diagnostic stage trials (see ``core.stages``): this rank's loader stage by stage, or why not.
    stages: Optional[StageReport] = None
    stages_skipped: Optional[Reason] = None
    # The stage trials at the what-if model's other setting: without workers where the loader has some, with one
    # where it has none (None: not run, or they failed: the model then does without, and ``stages_other_skipped``
    # says why).
    stages_other: Optional[StageReport] = None
    stages_other_skipped: Optional[Reason] = None
    # The FLOPs of one untimed SYNTHETIC step (see ``core.compute``), or why none were counted.
    flops: Optional[FlopCount] = None
    # Side work drawn on the timeline beside the trials (the stage trials).
    spans: Tuple[Span, ...] = ()
    # The emulated-step trials (see ``core.whatif``): the real loader with the step replaced by a calibrated
    # wait ``emulated_speedup`` times shorter than SYNTHETIC's; or why they did not run.
    emulated: Tuple[TrialResult, ...] = ()
    emulated_speedup: Optional[float] = None
    emulated_skipped: Optional[Reason] = None
    # The diagnostic windows at the schedule's end (see ``core.diagnostics``): their trials (never counted in a
    # mode), the step's parts, the step beside the loader; and why one did not run.
    diagnostics: Tuple[TrialResult, ...] = ()
    parts: Optional[StepParts] = None
    contention: Optional[ContentionRun] = None
    diagnostics_skipped: Tuple[Reason, ...] = ()

    def __post_init__(self) -> None:
        # lists given by a caller become tuples
        for name in ("trials", "h2d", "sweep", "spans", "emulated", "diagnostics", "diagnostics_skipped"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def add_trial(self, trial: TrialResult) -> RunResults:
        """These results with ``trial`` (a scheduled trial that ended) after the others."""
        return replace(self, trials=(*self.trials, trial))

    def add_h2d(self, trial: TrialResult) -> RunResults:
        return replace(self, h2d=(*self.h2d, trial))

    def add_span(self, span: Span) -> RunResults:
        return replace(self, spans=(*self.spans, span))

    def changed(self, **fields: Any) -> RunResults:
        """These results with the named fields replaced (the side trials' outcomes, the FLOP count)."""
        return replace(self, **fields)

    def measured(self, mode: Mode) -> List[TrialResult]:
        """The counted (non-warm-up) trials of one mode."""
        return [t for t in self.trials if t.mode is mode and not t.spec.warmup]

    def warmups(self, mode: Mode) -> List[TrialResult]:
        return [t for t in self.trials if t.mode is mode and t.spec.warmup]

    def estimate(self, mode: Mode) -> Estimate:
        """Mean trial throughput and its 95 % Student-t half-width."""
        return estimate([t.throughput for t in self.measured(mode)])

    def step_alone(self) -> Optional[float]:
        """SYNTHETIC's seconds a step: its samples a step over its mean throughput (the step the what-if model, the
        contention figures and the JSON compare against); None without counted SYNTHETIC trials."""
        trials = self.measured(Mode.SYNTHETIC)
        batches = sum(t.spec.nbatches for t in trials)
        rate = self.estimate(Mode.SYNTHETIC).mean
        return sum(t.samples for t in trials) / batches / rate if batches and rate else None

    def data_wait(self) -> Estimate:
        """The share of FULL time spent waiting for the loader: mean over the counted FULL trials
        that could split their time, with its 95 % Student-t half-width."""
        return estimate([t.data_wait for t in self.measured(Mode.FULL) if t.data_wait is not None])

    def straggler(self, mode: Mode, threshold: float = STRAGGLER_SHARE) -> Optional[Straggler]:
        """The slowest rank of ``mode``, when it is more than ``threshold`` slower than the median rank (a real rank:
        with an even count, the faster of the two middle ones); past ``dist_rank_lists`` ranks, from the reduced
        figures: the rank slowest in most counted trials, against the ranks' mean there. The one definition."""
        times = self.rank_mean_times(mode)
        if len(times) >= 2:
            median = sorted(times)[(len(times) - 1) // 2]
            slowest = max(range(len(times)), key=lambda r: times[r])
            if median > 0 and times[slowest] > (1.0 + threshold) * median:
                return Straggler(slowest, times[slowest], median)
            return None
        summaries = [t.rank_summary for t in self.measured(mode) if t.rank_summary is not None]
        if not summaries:
            return None
        counts = Counter(s.slowest for s in summaries)
        rank = max(counts, key=lambda r: (counts[r], -r))
        slow = sum(s.slowest_seconds for s in summaries if s.slowest == rank)
        mean = sum(s.mean_seconds for s in summaries if s.slowest == rank)
        if mean <= 0 or slow <= (1.0 + threshold) * mean:
            return None
        return Straggler(
            rank, slow, mean, summarised=True, slowest_in=counts[rank], trials=len(summaries), ranks=summaries[0].ranks
        )

    def rank_mean_times(self, mode: Mode) -> List[float]:
        """Per rank, the mean trial time over the counted trials (empty for one process)."""
        trials = [t for t in self.measured(mode) if t.rank_seconds]
        ranks = len(trials[0].rank_seconds) if trials else 0
        return [sum(t.rank_seconds[r] for t in trials) / len(trials) for r in range(ranks)]
