"""Output formats: the stable ``BENCHY::`` lines and the versioned JSON document (pure).

The three summary lines keep the original grammar that CI jobs parse::

    BENCHY::SUMMARY::IO average trial throughput: 89.177 +/- 1.011

Anything else we add starts with ``BENCHY::SUMMARY::<WORD>`` where WORD is not a mode,
so it cannot be mistaken for them.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._config import PROBE_PREFIX, STEPS_TEMP_SUFFIX, TEMP_PREFIX, TEMP_SUFFIX
from ._dist import straggler
from ._distribution import STALL_FACTOR, StepProfile, step_profile
from ._results import RunResults, TrialResult
from ._schedule import Mode
from ._startup import Startup
from ._stats import Comparison, Estimate, compare_log, estimate
from ._sweep import feed_advice, feed_clause

__all__ = [
    "data_wait_line",
    "diagnosis",
    "h2d_line",
    "iteration_line",
    "publish",
    "steps_text",
    "summary_line",
    "summary_lines",
    "system_means",
    "system_text",
    "trial_line",
    "verdict_line",
    "verdict_text",
    "wait_line",
    "write_atomic",
    "write_document",
    "write_json_atomic",
]

# Two estimates closer than this (relative) are called balanced even if their
# intervals do not overlap: a 5 % difference is not a bottleneck worth acting on.
BALANCE_TOLERANCE = 0.05
# FULL below this share of min(IO, SYNTHETIC) is worth explaining; down to the serial
# estimate IO*SYN/(IO+SYN) / SERIAL_MARGIN it is explained by loading and compute not overlapping.
OVERLAP_THRESHOLD = 0.8
SERIAL_MARGIN = 1.1


def info_line(message: str) -> str:
    return f"BENCHY::INFO::Message: {message}"


def warning_line(message: str) -> str:
    return f"BENCHY::WARNING::Message: {message}"


def trial_line(result: TrialResult) -> str:
    """``BENCHY::FULL_2::Trial Throughput: 90.123`` (warm-ups: ``FULL_WARMUP_1``)."""
    return f"BENCHY::{result.label}::Trial Throughput: {result.throughput:.3f}"


def wait_line(result: TrialResult) -> Optional[str]:
    """``BENCHY::FULL_2::Data Wait: 12.3 % of the trial (median step 4.100 ms, median wait 0.520 ms)``."""
    share = result.data_wait
    if share is None or result.wait_median is None or result.work_median is None:
        return None
    return (f"BENCHY::{result.label}::Data Wait: {100.0 * share:.1f} % of the trial (median step "
            f"{1e3 * result.work_median:.3f} ms, median wait {1e3 * result.wait_median:.3f} ms)")


def data_wait_line(est: Estimate) -> Optional[str]:
    """``BENCHY::SUMMARY::DATA_WAIT 12.3 % of FULL time was spent waiting for the loader (+/- 1.2)``."""
    if est.mean is None:
        return None
    spread = "n/a" if est.half_width is None else f"{100.0 * est.half_width:.1f}"
    return (f"BENCHY::SUMMARY::DATA_WAIT {100.0 * est.mean:.1f} % of FULL time was spent waiting for the "
            f"loader (+/- {spread})")


def system_means(trials: Sequence[TrialResult]) -> Optional[Dict[str, float]]:
    """The mean of each system figure over the trials that have them (None: none has)."""
    found = [t.system for t in trials if t.system]
    if not found:
        return None
    keys = [k for k in found[0] if all(isinstance(f.get(k), (int, float)) for f in found)]
    return {k: float(np.mean([f[k] for f in found])) for k in keys}


def system_text(mode: Mode, means: Mapping[str, float]) -> str:
    """``IO CPU 1.93 of 2 cores busy (96 %), peak RSS 512 MB, storage reads 0.0 MB/s`` (+ GPU)."""
    text = (f"{mode.value} CPU {means['cpu_cores_busy']:.2f} of {means['cpu_cores']:g} cores busy "
            f"({100.0 * means['cpu_util']:.0f} %), peak RSS {means['rss_max_bytes'] / 1e6:.0f} MB, "
            f"storage reads {means['read_bytes_per_s'] / 1e6:.1f} MB/s")
    if "gpu_util" in means:
        text += f", GPU {100.0 * means['gpu_util']:.0f} % busy"
    if "gpu_memory_bytes" in means:
        text += f", {means['gpu_memory_bytes'] / 1e9:.1f} GB"
    if "gpu_power_w" in means:
        text += f", {means['gpu_power_w']:.0f} W"
    return text + " (means over its trials)"


def h2d_estimate(results: RunResults) -> Estimate:
    return estimate([t.throughput for t in results.h2d])


def _own_io(results: RunResults) -> Estimate:
    """IO as rank 0 saw it alone: what its IO_H2D trials compare with (they are rank 0's own)."""
    return estimate([t.own_throughput for t in results.measured(Mode.IO)])


def h2d_line(results: RunResults) -> Optional[str]:
    """``BENCHY::SUMMARY::H2D IO with copies to cuda:0: 812.3 +/- 4.1 samples/s, 0.93x IO``, or why not."""
    if results.h2d_skipped is not None and not results.h2d:
        return f"BENCHY::SUMMARY::H2D skipped: {results.h2d_skipped}"
    est, io = h2d_estimate(results), _own_io(results)
    if est.mean is None:
        return None
    spread = "n/a" if est.half_width is None else f"{est.half_width:.3f}"
    text = f"BENCHY::SUMMARY::H2D IO with copies to {results.h2d_device}: {est.mean:.3f} +/- {spread} samples/s"
    if io.mean:
        text += f", {est.mean / io.mean:.2f}x IO"
    return text + " (this rank's loader)"


H2D_SLOWER = 0.9  # copies that leave less than this share of IO's rate are named in the verdict


def h2d_reading(results: RunResults) -> Optional[Tuple[str, bool]]:
    """What host-to-device copies cost the loader, when they cost more than 10 % of its rate:
    (the clause, whether the copies rather than the loader limit training)."""
    est, io = h2d_estimate(results), _own_io(results)
    syn = estimate([t.own_throughput for t in results.measured(Mode.SYNTHETIC)])
    if est.mean is None or not io.mean or est.mean >= H2D_SLOWER * io.mean:
        return None
    limits = syn.mean is not None and est.mean < syn.mean <= io.mean
    text = (f"copying each batch to {results.h2d_device} lowers the loader's rate to {est.mean:.3f} samples/s, "
            f"{100.0 * est.mean / io.mean:.0f} % of IO")
    if limits:
        text += ", below SYNTHETIC: the copies, not the loader, limit training"
    return text + " (pin_memory=True and non_blocking copies let them overlap the step)", limits


def h2d_block(results: RunResults) -> Dict[str, Any]:
    """The JSON's ``IO_H2D``: this rank's IO trials with copies to the accelerator, or why none ran."""
    est, io = h2d_estimate(results), _own_io(results)
    return {
        "device": results.h2d_device,
        "skipped": results.h2d_skipped,
        "trial_throughput": [_finite(t.throughput) for t in results.h2d],
        "trial_time": [t.seconds for t in results.h2d],
        "trial_samples": [t.samples for t in results.h2d],
        "mean": est.mean,
        "interval": est.half_width,
        "n": est.n,
        "vs_io": est.mean / io.mean if est.mean is not None and io.mean else None,
        "system": [t.system for t in results.h2d],
    }


CPU_SATURATED = 0.85  # IO trials keeping this share of the cores busy: the loader is CPU-bound
CPU_IDLE = 0.5
READS_HIGH = 20e6  # bytes per second from storage that make storage a suspect


def loader_cause(results: RunResults, outcome: str, workers: int) -> Optional[Tuple[str, str]]:
    """Why the loader is slow, from the IO trials' system metrics, when loading limits training:
    (the clause, the change it points to)."""
    if "data-loading" not in outcome:
        return None
    means = system_means(results.measured(Mode.IO))
    if means is None:
        return None
    util, busy, cores = means["cpu_util"], means["cpu_cores_busy"], means["cpu_cores"]
    reads = means["read_bytes_per_s"] / 1e6
    if util >= CPU_SATURATED:
        return (f"the loader is CPU-bound: IO trials kept {busy:.2f} of {cores:g} cores busy ({100 * util:.0f} %), so "
                f"decoding and augmentation need more CPU than there is and more workers than cores will not help "
                f"(cheaper transforms, smaller or pre-decoded samples, or decoding on the accelerator)",
                "cheaper decoding and augmentation per sample (the cores are saturated)")
    if workers and workers < cores and busy >= CPU_SATURATED * workers:
        return (f"the loader's workers are CPU-bound: IO trials kept {busy:.2f} cores busy with num_workers = "
                f"{workers} of {cores:g} cores, so more workers (up to {cores:g}) should feed the step faster",
                "more loader workers (num_workers), up to the cores")
    if util < CPU_IDLE and means["read_bytes_per_s"] >= READS_HIGH:
        return (f"the storage looks like the limit: IO trials read {reads:.1f} MB/s with the CPU {100 * util:.0f} % "
                f"busy (faster or local storage, caching, or larger sequential reads)",
                "faster or local storage, or caching the dataset")
    if util < CPU_IDLE:
        return (f"the loader is neither CPU- nor storage-bound here (CPU {100 * util:.0f} % busy, storage reads "
                f"{reads:.1f} MB/s): it waits on something else (network storage, a remote service, sleeps or "
                f"locks) with too few workers to overlap the waits (num_workers = {workers}; with the CPU idle, "
                f"more workers than cores can help)",
                f"more loader workers (num_workers = {workers} now)")
    return None


def diagnosis(results: RunResults, found: Optional[Verdict], workers: int,
              start: Optional[Startup], full_profile: Optional[StepProfile] = None) -> List[str]:
    """What the verdict adds to the IO-vs-SYNTHETIC reading, each claim with its number: how much
    FULL waits for data, why the loader is slow (CPU, workers, storage), periodic stalls,
    host-to-device copies, start-up; then the one change most likely to help. ``full_profile``:
    FULL's step profile (it reads every step: the final summary passes it, checkpoints do not).
    After a loader sweep: which swept setting feeds the step; when loading limits training and one
    other than the loader's own does, it is the advice (measured beats the guesses above)."""
    outcome = "" if found is None else found.outcome
    clauses: List[str] = []
    wait = results.data_wait()
    if wait.mean is not None:
        clauses.append(f"FULL spends {100.0 * wait.mean:.1f} % of its time waiting for the loader")
    loader = loader_cause(results, outcome, workers)
    if loader is not None:
        clauses.append(loader[0])
    profile = full_profile  # None: not looked at (checkpoints), no stall claim
    starved = profile is not None and bool(workers) and profile.stall_period == workers
    if starved and profile is not None:
        clauses.append(f"FULL stalls every {workers} steps ({profile.stalls} stalls, "
                       f"{100.0 * profile.stall_share:.1f} % of its time): a starved worker pool")
    copies = h2d_reading(results)
    if copies is not None:
        clauses.append(copies[0])
    startup_clause = None if start is None else start.verdict_clause()
    if startup_clause is not None:
        clauses.append(startup_clause)
    advice = _advice(outcome, None if loader is None else loader[1], copies is not None and copies[1],
                     start is not None and start.restarts_workers, starved)
    synthetic = results.estimate(Mode.SYNTHETIC).mean
    feed = feed_clause(results.sweep, synthetic) if found is not None else None
    if feed is not None:
        clauses.append(feed)
        swept = feed_advice(results.sweep, synthetic, results.sweep_own)
        if swept is not None and outcome == "data-loading":
            advice = swept
    if advice is not None:
        clauses.append(f"most likely to help: {advice}")
    return clauses


def _advice(outcome: str, loader_fix: Optional[str], copies_limit: bool, restart: bool,
            starved: bool) -> Optional[str]:
    """The one change most likely to help, from the strongest signal: copies that limit training,
    then (loading the limit) the loader's own cause, its stalls, its start-up; (compute the
    limit) the start-up the loop still pays, else a faster step."""
    if "inconsistent" in outcome or outcome in ("", "undecided"):
        return None
    if copies_limit:
        return "pinned memory and non_blocking copies (pin_memory=True)"
    if "data-loading" in outcome:  # the loader's rate is the biggest loss: its cause first
        if loader_fix is not None:
            return loader_fix
        if starved:
            return "more loader workers, or cheaper batches"
        return "persistent_workers=True" if restart else None
    if restart:
        return "persistent_workers=True"
    if "compute" in outcome:
        return "a faster step (the loader has headroom: mixed precision, a larger batch, compiled or fused code)"
    return None


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.3f} ms"


def steps_text(mode: Mode, profile: StepProfile, workers: int = 0) -> str:
    """Percentiles of a mode's step time and its stalls, in words (the STEPS summary line)."""
    text = (f"{mode.value} step time p50 {_ms(profile.p50)}, p90 {_ms(profile.p90)}, p99 {_ms(profile.p99)} "
            f"over {profile.steps} steps; ")
    if not profile.stalls:
        return text + f"no stalls (steps over {STALL_FACTOR:g}x the median)"
    text += (f"{profile.stalls} stall(s) (steps over {STALL_FACTOR:g}x the median) took "
             f"{100.0 * profile.stall_share:.1f} % of the time")
    k = profile.stall_period
    if k is None:
        return text
    if workers and k == workers:
        return text + (f", every {k} steps with {workers} loader workers: the sign of a starved worker pool (each "
                       f"worker takes longer than {k} steps to make a batch; more workers or cheaper batches help)")
    return text + f", periodic: every {k} steps" + (
        f" (the loader has {workers} workers)" if workers else "")


def iteration_line(label: str, step: int, nbatches: int, rate: float) -> str:
    """The periodic line: throughput over the steps since the previous one."""
    return f"BENCHY::{label}::Iteration {step}/{nbatches} Throughput: {rate:.3f}"


def summary_line(mode: Mode, est: Estimate) -> str:
    """One of the three parsed lines. No fake zero: one trial has no interval."""
    head = f"BENCHY::SUMMARY::{mode.value} average trial throughput:"
    if est.mean is None:
        return f"{head} n/a (no completed trial)"
    if est.half_width is None:
        return f"{head} {est.mean:.3f} +/- n/a (1 trial: no interval)"
    return f"{head} {est.mean:.3f} +/- {est.half_width:.3f}"


@dataclass(frozen=True)
class Verdict:
    """The reading of a run: its text and, for the JSON, how it was decided and from what."""

    text: str
    outcome: str  # data-loading, compute, balanced, undecided; "inconsistent: " before it when FULL is impossible
    record: Dict[str, Any]


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
        "value": _finite(c.ratio),
        "interval": None if c.low is None or c.high is None else [_finite(c.low), _finite(c.high)],
        "confidence": c.confidence,
        "t": None if c.t is None else _finite(c.t),
        "df": c.df,
        "p": c.p,
        "inputs": {a: [_finite(v) for v in a_values], b: [_finite(v) for v in b_values]},
    }


def decide(io: Sequence[float], synthetic: Sequence[float], full: Sequence[float],
           confidence: float = 0.95) -> Optional[Verdict]:
    """Which side limits training, from the trial throughputs of each mode (None without IO or SYNTHETIC).

    IO against SYNTHETIC is a ratio test on a log scale (:func:`compare_log`): decided when
    the interval of SYNTHETIC/IO (``confidence``, 95 % by default; 99 % when trials stop
    adaptively, see ``_plan``) excludes 1, balanced when the two means are within 5 %,
    undecided otherwise. FULL is then read against the slower of the two; FULL above it beyond
    the interval (and by more than 5 %) cannot be, and is named as an inconsistent measurement.
    """
    c = compare_log(io, synthetic, confidence)
    if c is None:
        return None
    io_mean, syn_mean = float(np.mean(io)), float(np.mean(synthetic))
    record: Dict[str, Any] = {"io_vs_synthetic": _comparison_record(c, "IO", "SYNTHETIC", io, synthetic)}
    close = abs(io_mean - syn_mean) <= BALANCE_TOLERANCE * max(io_mean, syn_mean)
    if close:
        outcome = "balanced"
        text = (f"balanced: data loading (IO {io_mean:.3f}) and compute (SYNTHETIC {syn_mean:.3f}) "
                f"are within 5 % of each other; speeding up one alone gains little")
    elif c.low is not None and c.high is not None and (c.low > 1.0 or c.high < 1.0):
        if c.low > 1.0:
            outcome = "data-loading"
            text = (f"data loading limits training: IO {io_mean:.3f} < SYNTHETIC {syn_mean:.3f} samples/s; "
                    f"compute could go {_x(c.ratio)} faster with faster loading ({_interval_text(c)})")
        else:
            outcome = "compute"
            text = (f"compute limits training: SYNTHETIC {syn_mean:.3f} < IO {io_mean:.3f} samples/s; "
                    f"the loader has {_x(1.0 / c.ratio)} headroom ({_percent(c.confidence)} interval {_x(1.0 / c.high)} to "
                    f"{_x(1.0 / c.low)})")
    else:
        outcome = "undecided"
        text = (f"undecided: SYNTHETIC/IO is {_x(c.ratio)}, but with {c.n_a} IO and {c.n_b} SYNTHETIC trials "
                f"({_interval_text(c)}) it may be 1; run more or longer trials (ntrials: auto runs them until "
                f"the answer is known) to tell which side limits training")
    record["outcome"] = outcome
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
        text = (f"inconsistent measurement: FULL {full_mean:.3f} is above {slower_name} {slower_mean:.3f} by more "
                f"than the intervals allow (FULL/{slower_name} {_interval_text(f)}), which cannot happen when both "
                f"are measured on the same footing. Likely causes: warm-up drift (the {first} trials ran in "
                f"slower epochs: set nwarmup: auto, or raise it), or loader workers prefetching across epochs "
                f"(FULL trials start with batches ready: make nbatches much larger than num_workers x "
                f"prefetch_factor). Do not read these numbers as a result. IO against SYNTHETIC alone: {text}")
        return Verdict(text, "inconsistent: " + outcome, record)
    if share >= 1.0:
        text += (f"; FULL {full_mean:.3f} matches the slower of the two within the intervals: loading and compute "
                 f"overlap fully")
        return Verdict(text, outcome, record)
    text += f"; FULL reaches {100.0 * share:.1f} % of the slower of the two"
    if share < OVERLAP_THRESHOLD:
        # Loading then computing one after the other gives IO*SYN/(IO+SYN).
        serial = io_mean * syn_mean / (io_mean + syn_mean)
        if full_mean >= serial / SERIAL_MARGIN:
            text += (f", about the {serial:.3f} of loading and computing one after the other: they do not "
                     f"overlap (loader workers or prefetching overlap them where cores or an accelerator are free)")
        else:
            text += (f", below even loading and computing one after the other ({serial:.3f}): "
                     "the real loop pays for something neither trial has "
                     "(host-to-device copies, contention between loader workers and the step)")
    return Verdict(text, outcome, record)


def verdict(results: RunResults, modes: Sequence[Mode], confidence: float = 0.95) -> Optional[Verdict]:
    """:func:`decide` over the counted trials of the scheduled modes."""
    if Mode.IO not in modes or Mode.SYNTHETIC not in modes:
        return None
    values = {m: [t.throughput for t in results.measured(m)] for m in Mode}
    return decide(values[Mode.IO], values[Mode.SYNTHETIC], values[Mode.FULL] if Mode.FULL in modes else [],
                  confidence)


def verdict_line(text: str) -> str:
    return f"BENCHY::SUMMARY::VERDICT {text}"


def straggler_text(results: RunResults, mode: Mode) -> Optional[str]:
    """The slowest rank of a mode, when it is more than 10 % slower than the median rank."""
    found = straggler(results.rank_mean_times(mode))
    if found is None:
        return None
    rank, slow, median = found
    return (f"{mode.value}: rank {rank} is {100.0 * (slow / median - 1.0):.1f} % slower than the median rank "
            f"(mean trial time {slow:.4f} s vs {median:.4f} s)")


def verdict_text(found: Verdict, clauses: Sequence[str] = ()) -> str:
    """The verdict, with what other measurements add (loader start-up ...)."""
    return "; ".join([found.text, *clauses])


def summary_lines(results: RunResults, modes: Sequence[Mode], confidence: float = 0.95,
                  workers: int = 0, startup: Optional[Startup] = None, clauses: Sequence[str] = (),
                  world: int = 1) -> List[str]:
    """The summary lines for the modes that were scheduled, FULL's data wait, each mode's step
    distribution, the loader's start-up, then stragglers and the verdict (with ``clauses``).
    ``workers``: the loader's ``num_workers``. With several ranks (``world``) the data wait, step,
    system and start-up lines are rank 0's own and say so."""
    own = " [rank 0]" if world > 1 else ""
    estimates = {mode: results.estimate(mode) for mode in modes}
    lines = [summary_line(mode, estimates[mode]) for mode in modes]
    if Mode.FULL in modes:
        wait = data_wait_line(results.data_wait())
        if wait is not None:
            lines.append(wait + own)
    for mode in modes:
        profile = step_profile(results.measured(mode))
        if profile is not None:
            lines.append(f"BENCHY::SUMMARY::STEPS {steps_text(mode, profile, workers)}{own}")
    for mode in modes:
        means = system_means(results.measured(mode))
        if means is not None:
            lines.append(f"BENCHY::SUMMARY::SYSTEM {system_text(mode, means)}{own}")
    if Mode.IO in modes:
        h2d = h2d_line(results)
        if h2d is not None:
            lines.append(h2d)
    if startup is not None:
        lines.append(f"BENCHY::SUMMARY::STARTUP {startup.text()}{own}")
    for mode in modes:
        text = straggler_text(results, mode)
        if text is not None:
            lines.append(f"BENCHY::SUMMARY::STRAGGLER {text}")
    found = verdict(results, modes, confidence)
    if found is not None:
        lines.append(verdict_line(verdict_text(found, clauses)))
    return lines


def _finite(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


STALE_AFTER_S = 60.0  # a write takes milliseconds: an older temporary file is a killed writer's


def remove_stale_temporaries(directory: str, now: Optional[float] = None) -> List[str]:
    """Delete benchy's own temporary files in ``directory`` left by a process killed mid-write.

    Only names benchy makes (``.benchy-*.json.tmp``, ``.benchy-*.npy.tmp``, ``.benchy-probe-*``)
    and only files older than a minute, so a run writing there at this moment keeps its file.
    """
    now = time.time() if now is None else now
    removed: List[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        ours = ((name.startswith(TEMP_PREFIX) and name.endswith((TEMP_SUFFIX, STEPS_TEMP_SUFFIX)))
                or name.startswith(PROBE_PREFIX))
        try:
            if ours and entry.is_file(follow_symlinks=False) and now - entry.stat().st_mtime > STALE_AFTER_S:
                os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed


def write_document(handle: IO[str], document: Mapping[str, Any]) -> None:
    """The document as indented JSON, each per-step list on one line, written piece by piece.

    Per-step lists are encoded apart by the json module's C encoder (the indenting encoder is
    pure Python, about 5 times slower) and written in place of a marker no value can hold, one
    trial at a time, so the whole text is never held in memory.
    """
    marker = f"\0benchy-per-step-{uuid.uuid4().hex}-"
    lists: List[Any] = []
    shallow: Dict[str, Any] = dict(document)
    for key, block in document.items():
        if isinstance(block, Mapping) and isinstance(block.get("rates"), list):
            block = dict(block)
            names = []
            for values in block["rates"]:
                names.append(f"{marker}{len(lists)}")
                lists.append(values)
            block["rates"] = names
            shallow[key] = block
    text = json.dumps(shallow, indent=1, allow_nan=False)
    # re.split with a group: text, index, text, index, ..., text
    parts = re.split(re.escape(json.dumps(marker)[:-1]) + r'([0-9]+)"', text) if lists else [text]
    for k, part in enumerate(parts):
        handle.write(json.dumps(lists[int(part)], allow_nan=False) if k % 2 else part)
    handle.write("\n")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give: mkstemp's files are private (0600)


def publish(tmp: str, path: str) -> None:
    """Give a finished temporary file the usual permissions and rename it to ``path`` (atomic)."""
    os.chmod(tmp, _FILE_MODE)
    os.replace(tmp, path)


def write_atomic(path: str, write: Callable[[IO[Any]], None], *, binary: bool = False,
                 suffix: str = TEMP_SUFFIX) -> None:
    """Write ``path`` through ``write(handle)`` into a temporary file in the same directory, then
    rename it into place; on any failure the temporary file is removed and the old ``path`` stays."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=suffix, dir=directory)
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            write(handle)
        publish(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json_atomic(path: str, document: Mapping[str, Any]) -> None:
    """Write ``document`` to ``path`` via a temporary file in the same directory and a rename."""
    write_atomic(path, lambda handle: write_document(handle, document))
