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
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._dist import straggler
from ._results import RunResults, TrialResult
from ._schedule import Mode
from ._stats import Estimate

__all__ = [
    "SCHEMA_VERSION",
    "iteration_line",
    "result_document",
    "summary_line",
    "summary_lines",
    "trial_line",
    "verdict_line",
    "write_json_atomic",
]

SCHEMA_VERSION = 1

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


def _overlap(a: Estimate, b: Estimate) -> bool:
    assert a.mean is not None and b.mean is not None
    return abs(a.mean - b.mean) <= (a.half_width or 0.0) + (b.half_width or 0.0)


def verdict(io: Optional[Estimate], synthetic: Optional[Estimate], full: Optional[Estimate]) -> Optional[str]:
    """Which side limits training, from the three estimates; None when IO or SYNTHETIC is missing."""
    if io is None or synthetic is None or io.mean is None or synthetic.mean is None:
        return None
    slower = min(io.mean, synthetic.mean)
    close = abs(io.mean - synthetic.mean) <= BALANCE_TOLERANCE * max(io.mean, synthetic.mean)
    if close:
        text = (f"balanced: data loading (IO {io.mean:.3f}) and compute (SYNTHETIC {synthetic.mean:.3f}) "
                f"are within 5 % of each other; speeding up one alone gains little")
    elif _overlap(io, synthetic):
        text = (f"undecided: the intervals of IO {io.mean:.3f} and SYNTHETIC {synthetic.mean:.3f} overlap; "
                f"run more or longer trials (ntrials, nbatches) to tell which side limits training")
    elif io.mean < synthetic.mean:
        text = (f"data loading limits training: IO {io.mean:.3f} < SYNTHETIC {synthetic.mean:.3f} samples/s; "
                f"compute could go {synthetic.mean / io.mean:.2f}x faster with faster loading")
    else:
        text = (f"compute limits training: SYNTHETIC {synthetic.mean:.3f} < IO {io.mean:.3f} samples/s; "
                f"the loader has {io.mean / synthetic.mean:.2f}x headroom")
    if full is not None and full.mean is not None and slower > 0:
        share = full.mean / slower
        text += f"; FULL reaches {100.0 * share:.1f} % of the slower of the two"
        if share < OVERLAP_THRESHOLD:
            # Loading then computing one after the other gives IO*SYN/(IO+SYN).
            serial = io.mean * synthetic.mean / (io.mean + synthetic.mean)
            if full.mean >= serial / SERIAL_MARGIN:
                text += (f", about the {serial:.3f} of loading and computing one after the other: they do not "
                         f"overlap (loader workers or prefetching overlap them where cores or an accelerator are free)")
            else:
                text += (f", below even loading and computing one after the other ({serial:.3f}): "
                         "the real loop pays for something neither trial has "
                         "(host-to-device copies, contention between loader workers and the step)")
    return text


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


def summary_lines(results: RunResults, modes: Sequence[Mode]) -> List[str]:
    """The summary lines for the modes that were scheduled, then stragglers and the verdict."""
    estimates = {mode: results.estimate(mode) for mode in modes}
    lines = [summary_line(mode, estimates[mode]) for mode in modes]
    for mode in modes:
        text = straggler_text(results, mode)
        if text is not None:
            lines.append(f"BENCHY::SUMMARY::STRAGGLER {text}")
    text = verdict(estimates.get(Mode.IO), estimates.get(Mode.SYNTHETIC), estimates.get(Mode.FULL))
    if text is not None:
        lines.append(verdict_line(text))
    return lines


def _finite(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _mode_block(results: RunResults, mode: Mode) -> Dict[str, Any]:
    trials = results.measured(mode)
    est = results.estimate(mode)
    warm = results.warmups(mode)
    block: Dict[str, Any] = {
        # The original's keys, one entry per counted trial.
        "rates": [[_finite(r) for r in t.step_rates] for t in trials],
        "avg_iter_throughput": [
            _finite(sum(t.step_rates) / len(t.step_rates)) if t.step_rates else None for t in trials
        ],
        "trial_throughput": [_finite(t.throughput) for t in trials],
        "trial_time": [t.seconds for t in trials],
        # Ours.
        "trial_samples": [t.samples for t in trials],
        "nbatches": [len(t.step_seconds) for t in trials],
        "mean": est.mean,
        "interval": est.half_width,
        "confidence": est.confidence,
        "n": est.n,
        "warmup": {
            "trial_throughput": [_finite(t.throughput) for t in warm],
            "trial_time": [t.seconds for t in warm],
            "trial_samples": [t.samples for t in warm],
        },
    }
    if any(t.rank_seconds for t in trials):
        block["ranks"] = {
            # One list per counted trial, one entry per rank.
            "trial_throughput": [[_finite(r) for r in t.rank_throughputs] for t in trials],
            "trial_time": [list(t.rank_seconds) for t in trials],
            "trial_samples": [list(t.rank_samples) for t in trials],
            # (slowest - fastest) / fastest rank's trial time, per trial.
            "spread": [(max(t.rank_seconds) - min(t.rank_seconds)) / min(t.rank_seconds)
                       if min(t.rank_seconds) > 0 else None for t in trials],
            "mean_trial_time": results.rank_mean_times(mode),
            "straggler": straggler_text(results, mode),
        }
    return block


def result_document(
    results: RunResults,
    modes: Sequence[Mode],
    *,
    config: Mapping[str, Any],
    environment: Mapping[str, Any],
    nranks: int,
    complete: bool,
    epochs_needed: int,
    epochs_started: int,
    profiler: Optional[Mapping[str, Any]] = None,
    exit_status: Optional[int] = None,
    extras: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The JSON document: the original's keys plus schema version, config, environment, status.

    ``complete`` is true only when every scheduled trial counted; ``exit_status`` is the status
    benchy exits with under ``exit_after_tests`` (0, or 3 when a mode has no counted trial), or
    None when benchy does not end the process (checkpoints, partial runs, transparent mode).
    ``extras`` may hold ``synthetic_batch_samples`` (stored as ``SYNTHETIC.batch_samples``) and
    further top-level keys (``counting``, ``other_loaders``).
    """
    estimates = {mode: results.estimate(mode) for mode in modes}
    extra = dict(extras or {})
    synthetic_batch = extra.pop("synthetic_batch_samples", None)
    doc: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "complete": complete,
        "exit_status": exit_status,
        "nranks": nranks,
        "epochs_needed": epochs_needed,
        "epochs_started": epochs_started,
        "interrupted": [
            {"trial": i.spec.label, "batches_done": i.batches_done, "nbatches": i.spec.nbatches, "reason": i.reason}
            for i in results.interruptions
        ],
        "verdict": verdict(estimates.get(Mode.IO), estimates.get(Mode.SYNTHETIC), estimates.get(Mode.FULL)),
        "config": dict(config),
        "environment": dict(environment),
        "profiler": dict(profiler or {}),
    }
    doc.update(extra)
    for mode in modes:
        doc[mode.value] = _mode_block(results, mode)
    if Mode.SYNTHETIC in modes:
        # The one cached batch every SYNTHETIC warm-up and trial yields (None until fetched).
        doc[Mode.SYNTHETIC.value]["batch_samples"] = synthetic_batch
    return doc


def write_json_atomic(path: str, document: Mapping[str, Any]) -> None:
    """Write ``document`` to ``path`` via a temporary file in the same directory and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".benchy-", suffix=".json.tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
