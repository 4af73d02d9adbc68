"""The verdict: which side limits training, what the other measurements add, and the one change most
likely to help (pure: no torch, no printing). Worked out once per summary as a :class:`Reading`.

IO against SYNTHETIC is a ratio test on a log scale; FULL is read against the slower of the two.
:func:`diagnosis` adds the claims each other measurement supports (data wait, why the loader is slow,
periodic stalls, host-to-device copies, start-up, the loader sweep) and the advice.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from .compute import (
    PADDING_ADVICE,
    ComputeReport,
    EnergyReport,
    TokenReport,
    compute_advice,
    compute_clause,
    compute_report,
    energy_report,
    padding_clause,
    token_report,
)
from .distribution import StepProfile, step_profile
from .peaks import PeakConfig
from .results import RunResults, TrialResult
from .schedule import Mode
from .stages import HOL_SHARE, FirstPass, StageReport
from .startup import Startup
from .stats import Comparison, Estimate, compare_log, estimate, finite, t_quantile
from .sweep import feed_advice, feed_clause
from .whatif import WhatIf, contention_clause, from_results

__all__ = [
    "BALANCE_TOLERANCE",
    "MoreTrials",
    "Outcome",
    "Reading",
    "Verdict",
    "balanced_bounds",
    "busy_clause",
    "busy_text",
    "choose_advice",
    "decide",
    "diagnosis",
    "disturbed_trials",
    "figure_means",
    "first_pass",
    "h2d_estimate",
    "h2d_reading",
    "loader_cause",
    "outcome_of",
    "own_io",
    "read",
    "stages_clause",
    "system_means",
    "trials_to_decide",
    "verdict",
    "verdict_text",
]

# Balanced: the interval of SYNTHETIC/IO lies within this share either way (see balanced_bounds):
# a 5 % difference is not a bottleneck worth acting on, once the trials show it is no more.
BALANCE_TOLERANCE = 0.05


# FULL below this share of min(IO, SYNTHETIC) is worth explaining; down to the serial
# estimate IO*SYN/(IO+SYN) / SERIAL_MARGIN it is explained by loading and compute not overlapping.
OVERLAP_THRESHOLD = 0.8


SERIAL_MARGIN = 1.1


def system_means(trials: Sequence[TrialResult]) -> Optional[Dict[str, float]]:
    """The mean of each system figure over the trials that have them (None: none has)."""
    return figure_means([t.system.numbers() for t in trials if t.system is not None])


def figure_means(found: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, float]]:
    """The mean of each figure that is a number in every one of ``found`` (None: ``found`` is empty):
    the SYSTEM line's means, also those of a saved run's ``system`` entries."""
    if not found:
        return None
    keys = [k for k in found[0] if all(isinstance(f.get(k), (int, float)) and not isinstance(f.get(k), bool) for f in found)]
    return {k: float(np.mean([f[k] for f in found])) for k in keys}


def disturbed_trials(results: RunResults) -> List[TrialResult]:
    """The counted trials during which other processes took more than the set share of the cores."""
    return [t for m in Mode for t in results.measured(m) if t.system is not None and t.system.disturbed]


def busy_text(found: Sequence[TrialResult]) -> str:
    """``1.84 of 2 cores busy during SYNTHETIC_1, 0.91 of 2 during FULL_2``: what other processes took."""
    parts = [
        f"{t.system.other_cores_busy or 0.0:.2f} of {t.system.cpu_cores or 0:g}{' cores busy' if not k else ''} during {t.label}"
        for k, t in enumerate(found)
        if t.system is not None
    ]
    return ", ".join(parts)


@dataclass(frozen=True)
class MoreTrials:
    """How this run, as configured, gets more trials: what the verdict's undecided text and the busy-machine
    clause tell the user to do (each can be followed: ``ntrials: auto`` is not advised where it is on)."""

    auto: bool = False  # ntrials: auto already (stopped at auto_max_trials when the run ended)
    max_trials: int = 8  # global.auto_max_trials
    finished: bool = True  # the schedule ran to its end (else the script ended first)
    likely: Optional[int] = None  # the loop's further steps a decision would likely take (None: unknown)

    def undecided(self) -> str:
        """The advice of an undecided verdict."""
        if not self.finished:
            steps = f"; a decision would likely take about {self.likely} more steps" if self.likely is not None else ""
            return f"let the schedule run on (the warning above says how) for more trials{steps}"
        if self.auto:
            return f"raise global.auto_max_trials (now {self.max_trials}) or nbatches for more or longer trials"
        return "run more or longer trials (ntrials: auto runs them until the answer is known)"

    def outweigh(self) -> str:
        """What makes trials on a busy machine count for less."""
        if self.auto:
            return (
                f"rerun on a quiet machine, or raise global.auto_max_trials (now {self.max_trials}) so that more "
                f"trials outweigh them"
            )
        if not self.finished:
            return "rerun on a quiet machine"
        return "rerun on a quiet machine, or with ntrials: auto so that more trials outweigh them"


def busy_clause(results: RunResults, more: MoreTrials = MoreTrials()) -> Optional[str]:
    """The verdict's caveat when trials it rests on ran on a busy machine, with what to do."""
    found = disturbed_trials(results)
    if not found:
        return None
    total = sum(len(results.measured(m)) for m in Mode)
    return (
        f"{len(found)} of the {total} trials it rests on ran on a busy machine (other processes kept "
        f"{busy_text(found)}): their throughputs are likely low, so {more.outweigh()}"
    )


def first_pass(results: RunResults) -> Optional[FirstPass]:
    """The loader's first IO batches (IO_WARMUP_1; without IO warm-ups IO_1, against the later IO
    trials) against the measured IO trials, with the files the loader read in those and how much of
    them came from storage (None without both)."""
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
    return FirstPass(first.throughput, steady, files, storage, first.label)


def h2d_estimate(results: RunResults) -> Estimate:
    return estimate([t.throughput for t in results.h2d])


def own_io(results: RunResults) -> Estimate:
    """IO as rank 0 saw it alone: what its IO_H2D trials compare with (they are rank 0's own)."""
    return estimate([t.own_throughput for t in results.measured(Mode.IO)])


H2D_SLOWER = 0.9  # copies that leave less than this share of IO's rate are named in the verdict


def h2d_reading(results: RunResults) -> Optional[Tuple[str, bool]]:
    """What host-to-device copies cost the loader, when they cost more than 10 % of its rate:
    (the clause, whether the copies rather than the loader limit training)."""
    est, io = h2d_estimate(results), own_io(results)
    syn = estimate([t.own_throughput for t in results.measured(Mode.SYNTHETIC)])
    if est.mean is None or not io.mean or est.mean >= H2D_SLOWER * io.mean:
        return None
    limits = syn.mean is not None and est.mean < syn.mean <= io.mean
    text = (
        f"copying each batch to {results.h2d_device} lowers the loader's rate to {est.mean:.3f} samples/s, "
        f"{100.0 * est.mean / io.mean:.0f} % of IO"
    )
    if limits:
        text += ", below SYNTHETIC: the copies, not the loader, limit training"
    return text + " (pin_memory=True and non_blocking copies let them overlap the step)", limits


CPU_SATURATED = 0.85  # IO trials keeping this share of the cores busy: the loader is CPU-bound
CPU_BOUND = "the loader is CPU-bound"  # how loader_cause's CPU-bound clause begins


CPU_IDLE = 0.5


READS_HIGH = 20e6  # bytes per second from storage that make storage a suspect


def loader_cause(results: RunResults, found: Optional[Verdict], workers: int) -> Optional[Tuple[str, str]]:
    """Why the loader is slow, from the IO trials' system metrics, when loading limits training (an
    inconsistent reading included: IO is still the slower side): (the clause, the change it points to)."""
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
    kept = (
        f"{busy:.2f} of {cores:g} cores busy"
        if other < 0.1
        else f"{busy:.2f} cores busy of the {free:.2f} that other processes left free"
    )
    reads = means["read_bytes_per_s"] / 1e6
    if util >= CPU_SATURATED:
        return (
            f"{CPU_BOUND}: IO trials kept {kept} ({100 * util:.0f} %), so "
            f"decoding and augmentation need more CPU than there is and more workers than cores will not help "
            f"(cheaper transforms, smaller or pre-decoded samples, or decoding on the accelerator)",
            "cheaper decoding and augmentation per sample (the cores are saturated)",
        )
    if not workers and free >= 2 and busy >= CPU_SATURATED:
        return (
            f"the loading runs in the training process (num_workers = 0) and keeps its core busy (IO trials kept "
            f"{busy:.2f} cores busy of the {free:.2f} free), in series with the step: loader workers would make "
            f"samples beside the step on the other {free - 1:.2f} cores",
            "loader workers (num_workers > 0), up to the free cores",
        )
    if workers and workers < cores and busy >= CPU_SATURATED * workers:
        return (
            f"the loader's workers are CPU-bound: IO trials kept {busy:.2f} cores busy with num_workers = "
            f"{workers} of {cores:g} cores, so more workers (up to {cores:g}) should feed the step faster",
            "more loader workers (num_workers), up to the cores",
        )
    if util < CPU_IDLE and means["read_bytes_per_s"] >= READS_HIGH:
        return (
            f"the storage looks like the limit: IO trials read {reads:.1f} MB/s with the CPU {100 * util:.0f} % "
            f"busy (faster or local storage, caching, or larger sequential reads)",
            "faster or local storage, or caching the dataset",
        )
    if util < CPU_IDLE:
        return (
            f"the loader is neither CPU- nor storage-bound here (CPU {100 * util:.0f} % busy, storage reads "
            f"{reads:.1f} MB/s): it waits on something else (network storage, a remote service, sleeps or "
            f"locks) with too few workers to overlap the waits (num_workers = {workers}; with the CPU idle, "
            f"more workers than cores can help)",
            f"more loader workers (num_workers = {workers} now)",
        )
    return None


def diagnosis(
    results: RunResults,
    found: Optional[Verdict],
    workers: int,
    start: Optional[Startup],
    full_profile: Optional[StepProfile] = None,
    compute: Optional[ComputeReport] = None,
    tokens: Optional[TokenReport] = None,
) -> List[str]:
    """What the verdict adds to the IO-vs-SYNTHETIC reading, each claim with its number: how much
    FULL waits for data, why the loader is slow (CPU, workers, storage), periodic stalls,
    host-to-device copies, start-up; then the one change most likely to help. ``full_profile``:
    FULL's step profile (it reads every step: the final summary passes it, checkpoints do not).
    After a loader sweep: which swept setting feeds the step; when loading limits training and one
    other than the loader's own does, it is the advice (measured beats the guesses above).
    ``compute``: the step's MFU, said (with its advice) where compute limits; ``tokens``: padding
    above 10 % is said, and is the advice where compute limits."""
    clauses: List[str] = []
    limited = found is not None and found.limits(Outcome.COMPUTE)
    loading = found is not None and found.outcome is Outcome.DATA_LOADING
    if limited and compute is not None:
        said = compute_clause(compute)
        if said is not None:
            clauses.append(said)
    padding = None if tokens is None else padding_clause(tokens)
    if padding is not None:
        clauses.append(padding)
    wait = results.data_wait()
    if wait.mean is not None:
        clauses.append(f"FULL spends {100.0 * wait.mean:.1f} % of its time waiting for the loader")
    loader = loader_cause(results, found, workers)
    if loader is not None:
        clauses.append(loader[0])
    stages = results.stages if loading else None
    if stages is not None:
        clauses.append(stages_clause(stages))
    profile = full_profile  # None: not looked at (checkpoints), no stall claim
    starved = profile is not None and bool(workers) and profile.stall_period == workers
    if starved and profile is not None:
        clauses.append(
            f"FULL stalls every {workers} steps ({profile.stalls} stalls, "
            f"{100.0 * profile.stall_share:.1f} % of its time): a starved worker pool"
        )
    copies = h2d_reading(results)
    if copies is not None:
        clauses.append(copies[0])
    startup_clause = None if start is None else start.verdict_clause()
    if startup_clause is not None:
        clauses.append(startup_clause)
    fix = stages.advice if stages is not None and stages.advice is not None else None if loader is None else loader[1]
    if stages is not None and loader is not None and loader[0].startswith(CPU_BOUND) and stages.waits_off_cpu:
        # The signals disagree: the cores are saturated, yet a stage's time is mostly off the CPU. On a
        # saturated machine that is time spent runnable, waiting for a core, not for storage or the
        # network: the CPU-bound reading decides, and the stage clause says why.
        clauses[-1] += (
            "; with the cores saturated, that time off the CPU is time waiting for a core, not for storage or the network"
        )
        fix = loader[1]
    advice = choose_advice(found, fix, copies is not None and copies[1], start is not None and start.restarts_workers, starved)
    if limited and not (start is not None and start.restarts_workers):
        if padding is not None:
            advice = PADDING_ADVICE
        elif compute is not None:
            advice = compute_advice(compute) or advice
    synthetic = results.estimate(Mode.SYNTHETIC).mean
    feed = feed_clause(results.sweep, synthetic) if found is not None else None
    if feed is not None:
        clauses.append(feed)
        swept = feed_advice(results.sweep, synthetic, results.sweep_own)
        if swept is not None and found is not None and found.limits(Outcome.DATA_LOADING):
            advice = swept
    contended = contention_clause(results, workers) if found is not None else None
    if contended is not None:  # both sides are fast alone: the two together are what limits
        clauses.append(contended[0])
        advice = contended[1]
    if advice is not None:
        clauses.append(f"most likely to help: {advice}")
    return clauses


def stages_clause(report: StageReport) -> str:
    """What the stage trials add to the verdict: the largest stage, a slow worker, head-of-line waits."""
    top = report.largest
    basis = "the workers' time" if top is not None and top.where == "workers" and report.workers else "the IO period"
    out = (
        "the stage trials find no stage"
        if top is None
        else f"the stage trials put the largest share of the loader's work in {top.name} ({100 * top.share:.0f} % of {basis})"
    )
    if report.straggler is not None:
        worker, ratio = report.straggler
        out += f"; worker {worker} takes {ratio:.1f}x the others' time a batch (a slow worker holds up the rest)"
    if report.hol_share >= HOL_SHARE:
        out += (
            f"; for {100 * report.hol_share:.1f} % of the time the loop waited for a batch while a later one "
            f"was ready and a worker sat idle (head-of-line blocking)"
        )
    return out


def choose_advice(
    found: Optional[Verdict], loader_fix: Optional[str], copies_limit: bool, restart: bool, starved: bool
) -> Optional[str]:
    """The one change most likely to help, from the strongest signal: copies that limit training,
    then (loading the limit) the loader's own cause, its stalls, its start-up; (compute the
    limit) the start-up the loop still pays, else a faster step."""
    if found is None or not found.decided:
        return None
    if copies_limit:
        return "pinned memory and non_blocking copies (pin_memory=True)"
    if found.outcome is Outcome.DATA_LOADING:  # the loader's rate is the biggest loss: its cause first
        if loader_fix is not None:
            return loader_fix
        if starved:
            return "more loader workers, or cheaper batches"
        return "persistent_workers=True" if restart else None
    if restart:
        return "persistent_workers=True"
    if found.outcome is Outcome.COMPUTE:
        return "a faster step (the loader has headroom: mixed precision, a larger batch, compiled or fused code)"
    return None


class Outcome(enum.Enum):
    """Which side limits training, as IO against SYNTHETIC decided it (the JSON's ``decision.outcome``)."""

    DATA_LOADING = "data-loading"
    COMPUTE = "compute"
    BALANCED = "balanced"
    UNDECIDED = "undecided"


def outcome_of(label: str) -> Tuple[Optional[Outcome], bool]:
    """A saved ``decision.outcome`` read back: (the outcome, or None for a label no benchy writes;
    whether it was inconsistent), e.g. ``inconsistent: compute`` -> (COMPUTE, True)."""
    inconsistent = label.startswith("inconsistent: ")
    value = label[len("inconsistent: ") :] if inconsistent else label
    found = next((o for o in Outcome if o.value == value), None)
    return found, inconsistent and found is not None


@dataclass(frozen=True)
class Verdict:
    """The reading of a run: its text, its outcome (``inconsistent``: FULL above the slower side by more
    than the intervals allow, so the numbers are not to be read) and, for the JSON, how it was decided."""

    text: str
    outcome: Outcome
    record: Dict[str, Any]
    inconsistent: bool = False

    @property
    def decided(self) -> bool:
        """A side was found (or both balanced) and the measurement is consistent."""
        return self.outcome is not Outcome.UNDECIDED and not self.inconsistent

    def limits(self, outcome: Outcome) -> bool:
        """``outcome`` is the verdict's and the measurement is consistent."""
        return self.outcome is outcome and not self.inconsistent

    @property
    def label(self) -> str:
        """The outcome as the JSON writes it: ``inconsistent: compute`` for an inconsistent one."""
        return ("inconsistent: " if self.inconsistent else "") + self.outcome.value


def _percent(confidence: float) -> str:
    return f"{100.0 * confidence:g} %"


def _x(ratio: float) -> str:
    """A ratio as ``1.48x``; below 0.1 with 3 significant digits (``0.00269x``, never ``0.00x``)."""
    if not math.isfinite(ratio) or ratio >= 0.1:
        return f"{ratio:.2f}x"
    if ratio <= 0:
        return "0x"
    return f"{ratio:.{2 - math.floor(math.log10(ratio))}f}x"


def _interval_text(c: Comparison) -> str:
    if c.low is None or c.high is None:
        return "no interval with one trial a side"
    return f"{_percent(c.confidence)} interval {_x(c.low)} to {_x(c.high)}"


def _comparison_record(c: Comparison, a: str, b: str, a_values: Sequence[float], b_values: Sequence[float]) -> Dict[str, Any]:
    return {
        "method": c.method,
        "ratio": f"{b}/{a}",
        "value": finite(c.ratio),
        "interval": None if c.low is None or c.high is None else [finite(c.low), finite(c.high)],
        "confidence": c.confidence,
        "t": None if c.t is None else finite(c.t),
        "df": c.df,
        "p": c.p,
        "inputs": {a: [finite(v) for v in a_values], b: [finite(v) for v in b_values]},
    }


def balanced_bounds(tolerance: float = BALANCE_TOLERANCE) -> Tuple[float, float]:
    """The SYNTHETIC/IO ratios that count as balanced: each side within ``tolerance`` of the other."""
    return 1.0 - tolerance, 1.0 / (1.0 - tolerance)


def _io_vs_synthetic(c: Comparison, io_mean: float, syn_mean: float, more: MoreTrials) -> Tuple[Outcome, str]:
    """(outcome, text) of IO against SYNTHETIC: balanced, decided either way, or undecided.

    Balanced needs evidence, not two close means: the whole interval of SYNTHETIC/IO (at the
    verdict's confidence) must lie within 5 % either way, an equivalence test on the log ratio
    (the same as two one-sided t-tests, each at half the interval's error rate). Two trials a side of steady sides pass it;
    two close means with a wide spread do not, and are undecided.
    """
    low_ok, high_ok = balanced_bounds()
    low, high = c.low, c.high
    if low is not None and high is not None and low_ok <= low <= high <= high_ok:
        outcome = Outcome.BALANCED
        text = (
            f"balanced: data loading (IO {io_mean:.3f}) and compute (SYNTHETIC {syn_mean:.3f} samples/s) are "
            f"within 5 % of each other (SYNTHETIC/IO {_x(c.ratio)}, {_interval_text(c)}); speeding up one alone "
            f"gains little"
        )
    elif low is not None and high is not None and (low > high_ok or high < low_ok):
        if low > high_ok:
            outcome = Outcome.DATA_LOADING
            text = (
                f"data loading limits training: IO {io_mean:.3f} < SYNTHETIC {syn_mean:.3f} samples/s; "
                f"compute could go {_x(c.ratio)} faster with faster loading ({_interval_text(c)})"
            )
        else:
            outcome = Outcome.COMPUTE
            text = (
                f"compute limits training: SYNTHETIC {syn_mean:.3f} < IO {io_mean:.3f} samples/s; "
                f"the loader has {_x(1.0 / c.ratio)} headroom ({_percent(c.confidence)} interval {_x(1.0 / high)} to "
                f"{_x(1.0 / low)})"
            )
    elif low_ok <= c.ratio <= high_ok:
        outcome = Outcome.UNDECIDED
        text = (
            f"undecided: SYNTHETIC/IO is {_x(c.ratio)}, within 5 % of balanced, but with {c.n_a} IO and {c.n_b} "
            f"SYNTHETIC trials ({_interval_text(c)}) the two may still differ by more; balanced needs the "
            f"interval inside {_x(low_ok)} to {_x(high_ok)}: {more.undecided()}"
        )
    else:
        outcome = Outcome.UNDECIDED
        text = (
            f"undecided: SYNTHETIC/IO is {_x(c.ratio)}, but with {c.n_a} IO and {c.n_b} SYNTHETIC trials "
            f"({_interval_text(c)}) the two may be within 5 % of each other; {more.undecided()} to tell which side "
            f"limits training"
        )
    return outcome, text


def decide(
    io: Sequence[float],
    synthetic: Sequence[float],
    full: Sequence[float],
    confidence: float = 0.95,
    more: MoreTrials = MoreTrials(),
) -> Optional[Verdict]:
    """Which side limits training, from the trial throughputs of each mode (None without IO or SYNTHETIC).


    IO against SYNTHETIC is a ratio test on a log scale (:func:`compare_log`): a side when the
    interval of SYNTHETIC/IO (``confidence``, 95 % by default; 99 % when trials stop adaptively,
    see ``core.machine``) lies beyond 5 % either way, balanced when it lies within 5 %, undecided
    otherwise. FULL is then read against the slower of the two; FULL above it beyond
    the interval (and by more than 5 %) cannot be, and is named as an inconsistent measurement.
    """
    c = compare_log(io, synthetic, confidence)
    if c is None:
        return None
    io_mean, syn_mean = float(np.mean(io)), float(np.mean(synthetic))
    record: Dict[str, Any] = {"io_vs_synthetic": _comparison_record(c, "IO", "SYNTHETIC", io, synthetic)}
    outcome, text = _io_vs_synthetic(c, io_mean, syn_mean, more)
    record["outcome"] = outcome.value
    if not full:
        return Verdict(text, outcome, record)
    slower_name, slower = ("IO", io) if io_mean <= syn_mean else ("SYNTHETIC", synthetic)
    slower_mean, full_mean = min(io_mean, syn_mean), float(np.mean(full))
    f = compare_log(slower, full, confidence)
    if f is not None:
        record["full_vs_slower"] = _comparison_record(f, slower_name, "FULL", slower, full)
    share = full_mean / slower_mean if slower_mean > 0 else math.inf
    impossible = f is not None and f.low is not None and f.low > 1.0 + BALANCE_TOLERANCE
    record["inconsistent"] = bool(impossible)
    if impossible:
        assert f is not None
        first = "SYNTHETIC" if slower_name == "SYNTHETIC" else "IO"
        text = (
            f"inconsistent measurement: FULL {full_mean:.3f} is above {slower_name} {slower_mean:.3f} samples/s by more "
            f"than the intervals allow (FULL/{slower_name} {_interval_text(f)}), which cannot happen when both "
            f"are measured on the same footing. Likely causes: warm-up drift (the {first} trials ran in "
            f"slower epochs: set nwarmup: auto, or raise it), or loader workers prefetching across epochs "
            f"(FULL trials start with batches ready: make nbatches much larger than num_workers x "
            f"prefetch_factor). Do not read these numbers as a result. IO against SYNTHETIC alone: {text}"
        )
        record["outcome"] = "inconsistent: " + outcome.value
        return Verdict(text, outcome, record, inconsistent=True)
    if share >= 1.0:
        text += (
            f"; FULL {full_mean:.3f} samples/s matches the slower of the two within the intervals: loading and compute "
            f"overlap fully"
        )
        return Verdict(text, outcome, record)
    text += f"; FULL reaches {100.0 * share:.1f} % of the slower of the two"
    if share < OVERLAP_THRESHOLD:
        # Loading then computing one after the other gives IO*SYN/(IO+SYN).
        serial = io_mean * syn_mean / (io_mean + syn_mean)
        if full_mean >= serial / SERIAL_MARGIN:
            text += (
                f", about the {serial:.3f} samples/s of loading and computing one after the other: they do not "
                f"overlap (loader workers or prefetching overlap them where cores or an accelerator are free)"
            )
        else:
            text += (
                f", below even loading and computing one after the other ({serial:.3f} samples/s): "
                "the real loop pays for something neither trial has "
                "(host-to-device copies, each new batch cold in the caches where SYNTHETIC reuses one, "
                "contention between loader workers and the step)"
            )
    return Verdict(text, outcome, record)


def trials_to_decide(io: Sequence[float], synthetic: Sequence[float], confidence: float, most: int = 64) -> Optional[int]:
    """How many more trials a side (IO's come with SYNTHETIC's) would likely decide IO against SYNTHETIC, if the
    means and spreads seen so far held: the fewest ``k`` up to ``most`` with which the ratio's interval lies beyond
    the balanced band (a side) or within it; 0: decided now; None: not within ``most`` (the sides too close to tell), or
    too few trials to estimate a spread (two a side)."""
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
        df = max(1, math.floor((sa + sb) ** 2 / ((sa * sa) / (na - 1) + (sb * sb) / (nb - 1))))
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


def verdict_text(found: Verdict, clauses: Sequence[str] = ()) -> str:
    """The verdict, with what other measurements add (loader start-up ...)."""
    return "; ".join([found.text, *clauses])


@dataclass(frozen=True)
class Reading:
    """A run's reading, worked out once per summary or JSON write: the verdict (None without IO or
    SYNTHETIC), the loader's start-up, the clauses the other measurements add (advice last), and
    the loader's first pass (:func:`first_pass`)."""

    verdict: Optional[Verdict]
    startup: Optional[Startup]
    clauses: Tuple[str, ...]
    first_pass: Optional[FirstPass] = None  # the loader's first IO batches against the steady ones
    compute: Optional[ComputeReport] = None  # FLOPs, achieved FLOP/s and MFU (None: not counted)
    tokens: Optional[TokenReport] = None  # count: tokens: tokens per second and padding per mode
    energy: Optional[EnergyReport] = None  # joules per trial and per sample (None: no trial sampled)
    # Per mode: the step profile pooled over the counted trials (only when the steps were read: the
    # final summary; a checkpoint leaves it empty), and the means of the system figures.
    profiles: Mapping[Mode, StepProfile] = field(default_factory=dict)
    systems: Mapping[Mode, Dict[str, float]] = field(default_factory=dict)
    whatif: Optional[WhatIf] = None  # what a change would give (``core.whatif``), checked where measured

    @property
    def text(self) -> Optional[str]:
        """The verdict line's text, with the clauses (None without a verdict)."""
        return None if self.verdict is None else verdict_text(self.verdict, self.clauses)


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
    price: Optional[float] = None,
    epoch_batches: Optional[int] = None,
    more: MoreTrials = MoreTrials(),
) -> Reading:
    """The :class:`Reading` of ``results``, every figure the outputs render worked out once:
    :func:`verdict`, then :func:`diagnosis` of it, with the step's FLOPs against ``peak_flops``
    (``global.peak_flops``) on ``world`` devices, the tokens (``tokens_source``: what was counted,
    with ``count: tokens``), the energy, each mode's system means and, with ``steps`` (the final
    summary: it reads every step), each mode's step profile (FULL's gives the stall claim); with ``whatif``,
    the model of :mod:`benchy.core.whatif` (``price``: an hour's price; ``epoch_batches``: the epoch's length);
    ``more``: how this run gets more trials (what an undecided verdict advises)."""
    profiles = {m: p for m in modes if steps and (p := step_profile(results.measured(m))) is not None}
    systems = {m: s for m in modes if (s := system_means(results.measured(m))) is not None}
    full_profile = profiles.get(Mode.FULL)
    found = verdict(results, modes, confidence, more)
    busy = busy_clause(results, more) if found is not None else None
    compute = compute_report(results.flops, results, world, peak_flops)
    tokens = None if tokens_source is None else token_report(results, modes, tokens_source)
    clauses = ([busy] if busy is not None else []) + diagnosis(results, found, workers, start, full_profile, compute, tokens)
    return Reading(
        found,
        start,
        tuple(clauses),
        first_pass(results) if Mode.IO in modes else None,
        compute,
        tokens,
        energy_report(results, modes),
        profiles,
        systems,
        from_results(results, systems, workers, price=price, epoch_batches=epoch_batches) if whatif else None,
    )
