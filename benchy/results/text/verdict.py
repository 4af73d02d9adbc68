"""The verdict in words, from the values of :mod:`benchy.core.verdict`, followed by what the other measurements add
(:mod:`benchy.core.claims`, each in its own words; no torch); every output says it through :func:`verdict_line`."""

from __future__ import annotations

from typing import Optional

from ...core.claims import MoreTrials
from ...core.claims import busy_trials as busy_trials
from ...core.stats import Comparison
from ...core.verdict import Full, Outcome, Overlap, Reading, Verdict, balanced_bounds
from .numbers import percent, ratio


def more_trials(more: MoreTrials) -> str:
    """The advice of an undecided verdict."""
    if not more.finished:
        steps = f"; a decision would likely take about {more.likely} more steps" if more.likely is not None else ""
        return f"let the schedule run on (the warning above says how) for more trials{steps}"
    if more.auto:
        return f"raise global.auto_max_trials (now {more.max_trials}) or nbatches for more or longer trials"
    return "run more or longer trials (ntrials: auto runs them until the answer is known)"


def interval(c: Comparison) -> str:
    """``95 % interval 1.20x to 1.48x``, or why there is none."""
    if c.low is None or c.high is None:
        return "no interval with one trial a side"
    return f"{percent(c.confidence)} interval {ratio(c.low)} to {ratio(c.high)}"


def _io_vs_synthetic(v: Verdict) -> str:
    c, io_mean, syn_mean = v.comparison, v.io_mean, v.synthetic_mean
    low_ok, high_ok = balanced_bounds()
    if v.outcome is Outcome.BALANCED:
        return (
            f"balanced: data loading (IO {io_mean:.3f}) and compute (SYNTHETIC {syn_mean:.3f} samples/s) are "
            f"within 5 % of each other (SYNTHETIC/IO {ratio(c.ratio)}, {interval(c)}); speeding up one alone "
            f"gains little"
        )
    if v.outcome is Outcome.DATA_LOADING:
        return (
            f"data loading limits training: IO {io_mean:.3f} < SYNTHETIC {syn_mean:.3f} samples/s; "
            f"compute could go {ratio(c.ratio)} faster with faster loading ({interval(c)})"
        )
    if v.outcome is Outcome.COMPUTE:
        assert c.low is not None and c.high is not None
        return (
            f"compute limits training: SYNTHETIC {syn_mean:.3f} < IO {io_mean:.3f} samples/s; "
            f"the loader has {ratio(1.0 / c.ratio)} headroom ({percent(c.confidence)} interval {ratio(1.0 / c.high)} to "
            f"{ratio(1.0 / c.low)})"
        )
    if low_ok <= c.ratio <= high_ok:
        return (
            f"undecided: SYNTHETIC/IO is {ratio(c.ratio)}, within 5 % of balanced, but with {c.n_a} IO and {c.n_b} "
            f"SYNTHETIC trials ({interval(c)}) the two may still differ by more; balanced needs the "
            f"interval inside {ratio(low_ok)} to {ratio(high_ok)}: {more_trials(v.more)}"
        )
    return (
        f"undecided: SYNTHETIC/IO is {ratio(c.ratio)}, but with {c.n_a} IO and {c.n_b} SYNTHETIC trials "
        f"({interval(c)}) the two may be within 5 % of each other; {more_trials(v.more)} to tell which side "
        f"limits training"
    )


def _full(f: Full, text: str) -> str:
    if f.overlap is Overlap.INCONSISTENT:
        assert f.comparison is not None
        return (
            f"inconsistent measurement: FULL {f.mean:.3f} is above {f.slower} {f.slower_mean:.3f} samples/s by more "
            f"than the intervals allow (FULL/{f.slower} {interval(f.comparison)}), which cannot happen when both "
            f"are measured on the same footing. Likely causes: warm-up drift (the {f.slower} trials ran in "
            f"slower epochs: set nwarmup: auto, or raise it), or loader workers prefetching across epochs "
            f"(FULL trials start with batches ready: make nbatches much larger than num_workers x "
            f"prefetch_factor). Do not read these numbers as a result. IO against SYNTHETIC alone: {text}"
        )
    if f.overlap is Overlap.FULL:
        return text + (
            f"; FULL {f.mean:.3f} samples/s matches the slower of the two within the intervals: loading and compute overlap fully"
        )
    text += f"; FULL reaches {100.0 * f.share:.1f} % of the slower of the two"
    if f.overlap is Overlap.SERIAL:
        text += (
            f", about the {f.serial:.3f} samples/s of loading and computing one after the other: they do not "
            f"overlap (loader workers or prefetching overlap them where cores or an accelerator are free)"
        )
    elif f.overlap is Overlap.BELOW_SERIAL:
        text += (
            f", below even loading and computing one after the other ({f.serial:.3f} samples/s): "
            "the real loop pays for something neither trial has "
            "(host-to-device copies, each new batch cold in the caches where SYNTHETIC reuses one, "
            "contention between loader workers and the step)"
        )
    return text


def verdict(v: Verdict) -> str:
    """IO against SYNTHETIC, then FULL against the slower of the two."""
    text = _io_vs_synthetic(v)
    return text if v.full is None else _full(v.full, text)


def verdict_line(reading: Reading) -> Optional[str]:
    """The verdict with what the other measurements add, advice last (None without a verdict)."""
    if reading.verdict is None:
        return None
    return "; ".join([verdict(reading.verdict), *(c.words() for c in reading.claims)])
