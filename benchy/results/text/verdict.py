"""The verdict in words, from the values of :mod:`benchy.core.verdict`, the answer first, then what the other
measurements add (:mod:`benchy.core.claims`, each in its own words; no torch): the summary lines say it through
:func:`verdict_lines`, the JSON and the HTML report through :func:`verdict_line`."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ...core.claims import Advice, MoreTrials
from ...core.stats import Comparison
from ...core.verdict import Full, Outcome, Overlap, Reading, Verdict, balanced_bounds
from ...core.words import with_grounds
from .. import lines
from .numbers import percent, ratio

HELPS = "most likely to help"  # names the change in the VERDICT line, as the advice's own words do in ADVICE


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


def head(v: Verdict) -> str:
    """The answer: the side, by how much and its interval (undecided: why not yet)."""
    c, io_mean, syn_mean = v.comparison, v.io_mean, v.synthetic_mean
    low_ok, high_ok = balanced_bounds()
    if v.outcome is Outcome.BALANCED:
        return (
            f"balanced: IO {io_mean:.3f} and SYNTHETIC {syn_mean:.3f} samples/s are within 5 % ({ratio(c.ratio)}, "
            f"{interval(c)}): speeding up one gains little"
        )
    if v.outcome is Outcome.DATA_LOADING:
        return (
            f"data loading limits training: IO {io_mean:.3f} < SYNTHETIC {syn_mean:.3f} samples/s; compute could go "
            f"{ratio(c.ratio)} faster ({interval(c)})"
        )
    if v.outcome is Outcome.COMPUTE:
        assert c.low is not None and c.high is not None
        return (
            f"compute limits training: SYNTHETIC {syn_mean:.3f} < IO {io_mean:.3f} samples/s; the loader has "
            f"{ratio(1.0 / c.ratio)} headroom ({percent(c.confidence)} interval {ratio(1.0 / c.high)} to {ratio(1.0 / c.low)})"
        )
    trials = f"{c.n_a} IO and {c.n_b} SYNTHETIC trials"
    if low_ok <= c.ratio <= high_ok:
        return (
            f"undecided: SYNTHETIC/IO is {ratio(c.ratio)}, within 5 % of balanced, but its {interval(c)} ({trials}) "
            f"is not inside {ratio(low_ok)} to {ratio(high_ok)}"
        )
    return (
        f"undecided: SYNTHETIC/IO is {ratio(c.ratio)}, but with {trials} ({interval(c)}) the two may be within 5 % of each other"
    )


def overlap(f: Full) -> List[str]:
    """FULL against the slower side, each claim apart (inconsistent: why the numbers are not to be read)."""
    if f.overlap is Overlap.INCONSISTENT:
        assert f.comparison is not None
        return [
            f"FULL/{f.slower} {interval(f.comparison)}: FULL cannot be faster than a side when both are measured on the "
            f"same footing",
            f"likely causes: warm-up drift (the {f.slower} trials ran in slower epochs: set nwarmup: auto, or raise it), "
            f"or loader workers prefetching across epochs (FULL trials start with batches ready: make nbatches much "
            f"larger than num_workers x prefetch_factor)",
        ]
    if f.overlap is Overlap.FULL:
        return [f"FULL {f.mean:.3f} samples/s matches the slower side within the intervals: loading and compute overlap fully"]
    text = f"FULL reaches {100.0 * f.share:.1f} % of the slower of the two"
    if f.overlap is Overlap.SERIAL:
        return [
            f"{text}, about the {f.serial:.3f} samples/s of loading and computing one after the other: they do not overlap",
            "loader workers or prefetching let them overlap where cores or an accelerator are free",
        ]
    elif f.overlap is Overlap.BELOW_SERIAL:
        return [
            f"{text}, below even loading and computing one after the other ({f.serial:.3f} samples/s)",
            "the real loop pays for something neither trial has (host-to-device copies, new batches cold in the "
            "caches, contention between loader workers and the step)",
        ]
    return [text]


def _said(v: Verdict) -> Tuple[str, List[str]]:
    """The answer and FULL's lines: an inconsistent FULL puts the IO-against-SYNTHETIC reading among the latter."""
    f = v.full
    if f is None:
        return head(v), []
    if f.overlap is Overlap.INCONSISTENT:
        answer = (
            f"inconsistent measurement: FULL {f.mean:.3f} is above {f.slower} {f.slower_mean:.3f} samples/s by more than "
            f"the intervals allow: do not read these numbers as a result"
        )
        return answer, [*overlap(f), f"IO against SYNTHETIC alone: {head(v)}"]
    return head(v), overlap(f)


def verdict_lines(reading: Reading) -> List[Tuple[str, str]]:
    """The verdict as (summary word, text) lines, the answer first: VERDICT (the side, by how much, its interval, and
    the change most likely to help where the line has room), OVERLAP (FULL), a WHY per claim, ADVICE (the change and
    its grounds; an undecided verdict's: more trials). Empty without a verdict."""
    v = reading.verdict
    if v is None:
        return []
    answer, full = _said(v)
    advice = next((c for c in reading.claims if isinstance(c, Advice)), None)
    if advice is not None:
        change, said = advice.change(), advice.words()
    elif v.outcome is Outcome.UNDECIDED:
        change, said = "more trials", f"{HELPS}: {with_grounds('more trials', more_trials(v.more))}"
    else:
        change, said = "", ""
    tail = f"; {HELPS}: {change}"
    fits = len(lines.summary_text("VERDICT", answer + tail)) <= lines.MAX_LINE
    out = [("VERDICT", answer + tail if change and fits else answer)]
    out += [("OVERLAP", text) for text in full]
    out += [("WHY", c.words()) for c in reading.claims if not isinstance(c, Advice)]
    return out + ([("ADVICE", said)] if said else [])


def verdict(v: Verdict) -> str:
    """The verdict alone in one text (no claims): the answer, FULL's lines, what would decide an undecided one."""
    answer, full = _said(v)
    return "; ".join([answer, *full, *([more_trials(v.more)] if v.outcome is Outcome.UNDECIDED else [])])


def verdict_line(reading: Reading) -> Optional[str]:
    """The whole verdict in one text (the JSON's and the HTML report's): its lines' texts joined; None without one."""
    said = verdict_lines(reading)
    return "; ".join(text for _, text in said) if said else None
