"""The verdict: which side limits training, what the other measurements add (:mod:`benchy.core.claims`), and the
one change most likely to help (pure: no torch, no text). Worked out once per summary as a :class:`Reading`;
docs/guide/verdict.md says how it is read.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .claims import (
    Advice,
    Busy,
    Cause,
    Claim,
    Copies,
    DataWait,
    Help,
    LoaderCause,
    Mfu,
    MoreTrials,
    Padding,
    StagesFound,
    StartupCost,
    Starved,
)
from .compute import (
    ComputeReport,
    EnergyReport,
    TokenReport,
    compute_report,
    energy_report,
    mostly_float32,
    near_peak,
    padding_waste,
    token_report,
)
from .distribution import StepProfile, step_profile
from .peaks import PeakConfig
from .results import RunResults, TrialResult
from .runinputs import contended, from_results
from .schedule import Mode
from .stages import FirstPass
from .startup import Startup
from .stats import Comparison, Estimate, compare_log, estimate, t_quantile, welch_df
from .sweep import feed
from .whatif import WhatIf

# Balanced: the interval of SYNTHETIC/IO lies within this share either way: not a bottleneck worth acting on.
BALANCE_TOLERANCE = 0.05
# FULL below this share of min(IO, SYNTHETIC) is worth explaining; down to the serial estimate IO*SYN/(IO+SYN) /
# SERIAL_MARGIN it is explained by loading and compute not overlapping.
OVERLAP_THRESHOLD = 0.8
SERIAL_MARGIN = 1.1
H2D_SLOWER = 0.9  # copies that leave less than this share of IO's rate are named in the verdict
CPU_SATURATED = 0.85  # IO trials keeping this share of the cores busy: the loader is CPU-bound
CPU_IDLE = 0.5
READS_HIGH = 20e6  # bytes per second from storage that make storage a suspect


def system_means(trials: Sequence[TrialResult]) -> Optional[Dict[str, float]]:
    """The mean of each system figure over the trials that have them (None: none has)."""
    return figure_means([t.system.numbers() for t in trials if t.system is not None])


def figure_means(found: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, float]]:
    """The mean of each figure that is a number in every one of ``found`` (None: ``found`` is empty)."""
    if not found:
        return None
    keys = [k for k in found[0] if all(isinstance(f.get(k), (int, float)) and not isinstance(f.get(k), bool) for f in found)]
    return {k: float(np.mean([f[k] for f in found])) for k in keys}


def disturbed_trials(results: RunResults) -> List[TrialResult]:
    """The counted trials during which other processes took more than the set share of the cores."""
    return [t for m in Mode for t in results.measured(m) if t.system is not None and t.system.disturbed]


def first_pass(results: RunResults) -> Optional[FirstPass]:
    """The loader's first IO batches against the measured IO trials, and how much of its files came from storage."""
    first = next((t for t in results.warmups(Mode.IO) if t.spec.index == 1), None)
    measured = results.measured(Mode.IO)
    if first is None and len(measured) >= 2:  # no IO warm-up: the first IO trial was the first pass
        first, measured = measured[0], measured[1:]
    if first is None or not measured:
        return None
    steady = float(np.mean([t.throughput for t in measured]))
    systems = [t.system for t in measured if t.system is not None and t.system.loader_read_chars_per_s is not None]
    files = storage = None
    if systems:
        files = float(sum((s.loader_read_chars_per_s or 0.0) * s.seconds for s in systems))
        storage = float(sum((s.read_bytes_per_s or 0.0) * s.seconds for s in systems))
    return FirstPass(label=first.label, first=first.throughput, steady=steady, files_read=files, storage_read=storage)


def h2d_estimate(results: RunResults) -> Estimate:
    return estimate([t.throughput for t in results.h2d])


def own_io(results: RunResults) -> Estimate:
    """IO as rank 0 saw it alone: what its IO_H2D trials compare with (they are rank 0's own)."""
    return estimate([t.own_throughput for t in results.measured(Mode.IO)])


def busy(results: RunResults, more: MoreTrials = MoreTrials()) -> Optional[Busy]:
    """The verdict's caveat when trials it rests on ran on a busy machine."""
    found = disturbed_trials(results)
    return None if not found else Busy(tuple(found), sum(len(results.measured(m)) for m in Mode), more)


def copies(results: RunResults) -> Optional[Copies]:
    """What host-to-device copies cost the loader, when they cost more than 10 % of its rate."""
    est, io = h2d_estimate(results), own_io(results)
    syn = estimate([t.own_throughput for t in results.measured(Mode.SYNTHETIC)])
    if est.mean is None or not io.mean or est.mean >= H2D_SLOWER * io.mean:
        return None
    limits = syn.mean is not None and est.mean < syn.mean <= io.mean
    return Copies(est.mean, io.mean, results.h2d_device or "", limits)


def loader_cause(results: RunResults, found: Optional[Verdict], workers: int) -> Optional[Tuple[LoaderCause, Help]]:
    """Why the loader is slow, from the IO trials' system metrics, when loading limits (inconsistent or not)."""
    if found is None or found.outcome is not Outcome.DATA_LOADING:
        return None
    means = system_means(results.measured(Mode.IO))
    if means is None:
        return None
    busy, cores = means["cpu_cores_busy"], means["cpu_cores"]
    # Judged against the cores other processes left it: on a busy machine those are all it can have.
    other = means.get("other_cores_busy", 0.0)
    free = max(cores - other, min(cores, 0.1))
    util = min(1.0, busy / free)
    reads = means["read_bytes_per_s"] / 1e6

    def cause(c: Cause) -> LoaderCause:
        return LoaderCause(c, busy, cores, free, other, util, reads, workers)

    if util >= CPU_SATURATED:
        return cause(Cause.CPU_BOUND), Help.CHEAPER_DECODING
    if not workers and free >= 2 and busy >= CPU_SATURATED:
        return cause(Cause.IN_PROCESS), Help.LOADER_WORKERS
    if workers and workers < cores and busy >= CPU_SATURATED * workers:
        return cause(Cause.WORKERS_CPU_BOUND), Help.MORE_WORKERS_CORES
    if util < CPU_IDLE and means["read_bytes_per_s"] >= READS_HIGH:
        return cause(Cause.STORAGE), Help.STORAGE
    return (cause(Cause.WAITS), Help.MORE_WORKERS_NOW) if util < CPU_IDLE else None


def diagnosis(
    results: RunResults,
    found: Optional[Verdict],
    workers: int,
    start: Optional[Startup],
    full_profile: Optional[StepProfile] = None,
    compute: Optional[ComputeReport] = None,
    tokens: Optional[TokenReport] = None,
) -> List[Claim]:
    """The claims the other measurements add to the IO-vs-SYNTHETIC reading, then the one change most likely to
    help. ``full_profile`` None (checkpoints): no stall claim. A swept setting that feeds the step is the advice
    where loading limits: measured beats the guesses."""
    limited = found is not None and found.limits(Outcome.COMPUTE)
    loading = found is not None and found.outcome is Outcome.DATA_LOADING
    near = None if compute is None else near_peak(compute)
    padding = None if tokens is None else padding_waste(tokens)
    wait = results.data_wait().mean
    loader = loader_cause(results, found, workers)
    stages = results.stages if loading else None
    # The signals disagree where the cores are saturated, yet a stage's time is mostly off the CPU: on a
    # saturated machine that is time spent runnable, waiting for a core, not for storage or the network.
    # The CPU-bound reading decides, and the stage claim says why.
    saturated = stages is not None and loader is not None and loader[0].cause is Cause.CPU_BOUND and stages.waits_off_cpu
    starved = full_profile is not None and bool(workers) and full_profile.stall_period == workers
    cost = copies(results)
    fix = None if loader is None else Advice(loader[1], workers)
    if stages is not None and stages.advice is not None and not saturated:
        fix = Advice(Help.STAGE, stages.advice)
    restart = start is not None and start.restarts_workers
    advice = choose_advice(found, fix, cost is not None and cost.limits, restart, starved)
    if limited and not restart:
        if padding is not None:
            advice = Advice(Help.PADDING)
        elif compute is not None and near is not None:
            advice = Advice(Help.NEAR_PEAK if near else Help.MIXED_PRECISION if mostly_float32(compute) else Help.LARGER_BATCH)
    synthetic = results.estimate(Mode.SYNTHETIC).mean
    fed = feed(results.sweep, synthetic) if found is not None else None
    # measured evidence beats the guesses, unless the setting that feeds the step is the loader's own
    swept = None if fed is None else fed.found
    if swept is not None and swept.setting != results.sweep_own and found is not None and found.limits(Outcome.DATA_LOADING):
        advice = Advice(Help.SWEPT, (swept, synthetic))
    both = contended(results, workers) if found is not None else None
    if both is not None:  # both sides are fast alone: the two together are what limits
        advice = Advice(Help.CONTENTION)
    claims: List[Optional[Claim]] = [
        Mfu(compute, near) if limited and compute is not None and near is not None else None,
        None if padding is None else Padding(padding[0].value, padding[1]),
        None if wait is None else DataWait(wait),
        None if loader is None else loader[0],
        None if stages is None else StagesFound(stages, saturated),
        Starved(workers, full_profile.stalls, full_profile.stall_share) if starved and full_profile is not None else None,
        cost,
        StartupCost(start) if start is not None and start.costly and start.share is not None else None,
        fed,
        both,
        advice,
    ]
    return [c for c in claims if c is not None]


def choose_advice(
    found: Optional[Verdict], loader_fix: Optional[Advice], copies_limit: bool, restart: bool, starved: bool
) -> Optional[Advice]:
    """The one change most likely to help, from the strongest signal."""
    if found is None or not found.decided:
        return None
    if copies_limit:
        return Advice(Help.PINNED_COPIES)
    if found.outcome is Outcome.DATA_LOADING:  # the loader's rate is the biggest loss: its cause first
        if loader_fix is not None:
            return loader_fix
        return Advice(Help.WORKERS_OR_CHEAPER) if starved else (Advice(Help.PERSISTENT) if restart else None)
    if restart:
        return Advice(Help.PERSISTENT)
    return Advice(Help.FASTER_STEP) if found.outcome is Outcome.COMPUTE else None


class Outcome(enum.Enum):
    """Which side limits training, as IO against SYNTHETIC decided it (the JSON's ``decision.outcome``)."""

    DATA_LOADING = "data-loading"
    COMPUTE = "compute"
    BALANCED = "balanced"
    UNDECIDED = "undecided"


def outcome_of(label: str) -> Tuple[Optional[Outcome], bool]:
    """A saved ``decision.outcome`` read back: (the outcome, None for a label no benchy writes; inconsistent)."""
    inconsistent = label.startswith("inconsistent: ")
    value = label[len("inconsistent: ") :] if inconsistent else label
    found = next((o for o in Outcome if o.value == value), None)
    return found, inconsistent and found is not None


class Overlap(enum.Enum):
    """How FULL stands against the slower side."""

    INCONSISTENT = "inconsistent"  # above it by more than the intervals allow: the numbers are not to be read
    FULL = "full"  # matches it: loading and compute overlap fully
    PARTLY = "partly"  # below it, by less than OVERLAP_THRESHOLD
    SERIAL = "serial"  # about loading and computing one after the other
    BELOW_SERIAL = "below-serial"  # below even that


@dataclass(frozen=True)
class Full:
    """FULL against the slower side (``slower``: ``IO`` or ``SYNTHETIC``)."""

    overlap: Overlap
    slower: str
    slower_mean: float
    mean: float
    share: float  # FULL / the slower side's mean
    serial: float  # loading then computing one after the other: IO*SYN/(IO+SYN)
    comparison: Optional[Comparison]  # FULL against the slower side


@dataclass(frozen=True)
class Verdict:
    """The reading of a run; ``more``: how this run gets more trials (what an undecided verdict advises)."""

    outcome: Outcome
    comparison: Comparison  # SYNTHETIC against IO
    io: Tuple[float, ...]
    synthetic: Tuple[float, ...]
    full: Optional[Full] = None
    full_values: Tuple[float, ...] = ()
    more: MoreTrials = field(default_factory=MoreTrials)

    @property
    def inconsistent(self) -> bool:
        return self.full is not None and self.full.overlap is Overlap.INCONSISTENT

    @property
    def io_mean(self) -> float:
        return float(np.mean(self.io))

    @property
    def synthetic_mean(self) -> float:
        return float(np.mean(self.synthetic))

    @property
    def decided(self) -> bool:
        return self.outcome is not Outcome.UNDECIDED and not self.inconsistent

    def limits(self, outcome: Outcome) -> bool:
        return self.outcome is outcome and not self.inconsistent

    @property
    def label(self) -> str:
        """The outcome as the JSON writes it: ``inconsistent: compute`` for an inconsistent one."""
        return ("inconsistent: " if self.inconsistent else "") + self.outcome.value


def balanced_bounds(tolerance: float = BALANCE_TOLERANCE) -> Tuple[float, float]:
    """The SYNTHETIC/IO ratios that count as balanced: each side within ``tolerance`` of the other."""
    return 1.0 - tolerance, 1.0 / (1.0 - tolerance)


def _io_vs_synthetic(c: Comparison) -> Outcome:
    """Balanced needs evidence, not two close means: the whole interval of SYNTHETIC/IO must lie within 5 % either
    way (an equivalence test, the same as two one-sided t-tests); two close means with a wide spread are undecided."""
    low_ok, high_ok = balanced_bounds()
    low, high = c.low, c.high
    if low is None or high is None:
        return Outcome.UNDECIDED
    if low_ok <= low <= high <= high_ok:
        return Outcome.BALANCED
    return Outcome.DATA_LOADING if low > high_ok else (Outcome.COMPUTE if high < low_ok else Outcome.UNDECIDED)


def _full(io: Sequence[float], synthetic: Sequence[float], full: Sequence[float], confidence: float) -> Full:
    """FULL against the slower side; above it beyond the interval (and by more than 5 %) it cannot be: inconsistent."""
    io_mean, syn_mean = float(np.mean(io)), float(np.mean(synthetic))
    slower_name, slower = ("IO", io) if io_mean <= syn_mean else ("SYNTHETIC", synthetic)
    slower_mean, full_mean = min(io_mean, syn_mean), float(np.mean(full))
    f = compare_log(slower, full, confidence)
    share = full_mean / slower_mean if slower_mean > 0 else math.inf
    serial = io_mean * syn_mean / (io_mean + syn_mean)  # loading then computing one after the other
    if f is not None and f.low is not None and f.low > 1.0 + BALANCE_TOLERANCE:
        overlap = Overlap.INCONSISTENT
    elif share >= 1.0:
        overlap = Overlap.FULL
    elif share >= OVERLAP_THRESHOLD:
        overlap = Overlap.PARTLY
    elif full_mean >= serial / SERIAL_MARGIN:
        overlap = Overlap.SERIAL
    else:
        overlap = Overlap.BELOW_SERIAL
    return Full(overlap, slower_name, slower_mean, full_mean, share, serial, f)


def decide(
    io: Sequence[float],
    synthetic: Sequence[float],
    full: Sequence[float],
    confidence: float = 0.95,
    more: MoreTrials = MoreTrials(),
) -> Optional[Verdict]:
    """Which side limits training, from the trial throughputs of each mode (None without IO or SYNTHETIC)."""
    c = compare_log(io, synthetic, confidence)
    if c is None:
        return None
    against = _full(io, synthetic, full, confidence) if full else None
    return Verdict(_io_vs_synthetic(c), c, tuple(io), tuple(synthetic), against, tuple(full), more)


def trials_to_decide(io: Sequence[float], synthetic: Sequence[float], confidence: float, most: int = 64) -> Optional[int]:
    """How many more trials a side would likely decide IO against SYNTHETIC, if the means and spreads held."""
    la, lb = np.log(np.asarray(io, dtype=float)), np.log(np.asarray(synthetic, dtype=float))
    if la.size < 2 or lb.size < 2 or not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        return None
    diff = abs(float(lb.mean() - la.mean()))
    va, vb = float(la.var(ddof=1)), float(lb.var(ddof=1))
    band = -math.log(balanced_bounds()[0])
    for k in range(0, most + 1):
        na, nb = la.size + k, lb.size + k
        sa, sb = va / na, vb / nb
        se = math.sqrt(sa + sb)
        if se == 0.0:
            return k
        df = max(1, math.floor(welch_df(sa, na, sb, nb)))
        half = t_quantile(confidence, df) * se
        if diff - half > band or diff + half < band:
            return k
    return None


def verdict(
    results: RunResults, modes: Sequence[Mode], confidence: float = 0.95, more: MoreTrials = MoreTrials()
) -> Optional[Verdict]:
    """:func:`decide` over the counted trials of the scheduled modes."""
    if Mode.IO not in modes or Mode.SYNTHETIC not in modes:
        return None
    values = {m: [t.throughput for t in results.measured(m)] for m in Mode}
    full = values[Mode.FULL] if Mode.FULL in modes else []
    return decide(values[Mode.IO], values[Mode.SYNTHETIC], full, confidence, more)


@dataclass(frozen=True)
class Reading:
    """A run's reading, worked out once per summary or JSON write (claims: advice last)."""

    verdict: Optional[Verdict]
    startup: Optional[Startup]
    claims: Tuple[Claim, ...]
    first_pass: Optional[FirstPass] = None  # the loader's first IO batches against the steady ones
    compute: Optional[ComputeReport] = None  # FLOPs, achieved FLOP/s and MFU (None: not counted)
    tokens: Optional[TokenReport] = None  # count: tokens: tokens per second and padding per mode
    energy: Optional[EnergyReport] = None  # joules per trial and per sample (None: no trial sampled)
    # Per mode: the step profile over the counted trials (empty at a checkpoint), and the system figures' means.
    profiles: Mapping[Mode, StepProfile] = field(default_factory=dict)
    systems: Mapping[Mode, Dict[str, float]] = field(default_factory=dict)
    whatif: Optional[WhatIf] = None  # what a change would give (``core.whatif``), checked where measured


def read(
    results: RunResults,
    modes: Sequence[Mode],
    confidence: float,
    workers: int,
    start: Optional[Startup],
    *,
    steps: bool = False,
    world: int = 1,
    peak_flops: PeakConfig = None,
    tokens_source: Optional[str] = None,
    whatif: bool = False,
    more: MoreTrials = MoreTrials(),
    depth: int = 0,
) -> Reading:
    """The :class:`Reading` of ``results``; ``steps`` (the final summary): read every step for the step profiles."""
    profiles = {m: p for m in modes if steps and (p := step_profile(results.measured(m))) is not None}
    systems = {m: s for m in modes if (s := system_means(results.measured(m))) is not None}
    full_profile = profiles.get(Mode.FULL)
    found = verdict(results, modes, confidence, more)
    caveat = busy(results, more) if found is not None else None
    compute = compute_report(results.flops, results, world, peak_flops)
    tokens = None if tokens_source is None else token_report(results, modes, tokens_source)
    claims = ([caveat] if caveat is not None else []) + diagnosis(results, found, workers, start, full_profile, compute, tokens)
    first = first_pass(results) if Mode.IO in modes else None
    model = from_results(results, systems, workers, depth=depth) if whatif else None
    return Reading(found, start, tuple(claims), first, compute, tokens, energy_report(results, modes), profiles, systems, model)
