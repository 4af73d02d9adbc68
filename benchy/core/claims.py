"""What the measurements add to a verdict, as values that say themselves (pure, no torch):
:func:`benchy.core.verdict.diagnosis` returns them in the order the verdict line says them (each one's :meth:`words`),
the advice last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from .schedule import Mode
from .stages import HOL_SHARE
from .words import Worded, flops_rate, spread, with_grounds

FEEDS = 1.1  # IO at least 1.1x SYNTHETIC: enough to feed the step


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

    def words(self) -> str:
        more = self.more
        if more.auto:
            outweigh = (
                f"rerun on a quiet machine, or raise global.auto_max_trials (now {more.max_trials}) so that more trials "
                f"outweigh them"
            )
        elif not more.finished:
            outweigh = "rerun on a quiet machine"
        else:
            outweigh = "rerun on a quiet machine, or with ntrials: auto so that more trials outweigh them"
        return (
            f"{len(self.trials)} of the {self.total} trials it rests on ran on a busy machine (other processes kept "
            f"{BusyTrials(self.trials).words()}): their throughputs are likely low; {outweigh}"
        )


BUSY_LISTED = 3  # busy trials named one by one; more are summarised


@dataclass(frozen=True)
class BusyTrials:
    """Trials that ran on a busy machine (TrialResults), for their words: what other processes took."""

    trials: Tuple[Any, ...]

    def words(self) -> str:
        """``1.84 of 2 cores busy during SYNTHETIC_1, 0.91 of 2 during FULL_2``; past :data:`BUSY_LISTED` trials, the
        range, the first trial and the last."""
        sampled = [t for t in self.trials if t.system is not None]
        if len(sampled) > BUSY_LISTED:
            busy = sorted(t.system.other_cores_busy or 0.0 for t in sampled)
            return (
                f"{busy[0]:.2f} to {busy[-1]:.2f} of {sampled[0].system.cpu_cores or 0:g} cores busy during "
                f"{sampled[0].label} ... {sampled[-1].label}"
            )
        return ", ".join(
            f"{t.system.other_cores_busy or 0.0:.2f} of {t.system.cpu_cores or 0:g}{' cores busy' if not k else ''} "
            f"during {t.label}"
            for k, t in enumerate(sampled)
        )


@dataclass(frozen=True)
class Mfu:
    """A compute-limited step's MFU (``report``: the ComputeReport), near the peak or with headroom."""

    report: Any
    near: bool

    def words(self) -> str:
        report = self.report
        mfu = report.mfu(Mode.SYNTHETIC)
        assert mfu is not None and report.peak is not None
        per = " a device" if report.world > 1 else ""
        head = f"the step runs at {100 * mfu:.0f} % of the peak ({flops_rate(report.peak.flops)}{per}; {report.peak.words()})"
        return head + (": the step is near what the accelerator does" if self.near else ": the step has headroom")


@dataclass(frozen=True)
class Padding:
    mode: str
    share: float

    def words(self) -> str:
        return (
            f"{100 * self.share:.0f} % of the token positions in {self.mode} are padding: the step computes on them for nothing"
        )


@dataclass(frozen=True)
class DataWait:
    share: float

    def words(self) -> str:
        return f"FULL spends {100.0 * self.share:.1f} % of its time waiting for the loader"


class Cause(Worded):
    """Why the loader is slow, from the IO trials' system metrics; its words take :class:`LoaderCause`'s figures."""

    CPU_BOUND = (  # the cores are saturated
        "cpu-bound",
        "the loader is CPU-bound: IO trials kept {kept} ({util:.0f} %); decoding and augmentation need more CPU than "
        "there is, and more workers than cores will not help",
    )
    IN_PROCESS = (  # no workers, the loading keeps its core busy, cores free
        "in-process",
        "the loading runs in the training process (num_workers = 0) and keeps its core busy (IO trials kept "
        "{busy:.2f} cores busy of the {free:.2f} free), in series with the step: loader workers would make "
        "samples beside the step on the other {spare:.2f} cores",
    )
    WORKERS_CPU_BOUND = (  # the workers fill their cores, more cores are free
        "workers-cpu-bound",
        "the loader's workers are CPU-bound: IO trials kept {busy:.2f} cores busy with num_workers = "
        "{workers} of {cores:g} cores, so more workers (up to {cores:g}) should feed the step faster",
    )
    STORAGE = (  # the CPU idle, storage reads high
        "storage",
        "the storage looks like the limit: IO trials read {reads:.1f} MB/s with the CPU {util:.0f} % "
        "busy (faster or local storage, caching, or larger sequential reads)",
    )
    WAITS = (  # neither: it waits on something else
        "waits",
        "the loader is neither CPU- nor storage-bound here (CPU {util:.0f} % busy, storage reads "
        "{reads:.1f} MB/s): it waits on something else (network storage, a remote service, sleeps or "
        "locks) with too few workers to overlap the waits (num_workers = {workers}; with the CPU idle, "
        "more workers than cores can help)",
    )


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

    def words(self) -> str:
        kept = (
            f"{self.busy:.2f} of {self.cores:g} cores busy"
            if self.other < 0.1
            else f"{self.busy:.2f} cores busy of the {self.free:.2f} that other processes left free"
        )
        return self.cause.words.format(
            kept=kept,
            busy=self.busy,
            cores=self.cores,
            free=self.free,
            spare=self.free - 1,
            util=100 * self.util,
            reads=self.reads,
            workers=self.workers,
        )


@dataclass(frozen=True)
class StagesFound:
    """What the stage trials add (``report``: the StageReport); ``saturated``: the cores are saturated and the largest
    stage waits off the CPU (that time is a wait for a core)."""

    report: Any
    saturated: bool = False

    def words(self) -> str:
        """The largest stage, a slow worker, head-of-line waits."""
        report = self.report
        top = report.largest
        basis = "the workers' time" if top is not None and top.where == "workers" and report.workers else "the IO period"
        out = (
            "the stage trials find no stage"
            if top is None
            else f"the stage trials put the largest share of the loader's work in {top.name} ({100 * top.share:.0f} % of {basis})"
        )
        slow = report.straggler
        if slow is not None:
            out += f"; worker {slow.worker} takes {slow.ratio:.1f}x the others' time a batch (a slow worker holds up the rest)"
        if report.hol_share >= HOL_SHARE:
            out += (
                f"; for {100 * report.hol_share:.1f} % of the time the loop waited for a batch while a later one "
                f"was ready and a worker sat idle (head-of-line blocking)"
            )
        if self.saturated:
            out += "; with the cores saturated, that time off the CPU is time waiting for a core, not for storage or the network"
        return out


@dataclass(frozen=True)
class Starved:
    workers: int
    stalls: int
    share: float

    def words(self) -> str:
        return (
            f"FULL stalls every {self.workers} steps ({self.stalls} stalls, {100.0 * self.share:.1f} % of its time): a "
            f"starved worker pool"
        )


@dataclass(frozen=True)
class Copies:
    """Host-to-device copies that cost the loader: its rate with them (``mean``) against IO's, to ``device``;
    ``limits``: below SYNTHETIC too."""

    mean: float
    io: float
    device: str
    limits: bool

    def words(self) -> str:
        text = (
            f"copying each batch to {self.device} lowers the loader's rate to {self.mean:.3f} samples/s, "
            f"{100.0 * self.mean / self.io:.0f} % of IO"
        )
        if self.limits:
            text += ", below SYNTHETIC: the copies, not the loader, limit training"
        return text + " (pin_memory=True and non_blocking copies let them overlap the step)"


@dataclass(frozen=True)
class StartupCost:
    """A loader start-up that costs more than its share of an epoch (``startup``: the Startup)."""

    startup: Any

    def words(self) -> str:
        s = self.startup
        text = (
            f"each epoch also starts the loader ({s.extra:.3f} s more than a batch, "
            f"{100.0 * (s.share or 0.0):.1f} % of an epoch at the FULL rate, not in the trials' throughputs)"
        )
        if s.restarts_workers:
            text += ": persistent_workers=True keeps the workers between epochs"
        return text


@dataclass(frozen=True)
class Feed:
    """What a loader sweep adds: the cheapest swept setting that feeds the step (``found``, a SettingResult), or the
    best (``best``) when none does; ``synthetic``: SYNTHETIC's mean."""

    found: Any
    best: Any
    synthetic: float

    def words(self) -> str:
        found, synthetic = self.found, self.synthetic
        if found is None:
            top = self.best
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


@dataclass(frozen=True)
class Contended:
    """FULL below both sides: beside the loader the step takes ``share`` longer than alone."""

    full: float
    share: float
    step: float
    alone: float

    def words(self) -> str:
        return (
            f"FULL {self.full:.1f} is below both IO and SYNTHETIC: beside the loader the step takes {100 * self.share:.0f} % "
            f"longer than alone ({1e3 * self.step:.3f} ms against {1e3 * self.alone:.3f} ms; the workers and the step share "
            f"the cores, the GIL or the memory bandwidth)"
        )


class Help(Worded):
    """The one change most likely to help: the change, and why it helps where the change alone does not say (STAGE's
    and SWEPT's come from the advice's detail: the stage trials' fix, the setting the sweep measured;
    :meth:`Advice.change`)."""

    PINNED_COPIES = (
        "pinned-copies",
        "pin_memory=True and non_blocking copies",
        "pinned memory lets the copies to the accelerator overlap the step",
    )
    WORKERS_OR_CHEAPER = "workers-or-cheaper", "more loader workers, or cheaper batches"
    PERSISTENT = "persistent", "persistent_workers=True"
    FASTER_STEP = (
        "faster-step",
        "a faster step",
        "mixed precision, a larger batch, or compiled or fused code, since the loader has headroom",
    )
    CHEAPER_DECODING = "cheaper-decoding", "cheaper decoding and augmentation per sample", "the cores are saturated"
    LOADER_WORKERS = "loader-workers", "loader workers (num_workers > 0)", "up to the free cores"
    MORE_WORKERS_CORES = "more-workers-cores", "more loader workers (num_workers)", "up to the cores"
    STORAGE = "storage", "faster or local storage, or caching the dataset"
    MORE_WORKERS_NOW = "more-workers-now", "more loader workers (num_workers = {workers} now)"  # detail: the workers
    STAGE = "stage"  # the stage trials' fix (detail: a stages.Fix)
    PADDING = (
        "padding",
        "less padding",
        "batches of similar lengths (a length-grouped sampler), or packed sequences",
    )
    NEAR_PEAK = (
        "near-peak",
        "fewer FLOPs a sample, or more devices",
        "the step is near the peak: a smaller model or input, or the work spread over more devices",
    )
    MIXED_PRECISION = (
        "mixed-precision",
        "mixed precision (torch.autocast with bfloat16)",
        "most of the step's FLOPs run in float32, far below the accelerator's bfloat16 peak",
    )
    LARGER_BATCH = (
        "larger-batch",
        "a larger batch or compiled code (torch.compile)",
        "fused or compiled kernels and larger batches use more of the peak, which the step is far from",
    )
    SWEPT = "swept"  # (detail: the SettingResult the sweep measured, and SYNTHETIC's mean)
    CONTENTION = (
        "contention",
        "fewer loader workers or fewer intra-op threads",
        "so that the step keeps its cores (torch.set_num_threads), or the workers pinned to cores of their own "
        "(os.sched_setaffinity in worker_init_fn)",
    )


@dataclass(frozen=True)
class Advice:
    help: Help
    detail: Any = None

    def change(self) -> str:
        """The change, short: what the VERDICT line names."""
        if self.help is Help.STAGE:
            return str(self.detail.change())
        if self.help is Help.SWEPT:
            return str(self.detail[0].setting.words())
        return self.help.words.format(workers=self.detail)

    def grounds(self) -> str:
        """Why it helps ("" where the change says it all): the ADVICE line's."""
        if self.help is Help.STAGE:
            return str(self.detail.grounds())
        if self.help is Help.SWEPT:
            found, synthetic = self.detail
            return f"the loader setting the sweep measured at {(found.estimate.mean or 0.0) / synthetic:.2f}x SYNTHETIC"
        return self.help.grounds

    def words(self) -> str:
        return f"most likely to help: {with_grounds(self.change(), self.grounds())}"


Claim = Union[Busy, Mfu, Padding, DataWait, LoaderCause, StagesFound, Starved, Copies, StartupCost, Feed, Contended, Advice]
