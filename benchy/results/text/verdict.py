"""The verdict in words, from the values of :mod:`benchy.core.verdict` and :mod:`benchy.core.claims` (no torch);
every output says it through :func:`verdict_line`."""

from __future__ import annotations

from typing import Optional, Sequence

from ...core.claims import (
    Advice,
    Busy,
    Cause,
    Claim,
    Contended,
    Copies,
    DataWait,
    Feed,
    Help,
    LoaderCause,
    Mfu,
    MoreTrials,
    Padding,
    StagesFound,
    StartupCost,
    Starved,
)
from ...core.compute import ComputeReport
from ...core.results import TrialResult
from ...core.schedule import Mode
from ...core.stages import HOL_SHARE, StageReport
from ...core.stats import Comparison
from ...core.sweep import FEEDS, SettingResult
from ...core.verdict import Full, Outcome, Overlap, Reading, Verdict, balanced_bounds
from .numbers import flops_rate, percent, ratio, spread
from .reports import peak_basis, stage_fix, stage_name

# --- how to get more trials -----------------------------------------------------------------------


def more_trials(more: MoreTrials) -> str:
    """The advice of an undecided verdict."""
    if not more.finished:
        steps = f"; a decision would likely take about {more.likely} more steps" if more.likely is not None else ""
        return f"let the schedule run on (the warning above says how) for more trials{steps}"
    if more.auto:
        return f"raise global.auto_max_trials (now {more.max_trials}) or nbatches for more or longer trials"
    return "run more or longer trials (ntrials: auto runs them until the answer is known)"


def outweigh(more: MoreTrials) -> str:
    """What makes trials on a busy machine count for less."""
    if more.auto:
        return (
            f"rerun on a quiet machine, or raise global.auto_max_trials (now {more.max_trials}) so that more trials outweigh them"
        )
    if not more.finished:
        return "rerun on a quiet machine"
    return "rerun on a quiet machine, or with ntrials: auto so that more trials outweigh them"


# --- the verdict ----------------------------------------------------------------------------------


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
    return "; ".join([verdict(reading.verdict), *(claim(c) for c in reading.claims)])


# --- what the other measurements add ---------------------------------------------------------------


def busy_trials(found: Sequence[TrialResult]) -> str:
    """``1.84 of 2 cores busy during SYNTHETIC_1, 0.91 of 2 during FULL_2``: what other processes took."""
    parts = [
        f"{t.system.other_cores_busy or 0.0:.2f} of {t.system.cpu_cores or 0:g}{' cores busy' if not k else ''} during {t.label}"
        for k, t in enumerate(found)
        if t.system is not None
    ]
    return ", ".join(parts)


def _mfu(report: ComputeReport, near: bool) -> str:
    mfu = report.mfu(Mode.SYNTHETIC)
    assert mfu is not None and report.peak is not None
    per = " a device" if report.world > 1 else ""
    head = f"the step runs at {100 * mfu:.0f} % of the peak ({flops_rate(report.peak.flops)}{per}; {peak_basis(report.peak)})"
    return head + (": the step is near what the accelerator does" if near else ": the step has headroom")


def _cause(c: LoaderCause) -> str:
    kept = (
        f"{c.busy:.2f} of {c.cores:g} cores busy"
        if c.other < 0.1
        else f"{c.busy:.2f} cores busy of the {c.free:.2f} that other processes left free"
    )
    if c.cause is Cause.CPU_BOUND:
        return (
            f"the loader is CPU-bound: IO trials kept {kept} ({100 * c.util:.0f} %), so "
            f"decoding and augmentation need more CPU than there is and more workers than cores will not help "
            f"(cheaper transforms, smaller or pre-decoded samples, or decoding on the accelerator)"
        )
    if c.cause is Cause.IN_PROCESS:
        return (
            f"the loading runs in the training process (num_workers = 0) and keeps its core busy (IO trials kept "
            f"{c.busy:.2f} cores busy of the {c.free:.2f} free), in series with the step: loader workers would make "
            f"samples beside the step on the other {c.free - 1:.2f} cores"
        )
    if c.cause is Cause.WORKERS_CPU_BOUND:
        return (
            f"the loader's workers are CPU-bound: IO trials kept {c.busy:.2f} cores busy with num_workers = "
            f"{c.workers} of {c.cores:g} cores, so more workers (up to {c.cores:g}) should feed the step faster"
        )
    if c.cause is Cause.STORAGE:
        return (
            f"the storage looks like the limit: IO trials read {c.reads:.1f} MB/s with the CPU {100 * c.util:.0f} % "
            f"busy (faster or local storage, caching, or larger sequential reads)"
        )
    return (
        f"the loader is neither CPU- nor storage-bound here (CPU {100 * c.util:.0f} % busy, storage reads "
        f"{c.reads:.1f} MB/s): it waits on something else (network storage, a remote service, sleeps or "
        f"locks) with too few workers to overlap the waits (num_workers = {c.workers}; with the CPU idle, "
        f"more workers than cores can help)"
    )


def _stages(report: StageReport, saturated: bool) -> str:
    """What the stage trials add to the verdict: the largest stage, a slow worker, head-of-line waits."""
    top = report.largest
    basis = "the workers' time" if top is not None and top.where == "workers" and report.workers else "the IO period"
    out = (
        "the stage trials find no stage"
        if top is None
        else f"the stage trials put the largest share of the loader's work in {stage_name(top)} "
        f"({100 * top.share:.0f} % of {basis})"
    )
    slow = report.straggler
    if slow is not None:
        out += f"; worker {slow.worker} takes {slow.ratio:.1f}x the others' time a batch (a slow worker holds up the rest)"
    if report.hol_share >= HOL_SHARE:
        out += (
            f"; for {100 * report.hol_share:.1f} % of the time the loop waited for a batch while a later one "
            f"was ready and a worker sat idle (head-of-line blocking)"
        )
    if saturated:
        out += "; with the cores saturated, that time off the CPU is time waiting for a core, not for storage or the network"
    return out


def _startup(c: StartupCost) -> str:
    s = c.startup
    text = (
        f"each epoch also starts the loader ({s.extra:.3f} s more than a batch, "
        f"{100.0 * (s.share or 0.0):.1f} % of an epoch at the FULL rate, not in the trials' throughputs)"
    )
    if s.restarts_workers:
        text += ": persistent_workers=True keeps the workers between epochs"
    return text


def _feed(f: Feed) -> str:
    found, synthetic = f.found, f.synthetic
    if found is None:
        top = f.best
        return (
            f"none of the swept loader settings feeds the step (IO at least {FEEDS:g}x SYNTHETIC "
            f"{synthetic:.3f}): the best, {top.setting.words()}, reaches {top.estimate.mean / synthetic:.2f}x; "
            f"it takes more workers than were swept (where cores are free) or cheaper samples"
        )
    est = found.estimate
    return (
        f"the cheapest swept loader setting that feeds the step (IO at least {FEEDS:g}x SYNTHETIC) is "
        f"{found.setting.words()} ({spread(est.mean, est.half_width)} samples/s, {(est.mean or 0.0) / synthetic:.2f}x)"
    )


def _contended(c: Contended) -> str:
    return (
        f"FULL {c.full:.1f} is below both IO and SYNTHETIC: beside the loader the step takes {100 * c.share:.0f} % longer "
        f"than alone ({1e3 * c.step:.3f} ms against {1e3 * c.alone:.3f} ms; the workers and the step share the cores, "
        f"the GIL or the memory bandwidth)"
    )


def advice(a: Advice) -> str:
    """The one change most likely to help (without the words that introduce it)."""
    if a.help is Help.STAGE:
        return stage_fix(a.detail)
    if a.help is Help.SWEPT:
        found: SettingResult = a.detail[0]
        synthetic: float = a.detail[1]
        times = (found.estimate.mean or 0.0) / synthetic
        return f"the loader setting {found.setting.words()} (the sweep measured IO at {times:.2f}x SYNTHETIC)"
    return a.help.words.format(workers=a.detail)


def claim(c: Claim) -> str:
    """One claim of the verdict line."""
    if isinstance(c, Busy):
        return (
            f"{len(c.trials)} of the {c.total} trials it rests on ran on a busy machine (other processes kept "
            f"{busy_trials(c.trials)}): their throughputs are likely low, so {outweigh(c.more)}"
        )
    if isinstance(c, Mfu):
        return _mfu(c.report, c.near)
    if isinstance(c, Padding):
        return f"{100 * c.share:.0f} % of the token positions in {c.mode} are padding: the step computes on them for nothing"
    if isinstance(c, DataWait):
        return f"FULL spends {100.0 * c.share:.1f} % of its time waiting for the loader"
    if isinstance(c, LoaderCause):
        return _cause(c)
    if isinstance(c, StagesFound):
        return _stages(c.report, c.saturated)
    if isinstance(c, Starved):
        return (
            f"FULL stalls every {c.workers} steps ({c.stalls} stalls, {100.0 * c.share:.1f} % of its time): a starved worker pool"
        )
    if isinstance(c, Copies):
        text = (
            f"copying each batch to {c.device} lowers the loader's rate to {c.mean:.3f} samples/s, "
            f"{100.0 * c.mean / c.io:.0f} % of IO"
        )
        if c.limits:
            text += ", below SYNTHETIC: the copies, not the loader, limit training"
        return text + " (pin_memory=True and non_blocking copies let them overlap the step)"
    if isinstance(c, StartupCost):
        return _startup(c)
    if isinstance(c, Feed):
        return _feed(c)
    if isinstance(c, Contended):
        return _contended(c)
    return f"most likely to help: {advice(c)}"
